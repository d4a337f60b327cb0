//! The router in-process, through tower's `oneshot`: what each route
//! answers and under which label, with no socket and no server.

use std::sync::Arc;
use std::time::{Duration, Instant};

use axum::Router;
use axum::body::Body;
use http::{Method, Request, StatusCode};
use llmgw_mirror::Store;
use llmgw_mirror::{AppState, Readiness, router};
use tower::ServiceExt;

use crate::common::*;

/// A router over `store`, once the store was read and the models' layers
/// it left out hashed: meanwhile `/readyz` is 503 (the store's model was
/// put there by hand, so no import recorded its layer digests), and a test
/// asking it at once raced the hashing thread. Ready twice, more than a
/// refresh tick (100 ms) apart: the refresh thread starts the hashing
/// right after it publishes the index, within the tick.
fn app(store: &std::path::Path) -> (Router, Arc<AppState>) {
    let state = AppState::new(Store::at(store), None, None, false);
    let start = Instant::now();
    let mut ready_checks = 0;
    while ready_checks < 2 {
        assert!(start.elapsed() < Duration::from_secs(10), "never ready");
        if matches!(state.readiness(), Readiness::Ready { .. }) {
            ready_checks += 1;
            std::thread::sleep(Duration::from_millis(150));
        } else {
            ready_checks = 0;
            std::thread::sleep(Duration::from_millis(10));
        }
    }
    (router(state.clone()), state)
}

/// One request through the router: status, headers and the whole body
/// (read, so the request is counted before this returns).
fn send(
    app: &Router,
    method: Method,
    uri: &str,
    headers: &[(&str, &str)],
) -> (StatusCode, http::HeaderMap, Vec<u8>) {
    let mut req = Request::builder().method(method).uri(uri);
    for (k, v) in headers {
        req = req.header(*k, *v);
    }
    let req = req.body(Body::empty()).unwrap();
    let rt = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .unwrap();
    rt.block_on(async {
        let resp = app.clone().oneshot(req).await.unwrap();
        let (parts, body) = resp.into_parts();
        let bytes = axum::body::to_bytes(body, usize::MAX).await.unwrap();
        (parts.status, parts.headers, bytes.to_vec())
    })
}

/// A header's value as text ("" when absent).
fn hdr<'h>(h: &'h http::HeaderMap, name: &str) -> &'h str {
    h.get(name).and_then(|v| v.to_str().ok()).unwrap_or("")
}

fn get_(app: &Router, uri: &str) -> (StatusCode, http::HeaderMap, Vec<u8>) {
    send(app, Method::GET, uri, &[])
}

/// The request counter of one route and status, from `/metrics`.
fn count(app: &Router, route: &str, status: u16) -> u64 {
    let (_, _, body) = get_(app, "/metrics");
    let text = String::from_utf8(body).unwrap();
    let prefix =
        format!("llmgw_mirror_http_requests_total{{route=\"{route}\",status=\"{status}\"}} ");
    text.lines()
        .find_map(|l| l.strip_prefix(&prefix))
        .map_or(0, |n| n.parse().unwrap())
}

#[test]
fn each_route_is_counted_under_its_label_cached_or_not() {
    let (_d, store, _) = store_with_main_bundle();
    let (app, _state) = app(&store);
    for (uri, route, status) in [
        ("/healthz", "healthz", 200),
        ("/readyz", "readyz", 200),
        ("/v1/index", "index", 200),
        ("/api/models/acme/tiny", "hub_info", 200),
        ("/api/models/acme/tiny/revision/main", "hub_revision", 200),
        ("/api/models/acme/tiny/tree/main", "hub_tree", 200),
        ("/api/models/acme/tiny/refs", "hub_refs", 200),
        ("/v2/acme/tiny/manifests/latest", "hub_manifests", 200),
        ("/acme/tiny/resolve/main/config.json", "hub_resolve", 200),
        (
            "/api/v3/repos/ggml-org/llama.cpp/releases",
            "github_releases",
            200,
        ),
        (
            "/repos/ggml-org/llama.cpp/releases/latest",
            "github_latest",
            200,
        ),
        (
            "/api/v3/repos/ggml-org/llama.cpp/releases/tags/b6123",
            "github_release",
            200,
        ),
        (
            "/ggml-org/llama.cpp/releases/download/b6123/llama-b6123-bin-ubuntu-arm64.zip",
            "github_download",
            200,
        ),
        ("/uv/python-downloads.json", "uv_python_downloads", 200),
        ("/extras/example.org/not/held.bin", "extras", 404),
        ("/api/agent-harnesses/x", "agent_harnesses", 404),
        ("/nothing/here", "not_found", 404),
        ("/api/models/acme/tiny/nonsense", "not_found", 404),
    ] {
        let before = count(&app, route, status);
        // Twice: the second JSON answer comes from the cache and must be
        // counted under the route that built it.
        for _ in 0..2 {
            let (got, _, body) = get_(&app, uri);
            assert_eq!(
                got.as_u16(),
                status,
                "{uri}: {}",
                String::from_utf8_lossy(&body)
            );
        }
        assert_eq!(count(&app, route, status), before + 2, "{uri} as {route}");
    }
}

