//! Hostile upstreams against this HTTP client, with the limits
//! lowered so each attack ends in well under a second: a body that drips,
//! a server that never answers, a compressed body, a listing whose
//! `Link: rel="next"` loops or never ends. Each must fail with a message
//! naming the URL and saying what the server did.

use std::time::Duration;

use crate::http::{Http, HttpError, RetryPolicy, redact};
use crate::limits::HttpLimits;
use crate::plan::Plan;
use crate::sources::hub;
use crate::spec::RepoSpec;
use llmgw_fixture::{Fixture, FixtureOptions, HubKind, TINY_COMMIT};
use llmgw_shared::chain;
use llmgw_shared::manifest::RepoKind;

fn limits() -> HttpLimits {
    HttpLimits {
        connect_timeout: Duration::from_secs(5),
        deadline: Duration::from_secs(3),
        window: Duration::from_millis(500),
        min_bytes: 1024,
        max_pages: 20,
    }
}

fn http(fx: &Fixture) -> Http {
    let once = RetryPolicy {
        attempts: 1,
        ..RetryPolicy::default()
    };
    Http::with_limits(&fx.hf_endpoint(), None, once, limits()).unwrap()
}

async fn fixture() -> Fixture {
    Fixture::start(FixtureOptions::default()).await.unwrap()
}

fn tiny() -> RepoSpec {
    RepoSpec {
        kind: RepoKind::Model,
        id: "acme/tiny".into(),
        revision: "main".into(),
        patterns: vec![],
        variants: Vec::new(),
        nodes: Vec::new(),
    }
}

const REVISION: &str = "/api/models/acme/tiny/revision/main";

#[tokio::test]
async fn a_dripping_document_fails_naming_the_url() {
    let fx = fixture().await;
    fx.faults().drip(REVISION, 200);
    let url = format!("{}{REVISION}", fx.hf_endpoint());
    let t = std::time::Instant::now();
    let err = http(&fx)
        .get_small(&url, Some("application/json"), 1 << 20)
        .await
        .unwrap_err();
    // As the binary prints it: the message, then each cause.
    let err = chain(&err);
    assert!(err.contains(&url), "{err}");
    assert!(err.contains("the body stalled"), "{err}");
    assert!(
        err.contains("below the minimum of 1024 bytes every 0.5 s"),
        "{err}"
    );
    assert!(t.elapsed() < Duration::from_secs(3), "{:?}", t.elapsed());
}

#[tokio::test]
async fn a_dripping_download_fails_naming_the_url() {
    let fx = fixture().await;
    let path = Fixture::hub_resolve_path(
        HubKind::Model,
        "acme/tiny",
        TINY_COMMIT,
        "model.safetensors",
    );
    fx.faults().drip(&path, 200);
    let url = format!("{}{path}", fx.hf_endpoint());
    let h = http(&fx);
    // As fetch reads a download: the head, then chunk by chunk.
    let (mut resp, final_url) = h.get(&url, None, None).await.unwrap();
    assert_eq!(resp.status(), 200);
    let err = loop {
        match resp.chunk().await {
            Ok(Some(_)) => continue,
            Ok(None) => panic!("a dripping body ended"),
            Err(e) => break HttpError::transport(&final_url, e),
        }
    };
    assert!(err.is_retryable());
    // Named by the URL the bytes came from (the Hub redirects to storage).
    let msg = chain(&err);
    let shown = redact(&final_url);
    assert!(
        msg.starts_with(&shown) && msg.contains("the body stalled"),
        "{msg}"
    );
}

#[tokio::test]
async fn an_answer_that_never_comes_meets_the_deadline() {
    let fx = fixture().await;
    fx.faults().delay(REVISION, 60_000);
    let url = format!("{}{REVISION}", fx.hf_endpoint());
    let t = std::time::Instant::now();
    let err = http(&fx)
        .get_small(&url, None, 1 << 20)
        .await
        .unwrap_err()
        .to_string();
    assert!(err.contains(&url) && err.contains("within 3 s"), "{err}");
    assert!(t.elapsed() < Duration::from_secs(10));
}

#[tokio::test]
async fn a_compressed_body_is_refused_saying_the_server_compressed_it() {
    let fx = fixture().await;
    fx.faults().gzip(REVISION);
    let url = format!("{}{REVISION}", fx.hf_endpoint());
    let err = http(&fx).get_small(&url, None, 1 << 20).await.unwrap_err();
    assert!(!err.is_retryable());
    let msg = err.to_string();
    assert!(msg.contains(&url), "{msg}");
    assert!(
        msg.contains("the server compressed the body (Content-Encoding: gzip)"),
        "{msg}"
    );
}

fn tree_path() -> String {
    format!("/api/models/acme/tiny/tree/{TINY_COMMIT}")
}

/// Plans the tiny model against `fx`, which must fail; its message.
async fn plan_tiny_fails(fx: &Fixture) -> String {
    let (h, endpoint, spec) = (http(fx), fx.hf_endpoint(), tiny());
    let mut plan = Plan::default();
    let hub = hub::HubClient {
        http: &h,
        endpoint: &endpoint,
        have_token: false,
    };
    let planned = hub::plan(&hub, &spec, false, &mut plan).await;
    planned.unwrap_err().to_string()
}

/// How many times the tree listing was asked for.
fn tree_asks(fx: &Fixture) -> usize {
    let requests = fx.requests();
    requests
        .iter()
        .filter(|r| r.path_only() == tree_path())
        .count()
}

#[tokio::test]
async fn a_listing_whose_next_page_is_itself_is_refused() {
    let fx = fixture().await;
    let first = format!(
        "{}{}?recursive=true&expand=false",
        fx.hf_endpoint(),
        tree_path()
    );
    fx.faults().link_next(tree_path(), first.clone());
    let err = plan_tiny_fails(&fx).await;
    assert!(err.contains("the tree listing loops"), "{err}");
    assert!(err.contains(&first), "{err}");
    // Asked once, not 10 000 times.
    assert_eq!(tree_asks(&fx), 1);
}

#[tokio::test]
async fn a_listing_that_never_ends_stops_at_the_page_cap() {
    let fx = fixture().await;
    let next = format!(
        "{}{}?recursive=true&expand=false&cursor={{n}}",
        fx.hf_endpoint(),
        tree_path()
    );
    fx.faults().link_next(tree_path(), next);
    let err = plan_tiny_fails(&fx).await;
    assert!(err.contains("more than 20 pages"), "{err}");
    assert_eq!(tree_asks(&fx), 20);
}

/// Not an attack, but the same client: what the Hub's refs API says the
/// revision is goes into the manifest.
#[tokio::test]
async fn the_hubs_refs_say_whether_a_revision_is_a_branch_a_tag_or_a_commit() {
    use llmgw_shared::manifest::RefKind;
    let fx = fixture().await;
    let h = http(&fx);
    for (rev, kind) in [
        ("main", RefKind::Branch),
        ("v1", RefKind::Tag),
        (TINY_COMMIT, RefKind::Commit),
    ] {
        let spec = RepoSpec {
            revision: rev.into(),
            ..tiny()
        };
        let mut plan = Plan::default();
        let endpoint = fx.hf_endpoint();
        let hub = hub::HubClient {
            http: &h,
            endpoint: &endpoint,
            have_token: false,
        };
        hub::plan(&hub, &spec, false, &mut plan).await.unwrap();
        assert_eq!(plan.repos[0].ref_kind, Some(kind), "{rev}");
    }
}
