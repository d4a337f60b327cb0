//! `GET /extras/<host>/<path>`: a runtime extra (issue #32) — a file an
//! engine fetches when it runs, such as gpt-oss's BPE encodings — at its
//! upstream's path under the host it is published on, so a node's copy is
//! laid out as the upstream's is and one base per host reaches every file.
//!
//! Invariant: answered from the index alone; the host and path are only
//! looked up in the table the held manifests built, never made into a path,
//! and the bytes are the blob the manifest names, sent like any blob.

use axum::http::{HeaderMap, Method, StatusCode};
use axum::response::Response;
use llmgw_shared::shown;

use crate::serve::http::paths;
use crate::serve::http::respond;
use crate::serve::request::Req;

/// The extra at `host` and the raw `path` segments, or a 404 saying what
/// is held instead.
pub async fn extra(r: &Req<'_>, host: &str, path: &[&str]) -> Response {
    if r.method != Method::GET && r.method != Method::HEAD {
        return respond::method_not_allowed("GET, HEAD");
    }
    let (Ok(host), Ok(path)) = (paths::decode(host), paths::decode_join(path)) else {
        return respond::text(
            StatusCode::BAD_REQUEST,
            "the extra's host or path is not UTF-8, or holds a control character\n",
        );
    };
    let key = (host.to_ascii_lowercase(), path);
    let Some((blob, _engines)) = r.index.extras.get(&key) else {
        let held = r.index.extras.keys().filter(|(h, _)| *h == key.0).count();
        return respond::text(
            StatusCode::NOT_FOUND,
            format!(
                "this mirror holds no runtime extra {}/{} ({held} held from that host); a \
                 bundle made with `bundle create --engine` of the engine that fetches it \
                 carries it (unless --no-extras)\n",
                shown(&key.0),
                shown(&key.1)
            ),
        );
    };
    r.send_by_sha256(blob, "application/octet-stream", HeaderMap::new())
        .await
}
