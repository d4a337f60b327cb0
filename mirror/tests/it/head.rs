//! HEAD answers exactly GET's headers on every route (#28 item 7): a
//! property over the route table, through a real server on 127.0.0.1 (the
//! HTTP layer, not only the router, decides what a HEAD carries), for
//! every route label GET answers, found and not found, each protocol's
//! content negotiation and a range.

use crate::common::*;
use crate::pypi_kit::*;

/// Every header but `date` (the second it was sent), as sent.
fn comparable(r: &Reply) -> Vec<(String, String)> {
    let mut h: Vec<(String, String)> = r
        .headers
        .iter()
        .filter(|(k, _)| !k.eq_ignore_ascii_case("date"))
        .map(|(k, v)| (k.to_ascii_lowercase(), v.clone()))
        .collect();
    h.sort();
    h
}

#[test]
fn head_answers_exactly_the_headers_of_get_on_every_route() {
    let (_d, store, _) = store_with_main_bundle();
    let cu13 = synthetic("x86_64", "2.11.0", 60);
    hold(&store, &[(CU13, "amd64", &cu13)]);
    hold_site_uv_lock(&store, "site-amd64", &synthetic("x86_64", "2.11.0", 61));
    let s = serve(&store);
    let asset_id = get(
        s.addr,
        "/api/v3/repos/ggml-org/llama.cpp/releases/tags/b6123",
    )
    .json()["assets"][0]["id"]
        .as_u64()
        .unwrap();
    let wheel = &cu13[0].file.filename;
    let json = ("Accept", "application/vnd.pypi.simple.v1+json");
    let html = ("Accept", "text/html");
    let range = ("Range", "bytes=1-10");
    let gguf = "/acme/tiny/resolve/main/tiny-Q4_K_M.gguf";
    let table: Vec<(String, Vec<(&str, &str)>)> = [
        ("/healthz", vec![]),
        ("/readyz", vec![]),
        ("/v1/index", vec![]),
        ("/api/agent-harnesses/x", vec![]),
        ("/nothing/here", vec![]),
        ("/api/models/acme/tiny", vec![]),
        ("/api/models/acme/none", vec![]),
        ("/api/models/acme/tiny/revision/main", vec![]),
        ("/api/models/acme/tiny/revision/nope", vec![]),
        ("/api/models/acme/tiny/tree/main", vec![]),
        ("/api/models/acme/tiny/refs", vec![]),
        ("/api/datasets/acme/data/revision/v1.0", vec![]),
        ("/v2/acme/tiny/manifests/latest", vec![]),
        ("/v2/acme/tiny/manifests/Q2_K", vec![]),
        ("/acme/tiny/resolve/main/config.json", vec![]),
        ("/acme/tiny/resolve/main/missing.bin", vec![]),
        (gguf, vec![]),
        (gguf, vec![range]),
        (
            "/datasets/acme/data/resolve/v1.0/data/train.parquet",
            vec![],
        ),
        ("/api/v3/repos/ggml-org/llama.cpp/releases", vec![]),
        ("/repos/ggml-org/llama.cpp/releases/latest", vec![]),
        (
            "/api/v3/repos/ggml-org/llama.cpp/releases/tags/b6123",
            vec![],
        ),
        ("/api/v3/repos/ggml-org/llama.cpp/releases/tags/b1", vec![]),
        (
            "/ggml-org/llama.cpp/releases/download/b6123/llama-b6123-bin-ubuntu-arm64.zip",
            vec![],
        ),
        (
            "/ggml-org/llama.cpp/releases/latest/download/llama-b6123-bin-ubuntu-arm64.zip",
            vec![range],
        ),
        (
            "/ggml-org/llama.cpp/releases/download/b6123/none.zip",
            vec![],
        ),
        ("/uv/python-downloads.json", vec![]),
        ("/pypi/demo-0.1.0-cu13-amd64/simple/", vec![json]),
        ("/pypi/demo-0.1.0-cu13-amd64/simple/", vec![html]),
        ("/pypi/demo-0.1.0-cu13-amd64/simple/torch/", vec![json]),
        ("/pypi/demo-0.1.0-cu13-amd64/simple/torch/", vec![html]),
        ("/pypi/demo-0.1.0-cu13-amd64/simple", vec![]),
        ("/pypi/demo-0.1.0-cu13-amd64/simple/none/", vec![json]),
        ("/pypi/demo-0.1.0-cu13-amd64/pylock.toml", vec![]),
        ("/pypi/nope/pylock.toml", vec![]),
        ("/pypi/site-amd64/uv.lock", vec![]),
        ("/pypi/site-amd64/pyproject.toml", vec![]),
        ("/pypi/site-amd64/pylock.toml", vec![]),
        ("/pypi/demo-0.1.0-cu13-amd64/uv.lock", vec![]),
        ("/pypi/demo-0.1.0-cu13-amd64/pyproject.toml", vec![]),
        ("/-/misses", vec![]),
        ("/-/env", vec![]),
        ("/-/bundles/0000000000000000000000000000000000000000000000000000000000000000/sbom.cdx.json", vec![]),
        ("/extras/openaipublic.blob.core.windows.net/encodings/none.tiktoken", vec![]),
        ("/", vec![]),
        ("/-/models/acme/tiny", vec![]),
        ("/-/pypi/demo-0.1.0-cu13-amd64", vec![]),
        ("/-/nothing", vec![]),
    ]
    .into_iter()
    .map(|(p, h)| (p.to_string(), h))
    .chain([
        (
            format!("/api/v3/repos/ggml-org/llama.cpp/releases/assets/{asset_id}"),
            vec![],
        ),
        (format!("/pypi/{CU13}/files/{wheel}"), vec![]),
        (format!("/pypi/{CU13}/files/{wheel}.metadata"), vec![]),
        (format!("/pypi/{CU13}/files/{wheel}"), vec![range]),
    ])
    .collect();
    let mut differ = Vec::new();
    for (path, headers) in &table {
        let g = raw(s.addr, "GET", path.as_bytes(), headers);
        let h = raw(s.addr, "HEAD", path.as_bytes(), headers);
        assert!(h.body.is_empty(), "HEAD {path} sent a body");
        if (g.status, comparable(&g)) != (h.status, comparable(&h)) {
            differ.push(format!(
                "{path} {headers:?}:\n  GET  {} {:?}\n  HEAD {} {:?}",
                g.status,
                comparable(&g),
                h.status,
                comparable(&h)
            ));
        }
        // Content-Length, when GET sends one, is the length of GET's body.
        if let Some(n) = g.header("content-length") {
            assert_eq!(n.parse::<usize>().unwrap(), g.body.len(), "GET {path}");
        }
    }
    assert!(
        differ.is_empty(),
        "HEAD differs from GET:\n{}",
        differ.join("\n")
    );
    // /metrics counts the requests themselves, so its length moves between
    // two requests; everything else of it must agree.
    let g = raw(s.addr, "GET", b"/metrics", &[]);
    let h = raw(s.addr, "HEAD", b"/metrics", &[]);
    let drop_len = |r: &Reply| {
        let mut c = comparable(r);
        c.retain(|(k, _)| k != "content-length");
        c
    };
    assert_eq!((g.status, drop_len(&g)), (h.status, drop_len(&h)));
    assert!(h.header("content-length").is_some_and(|n| n != "0"));
}
