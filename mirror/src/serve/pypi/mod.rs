//! Python package indexes and interpreters (issue 15, the mirror side):
//!
//! - `GET|HEAD /pypi/{env}/simple/` and `/pypi/{env}/simple/{project}/`:
//!   PEP 503 HTML or PEP 691 JSON by `Accept`
//! - `GET|HEAD /pypi/{env}/files/{filename}` and `{filename}.metadata`
//! - `GET /pypi/{env}/pylock.toml`: the lock, URLs pointing here (a site's
//!   own `uv.lock` at `/pypi/{env}/uv.lock` instead, with its project's
//!   `pyproject.toml` at `/pypi/{env}/pyproject.toml`)
//! - `GET /uv/python-downloads.json`: the interpreters held, for uv
//!
//! Invariant: one index per environment, answered from that environment's
//! entry in [`super::index::pypi::PypiIndex`] alone. `decide` picks the
//! outcome, `render` writes it; the lock (the one answer that reads a blob
//! into memory) is read on the blocking pool.

mod accept;
mod decide;
mod downloads;
pub mod lock;
mod render;
mod uv_lock;

use axum::response::IntoResponse;
use http::{Method, StatusCode, header};

use llmgw_shared::manifest::SiteLockFormat;

use super::index::pypi::PyEnv;
use super::request::Req;
use super::route::{Route, Routed};
use crate::serve::http::respond;
use crate::store::Store;
use decide::Outcome;

/// `/pypi/…`; `segs` are the raw segments after `pypi`.
pub async fn pypi(req: &Req<'_>, segs: &[&str]) -> Routed {
    let accept = req
        .headers
        .get(header::ACCEPT)
        .and_then(|v| v.to_str().ok());
    let outcome = decide::decide(&req.index.pypi, req.method, segs, accept);
    let route = match &outcome {
        Outcome::Root { .. } | Outcome::Project { .. } => Route::PypiSimple,
        Outcome::File { filename, .. } if filename.ends_with(".metadata") => Route::PypiMetadata,
        Outcome::File { .. } => Route::PypiFile,
        Outcome::Lock { .. } => Route::PypiLock,
        Outcome::Redirect(_) => Route::PypiRedirect,
        Outcome::NotFound(_) | Outcome::NotAcceptable | Outcome::MethodNotAllowed => Route::Pypi,
    };
    let Outcome::Lock { env } = outcome else {
        return (route, render::respond(req, outcome).await);
    };
    let env = env.clone();
    let store = req.state.store.clone();
    let base = req.base_url();
    let built = tokio::task::spawn_blocking(move || served_lock(&store, &env, &base)).await;
    let resp = match built {
        Ok(Ok(text)) => {
            let mut r = respond::text(StatusCode::OK, text);
            r.headers_mut().insert(
                header::CONTENT_TYPE,
                http::HeaderValue::from_static("application/toml; charset=utf-8"),
            );
            // HEAD: the body's length is its Content-Length (dispatch).
            r
        }
        Ok(Err(e)) => e.into_response(),
        Err(e) => respond::text(StatusCode::INTERNAL_SERVER_ERROR, format!("{e}\n")),
    };
    (route, resp)
}

/// `/uv/python-downloads.json`.
pub fn python_downloads(req: &Req<'_>) -> Routed {
    let route = Route::UvPythonDownloads;
    if req.method != Method::GET && req.method != Method::HEAD {
        return (route, respond::method_not_allowed("GET, HEAD"));
    }
    let v = downloads::downloads_json(&req.base_url(), req.index.pypi.interpreters.values());
    (route, respond::json(req.method, req.headers, &v))
}

/// Reads the lock blob (bounded, hashed) and rewrites it for `base`
/// (`http://mirror:8080`): a
/// site's `uv.lock` as uv reads it, any other lock as a PEP 751 one.
fn served_lock(store: &Store, env: &PyEnv, base: &str) -> Result<String, lock::LockError> {
    let bytes = lock::read_lock(store, env)?;
    let text = String::from_utf8_lossy(&bytes);
    match env.site_lock.as_ref().map(|s| s.format) {
        Some(SiteLockFormat::UvLock) => uv_lock::rewrite(&text, env, base),
        _ => lock::rewrite(&text, env, base),
    }
}
