//! Registries as Docker Hub answers: the 401 → token → 200 flow, a
//! credential from the auth file sent only to the realm, the 429 with
//! Retry-After, and a tag that moves while the bundle is made.

use base64::Engine;
use llmgw_fixture::registry::{TestImage, TokenRegistry};

use super::common::*;

const REPO: &str = "library/app";

fn served(dir: &std::path::Path, reg: &TokenRegistry, seed: u64, tag: &str) -> TestImage {
    let img = TestImage::build(
        &dir.join(format!("layout-{seed}")),
        tag,
        seed,
        &["amd64", "arm64"],
        1,
        4096,
    )
    .unwrap();
    img.serve_from(reg, REPO);
    img
}

fn bundle(dir: &std::path::Path, reg: &TokenRegistry, name: &str) -> std::process::Output {
    create(dir)
        .args(["--arch", "amd64", "--out"])
        .arg(dir.join(name))
        .args(["--image", &format!("{}/{REPO}:v1", reg.host)])
        .args(["--insecure-registry", &reg.host])
        .output()
        .unwrap()
}

#[test]
fn the_token_dance_then_every_request_carries_the_token() {
    let reg = TokenRegistry::start().unwrap();
    let dir = tempfile::tempdir().unwrap();
    let img = served(dir.path(), &reg, 11, "v1");
    ok(&bundle(dir.path(), &reg, "b"));
    let m = manifest(&dir.path().join("b"));
    assert_eq!(format!("sha256:{}", only_image(&m).digest), img.index);
    let log = reg.requests();
    // First the manifest without a token (401), then the realm, then the
    // same manifest with it.
    assert!(
        log[0].0.starts_with("GET /v2/library/app/manifests/v1") && !log[0].1,
        "{log:?}"
    );
    assert!(
        log[1].0.starts_with("GET /token?")
            && log[1].0.contains("scope=repository%3Alibrary%2Fapp%3Apull"),
        "{log:?}"
    );
    assert!(
        !log[1].1,
        "no credential filed: an anonymous token, {log:?}"
    );
    assert!(
        log[2].0.starts_with("GET /v2/library/app/manifests/v1") && log[2].1,
        "{log:?}"
    );
    // One token for the run; every later request carries it.
    assert_eq!(
        log.iter()
            .filter(|(r, _)| r.starts_with("GET /token"))
            .count(),
        1,
        "{log:?}"
    );
    for (r, authed) in &log[2..] {
        assert!(*authed, "{r} went without the token: {log:?}");
    }
    assert!(log.iter().any(|(r, _)| r.contains("/blobs/sha256:")));
}

#[test]
fn a_filed_credential_goes_to_the_realm() {
    let reg = TokenRegistry::start().unwrap();
    reg.require_credential("alice", "s3cret");
    let dir = tempfile::tempdir().unwrap();
    served(dir.path(), &reg, 12, "v1");
    // Without it the realm refuses, and the message says what to do.
    let e = fails(&bundle(dir.path(), &reg, "none"), 1);
    assert!(e.contains("docker login") && e.contains("401"), "{e}");
    let auth = dir.path().join("auth.json");
    let b64 = base64::engine::general_purpose::STANDARD.encode("alice:s3cret");
    std::fs::write(
        &auth,
        format!(r#"{{"auths":{{"{}":{{"auth":"{b64}"}}}}}}"#, reg.host),
    )
    .unwrap();
    let o = create(dir.path())
        .env("REGISTRY_AUTH_FILE", &auth)
        .args(["--arch", "amd64", "--out"])
        .arg(dir.path().join("b"))
        .args(["--image", &format!("{}/{REPO}:v1", reg.host)])
        .args(["--insecure-registry", &reg.host])
        .output()
        .unwrap();
    let stdout = ok(&o);
    assert!(!text(&o.stderr).contains("s3cret") && !stdout.contains("s3cret"));
    let realm_asks: Vec<_> = reg
        .requests()
        .into_iter()
        .filter(|(r, _)| r.starts_with("GET /token"))
        .collect();
    assert!(
        realm_asks.last().unwrap().1,
        "the credential went to the realm"
    );
    // The credential is written nowhere in the bundle or the cache.
    let mut found = Vec::new();
    for e in walk(dir.path()) {
        if e != auth
            && std::fs::read(&e)
                .is_ok_and(|b| contains(&b, b64.as_bytes()) || contains(&b, b"s3cret"))
        {
            found.push(e);
        }
    }
    assert!(found.is_empty(), "{found:?}");
}

fn contains(hay: &[u8], needle: &[u8]) -> bool {
    hay.windows(needle.len()).any(|w| w == needle)
}

fn walk(dir: &std::path::Path) -> Vec<std::path::PathBuf> {
    let mut out = Vec::new();
    for e in std::fs::read_dir(dir).unwrap().flatten() {
        let p = e.path();
        if p.is_dir() {
            out.extend(walk(&p));
        } else {
            out.push(p);
        }
    }
    out
}

#[test]
fn a_429_is_waited_out_when_short_and_reported_when_long() {
    let reg = TokenRegistry::start().unwrap();
    let dir = tempfile::tempdir().unwrap();
    served(dir.path(), &reg, 13, "v1");
    reg.rate_limit(1, "1");
    let started = std::time::Instant::now();
    ok(&bundle(dir.path(), &reg, "short"));
    assert!(started.elapsed() >= std::time::Duration::from_secs(1));
    reg.rate_limit(100, "3600");
    let e = fails(&bundle(dir.path(), &reg, "long"), 1);
    assert!(
        e.contains("429") && e.contains("retry after 3600 seconds"),
        "{e}"
    );
    assert!(e.contains("docker login"), "{e}");
}

#[test]
fn a_tag_that_moves_while_the_bundle_is_made_is_asked_once() {
    let reg = TokenRegistry::start().unwrap();
    let dir = tempfile::tempdir().unwrap();
    let first = served(dir.path(), &reg, 14, "v1");
    let second = served(dir.path(), &reg, 15, "v2");
    reg.move_tag_after_first_ask(REPO, "v1", &second.index);
    ok(&bundle(dir.path(), &reg, "b"));
    let m = manifest(&dir.path().join("b"));
    let image = only_image(&m);
    assert_eq!(format!("sha256:{}", image.digest), first.index);
    for d in image.all_blobs() {
        assert!(
            first.blobs.contains_key(&format!("sha256:{}", d.sha256)),
            "{d:?} is not of the first image"
        );
    }
    let asks = reg
        .requests()
        .into_iter()
        .filter(|(r, authed)| *authed && r.starts_with("GET /v2/library/app/manifests/v1"))
        .count();
    assert_eq!(asks, 1, "the tag is resolved once");
}