#[test]
fn refusals_are_answered_in_each_protocols_shape() {
    let (_d, store, _) = store_with_main_bundle();
    let (app, _state) = app(&store);

    // The Hub's misses carry the error code its clients key off.
    let (s, h, _) = get_(&app, "/api/models/acme/none");
    assert_eq!((s.as_u16(), hdr(&h, "x-error-code")), (404, "RepoNotFound"));
    let (s, h, _) = get_(&app, "/api/models/acme/tiny/revision/nope");
    assert_eq!(
        (s.as_u16(), hdr(&h, "x-error-code")),
        (404, "RevisionNotFound")
    );
    let (s, h, _) = get_(&app, "/acme/tiny/resolve/main/missing.bin");
    assert_eq!(
        (s.as_u16(), hdr(&h, "x-error-code")),
        (404, "EntryNotFound")
    );
    assert_eq!(h.get("x-repo-commit").unwrap(), COMMIT);
    let (s, h, _) = get_(&app, "/v2/acme/tiny/manifests/Q2_K");
    assert_eq!(
        (s.as_u16(), hdr(&h, "x-error-code")),
        (404, "EntryNotFound")
    );

    // A name no repository could have: 400, plain text, saying why.
    let (s, h, body) = get_(&app, "/acme/tiny/resolve/main/a%5Cb");
    assert_eq!(s, StatusCode::BAD_REQUEST);
    assert!(
        h.get("content-type")
            .unwrap()
            .to_str()
            .unwrap()
            .starts_with("text/plain")
    );
    assert!(
        String::from_utf8_lossy(&body).contains("backslash"),
        "{body:?}"
    );
    let (s, _, body) = get_(&app, "/v2/acme/tiny/manifests/a%20b");
    assert_eq!(s, StatusCode::BAD_REQUEST);
    assert_eq!(
        String::from_utf8_lossy(&body),
        "quant tag \"a b\" is not a tag\n"
    );

    // Another method: 405 with what the route takes.
    let (s, h, _) = send(&app, Method::POST, "/api/models/acme/tiny", &[]);
    assert_eq!((s.as_u16(), hdr(&h, "allow")), (405, "GET, HEAD"));
    let (s, h, _) = send(
        &app,
        Method::GET,
        "/api/models/acme/tiny/paths-info/main",
        &[],
    );
    assert_eq!((s.as_u16(), hdr(&h, "allow")), (405, "POST"));
    let (s, h, _) = send(
        &app,
        Method::DELETE,
        "/ggml-org/llama.cpp/releases/download/b6123/x.zip",
        &[],
    );
    assert_eq!((s.as_u16(), hdr(&h, "allow")), (405, "GET, HEAD"));

    // GitHub: its JSON 404 on the API, a plain one for a download.
    let (s, _, body) = get_(&app, "/api/v3/repos/ggml-org/llama.cpp/releases/tags/b1");
    assert_eq!(s, StatusCode::NOT_FOUND);
    let v: serde_json::Value = serde_json::from_slice(&body).unwrap();
    assert_eq!(v["message"], "Not Found");
    let (s, _, body) = get_(&app, "/ggml-org/llama.cpp/releases/download/b6123/none.zip");
    assert_eq!(
        (s, body.as_slice()),
        (StatusCode::NOT_FOUND, &b"Not Found\n"[..])
    );
}

/// `If-Range` is compared strongly (RFC 9110 §13.1.5): only the blob's own
/// strong ETag lets the range through; a weak tag (even the same one), a
/// bare tag or a date gets the whole blob with 200.
#[test]
fn if_range_needs_the_strong_etag() {
    let (_d, store, _) = store_with_main_bundle();
    let (app, _state) = app(&store);
    let gguf = &model_files()["tiny-Q8_0.gguf"].0;
    let etag = format!("\"{}\"", llmgw_shared::sha256_hex(gguf));
    let uri = "/acme/tiny/resolve/main/tiny-Q8_0.gguf";

    let (s, h, body) = send(
        &app,
        Method::GET,
        uri,
        &[("Range", "bytes=10-19"), ("If-Range", &etag)],
    );
    assert_eq!(s, StatusCode::PARTIAL_CONTENT);
    assert_eq!(
        h.get("content-range").unwrap(),
        &format!("bytes 10-19/{}", gguf.len())
    );
    assert_eq!(body, gguf[10..20]);

    let weak = format!("W/{etag}");
    let bare = etag.trim_matches('"').to_string();
    for if_range in [
        weak.as_str(),
        bare.as_str(),
        "\"other\"",
        "Sat, 05 Dec 2026 04:00:00 GMT",
    ] {
        let (s, h, body) = send(
            &app,
            Method::GET,
            uri,
            &[("Range", "bytes=10-19"), ("If-Range", if_range)],
        );
        assert_eq!(s, StatusCode::OK, "If-Range: {if_range}");
        assert!(h.get("content-range").is_none(), "If-Range: {if_range}");
        assert_eq!(body.len(), gguf.len(), "If-Range: {if_range}");
    }
    // Without a Range, If-Range changes nothing.
    let (s, _, body) = send(&app, Method::GET, uri, &[("If-Range", &weak)]);
    assert_eq!((s, body.len()), (StatusCode::OK, gguf.len()));
}
