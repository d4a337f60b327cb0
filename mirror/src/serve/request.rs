//! What a route is handed: the request's method, headers and query, the
//! index current when it arrived, and the server's settings.
//!
//! Invariant: a route answers from `index` alone, the one snapshot loaded
//! for this request, so an index swapped in meanwhile never mixes into an
//! answer.

use std::sync::Arc;

use axum::response::Response;
use http::{HeaderMap, HeaderName, Method, header};

use super::index::{Blob, Index};
use super::state::AppState;
use crate::serve::http::files::{BlobReply, serve_blob};

/// What a route needs to know about the request.
pub struct Req<'a> {
    pub state: &'a Arc<AppState>,
    pub index: Arc<Index>,
    pub method: &'a Method,
    pub headers: &'a HeaderMap,
    pub query: Vec<(String, String)>,
    pub(super) authority: Option<&'a str>,
}

impl Req<'_> {
    /// The base URL clients reach this mirror at: `--public-url`, else
    /// `X-Forwarded-Proto` + `X-Forwarded-Host` (an ingress), else `Host`.
    pub fn base_url(&self) -> String {
        self.base_url_parts().concat()
    }

    /// [`Self::base_url`] in three parts borrowed from the request (the
    /// scheme, `://`, the host; or the public URL and two empty parts), so
    /// the answer cache's key is hashed without making it.
    pub fn base_url_parts(&self) -> [&str; 3] {
        if let Some(u) = &self.state.public_url {
            return [u, "", ""];
        }
        // Looked up by ready names: a name given as text is parsed again
        // on every look-up (#35 item 6).
        let first = |name: &HeaderName| {
            self.headers
                .get(name)
                .and_then(|v| v.to_str().ok())
                .and_then(|v| v.split(',').next())
                .map(str::trim)
                .filter(|v| !v.is_empty())
        };
        let proto = match first(&X_FORWARDED_PROTO) {
            Some(p) if p.eq_ignore_ascii_case("https") => "https",
            Some(p) if p.eq_ignore_ascii_case("http") => "http",
            _ if self.state.tls => "https",
            _ => "http",
        };
        let host = first(&X_FORWARDED_HOST)
            .or_else(|| first(&header::HOST))
            .or(self.authority)
            .filter(|h| h.len() <= 255 && h.bytes().all(host_byte))
            .unwrap_or("localhost");
        [proto, "://", host]
    }
}

/// The headers an ingress names the client's scheme and host by.
static X_FORWARDED_PROTO: HeaderName = HeaderName::from_static("x-forwarded-proto");
static X_FORWARDED_HOST: HeaderName = HeaderName::from_static("x-forwarded-host");

/// Whether a byte may be in a host put into links: a name, an IPv4 or
/// bracketed IPv6 address, a port.
fn host_byte(b: u8) -> bool {
    b.is_ascii_alphanumeric() || matches!(b, b'-' | b'.' | b':' | b'[' | b']' | b'_')
}

impl Req<'_> {
    /// Runs `build`, which computes an answer without waiting on anything
    /// (a large tree page takes milliseconds of CPU), on the blocking pool
    /// with a copy of this request, so the async workers go on answering
    /// meanwhile; at most one build a core at once
    /// ([`AppState::builders`]), so many new keys at once queue here rather
    /// than each taking a thread (and its heap arena). `segs` are the
    /// request's raw path segments, handed back to `build`. `None` when the
    /// build panicked.
    pub async fn build_blocking<T: Send + 'static>(
        &self,
        segs: &[&str],
        build: impl FnOnce(&Req<'_>, &[&str]) -> T + Send + 'static,
    ) -> Option<T> {
        let state = self.state.clone();
        let index = self.index.clone();
        let method = self.method.clone();
        let headers = self.headers.clone();
        let query = self.query.clone();
        let authority = self.authority.map(str::to_string);
        let segs: Vec<String> = segs.iter().map(|s| s.to_string()).collect();
        let _turn = self.state.builders.acquire().await.ok()?;
        tokio::task::spawn_blocking(move || {
            let r = Req {
                state: &state,
                index,
                method: &method,
                headers: &headers,
                query,
                authority: authority.as_deref(),
            };
            let segs: Vec<&str> = segs.iter().map(String::as_str).collect();
            build(&r, &segs)
        })
        .await
        .ok()
    }
}

impl Req<'_> {
    /// Answers with a blob named by its sha256 (a wheel, a release asset,
    /// an SBOM, a runtime extra), as any stored bytes are answered (HEAD,
    /// ranges, conditional requests): that sha256, quoted, is its ETag, so
    /// the same bytes carry the same tag on every mirror. `extra` are the
    /// route's own headers.
    pub async fn send_by_sha256(
        &self,
        blob: &Blob,
        content_type: &str,
        extra: HeaderMap,
    ) -> Response {
        let reply = BlobReply {
            blob,
            etag: format!("\"{}\"", blob.sha256),
            content_type,
            extra,
        };
        serve_blob(
            &self.state.store,
            &self.index,
            self.method,
            self.headers,
            reply,
        )
        .await
    }
}
