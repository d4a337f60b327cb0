//! Building responses: JSON with an ETag (and 304 on a match), and the
//! error shapes each protocol's clients key off.
//!
//! Invariant: this module depends on no other part of the server; the
//! cache keeps the [`CachedJson`] built here, never the other way round.

use axum::body::Body;
use axum::response::Response;
use bytes::Bytes;
use http::{HeaderMap, HeaderValue, Method, StatusCode, header};
use llmgw_shared::manifest::RepoKind;
use sha2::{Digest, Sha256};

/// A built 200 answer: its headers (ETag, Content-Type, Link, ...) and body.
#[derive(Clone)]
pub struct CachedJson {
    pub headers: HeaderMap,
    pub body: Bytes,
    pub etag: String,
    /// What of the index it was built from, which says how long it stays
    /// true: the whole index unless the route says less ([`made_from`]).
    pub source: Source,
}

/// The part of the index an answer was built from.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Source {
    /// Anything in it: the answer holds for this index only.
    Index,
    /// One Hub repository's part, by kind and `repo_key`: the answer holds
    /// for as long as that repository serves the same.
    HubRepo(RepoKind, String),
}

/// Says that the JSON answer `resp` carries was built from `source` alone
/// (a route that read nothing else of the index).
pub fn made_from(resp: &mut Response, source: Source) {
    if let Some(built) = resp.extensions_mut().get_mut::<CachedJson>() {
        built.source = source;
    }
}

/// A header value from text that may hold anything: non-ASCII and control
/// characters become `?`, so a name can never split a header.
pub fn header_text(text: &str) -> HeaderValue {
    let clean: String = text
        .chars()
        .map(|c| {
            if c.is_ascii() && !c.is_ascii_control() {
                c
            } else {
                '?'
            }
        })
        .collect();
    HeaderValue::from_str(&clean).unwrap_or_else(|_| HeaderValue::from_static("?"))
}

/// Whether `If-None-Match` names this (quoted) ETag, weak or strong, or `*`.
pub fn etag_matches(headers: &HeaderMap, etag: &str) -> bool {
    let bare = etag.trim_matches('"');
    headers
        .get_all(header::IF_NONE_MATCH)
        .iter()
        .filter_map(|v| v.to_str().ok())
        .flat_map(|v| v.split(','))
        .map(|t| t.trim())
        .any(|t| t == "*" || t.trim_start_matches("W/").trim_matches('"') == bare)
}

/// A JSON body with a content-hash ETag; 304 when the client has it.
/// HEAD gets the same headers and no body.
pub fn json(method: &Method, headers: &HeaderMap, value: &serde_json::Value) -> Response {
    json_with(method, headers, value, HeaderMap::new())
}

/// [`json`] with extra headers (a `Link`, an `X-Repo-Commit`).
pub fn json_with(
    method: &Method,
    headers: &HeaderMap,
    value: &serde_json::Value,
    extra: HeaderMap,
) -> Response {
    let (body, etag) = json_body(value);
    json_made(method, headers, body, etag, extra)
}

/// A JSON value's bytes and their content-hash ETag, as [`json_with`]
/// sends them.
pub fn json_body(value: &serde_json::Value) -> (Bytes, String) {
    // The vector grows by doubling, and shrinking it in place leaves its
    // tail as a hole between kept answers: copy it into an allocation of
    // exactly its length instead, so what the cache counts (the length) is
    // what it holds, and the grown one is freed whole for the next answer.
    let body = Bytes::copy_from_slice(&serde_json::to_vec(value).unwrap_or_default());
    let etag = format!("\"{}\"", &hex::encode(Sha256::digest(&body))[..32]);
    (body, etag)
}

/// [`json_with`] of a body made before ([`json_body`]): the same headers
/// and the same answer, kept by the entry handler as a built one is.
pub fn json_made(
    method: &Method,
    headers: &HeaderMap,
    body: Bytes,
    etag: String,
    extra: HeaderMap,
) -> Response {
    let mut h = HeaderMap::new();
    h.insert(
        header::CONTENT_TYPE,
        HeaderValue::from_static("application/json; charset=utf-8"),
    );
    h.insert(header::CONTENT_LENGTH, HeaderValue::from(body.len()));
    h.insert(header::ETAG, header_text(&etag));
    h.extend(extra);
    let built = CachedJson {
        headers: h,
        body,
        etag,
        source: Source::Index,
    };
    let mut resp = reply(method, headers, &built);
    // The entry handler keeps it for the next identical request.
    resp.extensions_mut().insert(built);
    resp
}

