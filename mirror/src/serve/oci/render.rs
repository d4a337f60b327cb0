//! Turning an [`Outcome`] into a response: the one place the registry's
//! statuses and headers are written.
//!
//! Invariant: every answer under `/v2/` carries
//! `Docker-Distribution-API-Version: registry/2.0`; a manifest or blob is
//! sent from its stored bytes through [`serve_blob`] (Range, HEAD with a
//! true `Content-Length`, ETag) with `Docker-Content-Digest`; the JSON
//! answers depend on the query (`n`, `last`, `ns`, `artifactType`), which
//! the JSON cache does not key on, so none of them is kept there.

use axum::response::{IntoResponse, Response};
use http::{HeaderMap, HeaderName, HeaderValue, StatusCode, header};
use llmgw_shared::url::encode_segment;
use serde_json::{Map, Value, json};

use super::decide::Outcome;
use super::made_doc;
use crate::serve::http::concat::{Part, PartsReply, serve_parts};
use crate::serve::http::files::{BlobReply, serve_blob};
use crate::serve::http::paths::query_get;
use crate::serve::http::respond::{self, CachedJson, REGISTRY_API_VERSION, header_text};
use crate::serve::index::Blob;
use crate::serve::index::oci::made::Made;
use crate::serve::index::oci::models::tar;
use crate::serve::index::oci::{OciRepo, Referrer};
use crate::serve::request::Req;
use llmgw_shared::Sha256;

/// The media type of an OCI index (what the referrers API answers with).
pub const OCI_INDEX: &str = "application/vnd.oci.image.index.v1+json";

/// The response for an outcome; `path` is the request's path (for `Link`).
pub async fn respond(req: &Req<'_>, outcome: Outcome<'_>, path: &str) -> Response {
    let mut r = match outcome {
        Outcome::Base => json(req, &json!({}), HeaderMap::new()),
        Outcome::Catalog { names, next } => json(
            req,
            &json!({ "repositories": names }),
            link(req, path, next.as_deref()),
        ),
        Outcome::Tags { name, tags, next } => json(
            req,
            &json!({ "name": name, "tags": tags }),
            link(req, path, next.as_deref()),
        ),
        Outcome::Manifest(m) => stored(req, &m.blob, &m.media_type).await,
        Outcome::Blob(b) => stored(req, &b, "application/octet-stream").await,
        Outcome::Made {
            repo, made, digest, ..
        } => made_bytes(req, repo, made, digest).await,
        Outcome::Referrers { list, filtered } => {
            let manifests: Vec<Value> = list.into_iter().map(referrer_json).collect();
            let v = json!({"schemaVersion": 2, "mediaType": OCI_INDEX, "manifests": manifests});
            let mut extra = HeaderMap::new();
            extra.insert(header::CONTENT_TYPE, HeaderValue::from_static(OCI_INDEX));
            if filtered {
                extra.insert(
                    HeaderName::from_static("oci-filters-applied"),
                    HeaderValue::from_static("artifactType"),
                );
            }
            json(req, &v, extra)
        }
        Outcome::Refused(e) => e.into_response(),
        Outcome::NoRoute => respond::text(StatusCode::NOT_FOUND, "not found\n"),
    };
    r.headers_mut().insert(
        REGISTRY_API_VERSION.0,
        HeaderValue::from_static(REGISTRY_API_VERSION.1),
    );
    r
}

/// A JSON answer, not kept in the JSON cache (see the module's invariant).
fn json(req: &Req<'_>, v: &Value, extra: HeaderMap) -> Response {
    let mut r = respond::json_with(req.method, req.headers, v, extra);
    r.extensions_mut().remove::<CachedJson>();
    r
}

/// `Link: </v2/…?n=N&last=L>; rel="next"` when another page follows,
/// keeping the `ns` the request named its registry with.
fn link(req: &Req<'_>, path: &str, next: Option<&str>) -> HeaderMap {
    let mut h = HeaderMap::new();
    if let Some(q) = next {
        let ns = query_get(&req.query, "ns")
            .map(|ns| format!("&ns={}", encode_segment(ns)))
            .unwrap_or_default();
        h.insert(
            header::LINK,
            header_text(&format!("<{path}?{q}{ns}>; rel=\"next\"")),
        );
    }
    h
}

/// A manifest or blob from its stored bytes.
async fn stored(req: &Req<'_>, blob: &Blob, content_type: &str) -> Response {
    let digest = format!("sha256:{}", blob.sha256);
    let mut extra = HeaderMap::new();
    extra.insert("docker-content-digest", header_text(&digest));
    serve_blob(
        &req.state.store,
        &req.index,
        req.method,
        req.headers,
        BlobReply {
            blob,
            etag: format!("\"{digest}\""),
            content_type,
            extra,
        },
    )
    .await
}

/// A made manifest, config or tar layer: a document made again (or kept
/// in the answer cache), or a tar's headers, the stored file and the
/// padding.
async fn made_bytes(req: &Req<'_>, repo: &OciRepo, made: &Made, sha: &Sha256) -> Response {
    let digest = format!("sha256:{sha}");
    let mut extra = HeaderMap::new();
    extra.insert("docker-content-digest", header_text(&digest));
    let parts = match made {
        Made::Doc(doc) => match made_doc::bytes(req, repo, doc, sha).await {
            Ok(bytes) => vec![Part::Memory(bytes)],
            Err(refused) => return refused,
        },
        Made::Tar(t) => vec![
            Part::Memory(tar::head(&t.path, t.file.size).into()),
            Part::Blob(t.file.clone()),
            Part::Memory(bytes::Bytes::from(vec![0u8; t.tail as usize])),
        ],
    };
    serve_parts(
        &req.state.store,
        &req.index,
        req.method,
        req.headers,
        PartsReply {
            parts,
            etag: format!("\"{digest}\""),
            content_type: made.media_type(),
            extra,
        },
    )
    .await
}

/// A referrer as the referrers index lists it.
fn referrer_json(r: &Referrer) -> Value {
    let mut v = Map::new();
    v.insert("mediaType".into(), r.media_type.clone().into());
    v.insert("size".into(), r.blob.size.into());
    v.insert("digest".into(), format!("sha256:{}", r.blob.sha256).into());
    if let Some(t) = &r.artifact_type {
        v.insert("artifactType".into(), t.clone().into());
    }
    if !r.annotations.is_empty() {
        v.insert("annotations".into(), json!(r.annotations));
    }
    Value::Object(v)
}
