//! A partial file an earlier run left with wrong bytes (fetched from
//! another base URL, or by a run stopped by another file's failure) is not
//! the file's fault: when the whole fails its check after carrying on from
//! it, the file is fetched whole again, once.

use llmgw_fixture::{Fixture, FixtureOptions, HubKind, TINY_COMMIT};
use llmgw_shared::Sha256;

use super::{Download, fetch_one};
use crate::cache::{Cache, Expect};
use crate::http::{Http, RetryPolicy};
use crate::progress::Events;

#[tokio::test]
async fn a_resumed_partial_with_wrong_bytes_is_fetched_whole_again() {
    let fx = Fixture::start(FixtureOptions::default()).await.unwrap();
    let http = Http::new(&fx.hf_endpoint(), None, RetryPolicy::default()).unwrap();
    let path = Fixture::hub_resolve_path(
        HubKind::Model,
        "acme/tiny",
        TINY_COMMIT,
        "model.safetensors",
    );
    let url = format!("{}{path}", fx.hf_endpoint());
    let (body, _) = http.get_small(&url, None, 1 << 20).await.unwrap();
    let d = Download {
        label: "acme/tiny model.safetensors".into(),
        url,
        size: body.len() as u64,
        expect: Expect::Sha256(Sha256::of(&body)),
        denied_hint: None,
    };
    let dir = tempfile::tempdir().unwrap();
    let cache = Cache::open(&dir.path().join("cache")).unwrap();
    let mut wrong = body[..100_000].to_vec();
    wrong[0] ^= 1;
    std::fs::write(cache.partial_path(&d.expect), &wrong).unwrap();
    fx.clear_requests();

    let progress: Events = std::sync::Arc::new(llmgw_shared::progress::Quiet);
    let got = fetch_one(&http, &cache, &d, &progress).await.unwrap();
    assert_eq!(got.sha256, Sha256::of(&body));
    assert_eq!(std::fs::read(&got.path).unwrap(), body);
    // Carried on from byte 100000, refused, then asked for whole.
    let ranges: Vec<String> = fx
        .requests()
        .iter()
        .filter(|r| r.method == "GET" && r.listener == "storage")
        .map(|r| r.header("range").unwrap_or("").to_string())
        .collect();
    assert_eq!(ranges, ["bytes=100000-", ""]);
}