/// The answer for a request from a built JSON answer: 304 when the client
/// has it, headers only for HEAD.
pub fn reply(method: &Method, req: &HeaderMap, c: &CachedJson) -> Response {
    if etag_matches(req, &c.etag) {
        let mut r = empty(StatusCode::NOT_MODIFIED);
        for (k, v) in &c.headers {
            if k != header::CONTENT_LENGTH && k != header::CONTENT_TYPE {
                r.headers_mut().append(k, v.clone());
            }
        }
        return r;
    }
    let mut r = if method == Method::HEAD {
        empty(StatusCode::OK)
    } else {
        Response::new(Body::from(c.body.clone()))
    };
    *r.headers_mut() = c.headers.clone();
    r
}

/// A response with no body.
pub fn empty(status: StatusCode) -> Response {
    let mut r = Response::new(Body::empty());
    *r.status_mut() = status;
    r
}

/// Plain text, for routes no protocol shapes (health, refusals).
pub fn text(status: StatusCode, body: impl Into<String>) -> Response {
    let mut r = Response::new(Body::from(body.into()));
    *r.status_mut() = status;
    r.headers_mut().insert(
        header::CONTENT_TYPE,
        HeaderValue::from_static("text/plain; charset=utf-8"),
    );
    r
}

/// The Hub's error contract: `X-Error-Code` (RepoNotFound,
/// RevisionNotFound, EntryNotFound), `X-Error-Message`, and the commit on
/// an EntryNotFound so clients cache the miss.
pub fn hub_error(
    status: StatusCode,
    code: Option<&'static str>,
    message: &str,
    commit: Option<&str>,
) -> Response {
    let body = serde_json::to_vec(&serde_json::json!({ "error": message })).unwrap_or_default();
    let mut r = Response::new(Body::from(body));
    *r.status_mut() = status;
    let h = r.headers_mut();
    h.insert(
        header::CONTENT_TYPE,
        HeaderValue::from_static("application/json; charset=utf-8"),
    );
    if let Some(code) = code {
        h.insert("x-error-code", HeaderValue::from_static(code));
    }
    h.insert("x-error-message", header_text(message));
    if let Some(c) = commit {
        h.insert("x-repo-commit", header_text(c));
    }
    r
}

/// The header every answer of a registry carries (the distribution
/// registry's; Docker's clients look for it on `/v2/`).
pub const REGISTRY_API_VERSION: (&str, &str) = ("docker-distribution-api-version", "registry/2.0");

/// The OCI distribution spec's error body, `{"errors":[{"code","message"}]}`;
/// a 405 also says which methods are served.
pub fn oci_error(status: StatusCode, code: &'static str, message: &str) -> Response {
    let body = serde_json::to_vec(&serde_json::json!({
        "errors": [{"code": code, "message": message, "detail": null}]
    }))
    .unwrap_or_default();
    let mut r = Response::new(Body::from(body));
    *r.status_mut() = status;
    let h = r.headers_mut();
    h.insert(
        header::CONTENT_TYPE,
        HeaderValue::from_static("application/json"),
    );
    h.insert(
        REGISTRY_API_VERSION.0,
        HeaderValue::from_static(REGISTRY_API_VERSION.1),
    );
    if status == StatusCode::METHOD_NOT_ALLOWED {
        h.insert(header::ALLOW, HeaderValue::from_static("GET, HEAD"));
    }
    r
}

/// GitHub's 404 body.
pub fn github_not_found() -> Response {
    let body = serde_json::to_vec(&serde_json::json!({
        "message": "Not Found",
        "documentation_url": "https://docs.github.com/rest",
        "status": "404"
    }))
    .unwrap_or_default();
    let mut r = Response::new(Body::from(body));
    *r.status_mut() = StatusCode::NOT_FOUND;
    r.headers_mut().insert(
        header::CONTENT_TYPE,
        HeaderValue::from_static("application/json; charset=utf-8"),
    );
    r
}

/// 405 with the methods a route takes.
pub fn method_not_allowed(allow: &'static str) -> Response {
    let mut r = text(StatusCode::METHOD_NOT_ALLOWED, "method not allowed\n");
    r.headers_mut()
        .insert(header::ALLOW, HeaderValue::from_static(allow));
    r
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn if_none_match_forms() {
        let mut h = HeaderMap::new();
        h.insert(header::IF_NONE_MATCH, "W/\"abc\", \"def\"".parse().unwrap());
        assert!(etag_matches(&h, "\"abc\""));
        assert!(etag_matches(&h, "\"def\""));
        assert!(!etag_matches(&h, "\"ab\""));
        h.insert(header::IF_NONE_MATCH, "*".parse().unwrap());
        assert!(etag_matches(&h, "\"x\""));
    }

    #[test]
    fn header_text_never_splits() {
        assert_eq!(header_text("a\r\nb\u{e9}"), "a??b?");
    }
}
