//! JSON answers kept once built: the index only changes when a bundle is
//! imported or removed, so the same request gets the same bytes until
//! then. Keyed by everything the answer depends on (path, query, the base
//! URL the links use, `Accept`), and dropped whole when the index changes.

use std::collections::HashMap;
use std::sync::{Arc, RwLock};

use axum::body::Body;
use axum::response::Response;
use bytes::Bytes;
use http::{HeaderMap, Method, StatusCode, header};

use super::index::Index;
use super::respond::{empty, etag_matches};

/// At most this many answers are kept; past it the cache starts over.
const MAX_ENTRIES: usize = 4096;

/// A built 200 answer: its headers (ETag, Content-Type, Link, ...) and body.
#[derive(Clone)]
pub struct CachedJson {
    pub headers: HeaderMap,
    pub body: Bytes,
    pub etag: String,
}

#[derive(Default)]
pub struct JsonCache {
    inner: RwLock<(u64, HashMap<String, Arc<CachedJson>>)>,
}

fn generation(index: &Index) -> u64 {
    index.generation
}

impl JsonCache {
    pub fn get(&self, index: &Arc<Index>, key: &str) -> Option<Arc<CachedJson>> {
        let g = self.inner.read().ok()?;
        if g.0 != generation(index) {
            return None;
        }
        g.1.get(key).cloned()
    }

    pub fn put(&self, index: &Arc<Index>, key: String, value: CachedJson) {
        if let Ok(mut g) = self.inner.write() {
            let gen_now = generation(index);
            if g.0 != gen_now || g.1.len() >= MAX_ENTRIES {
                g.1.clear();
                g.0 = gen_now;
            }
            g.1.insert(key, Arc::new(value));
        }
    }
}

/// The answer for a request from a cached build: 304 when the client has
/// it, headers only for HEAD.
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
