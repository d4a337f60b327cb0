//! The bytes of a model profile's JSON document (a manifest, an index, a
//! config), which the index names by digest but does not keep: from the
//! answer cache, else made again from the index
//! ([`crate::serve::index::oci::models::make`]) off the async workers, once per
//! digest however many clients ask at once.
//!
//! Invariant: only bytes whose sha256 is the digest asked for are served;
//! a document made again that hashes otherwise is refused with a 500 and
//! logged, never sent. A made document is kept under its digest for as
//! long as its Hub repository serves the same
//! ([`Source::HubRepo`]), so an import of another repository keeps it.

use axum::response::Response;
use bytes::Bytes;
use http::{HeaderMap, StatusCode};
use llmgw_shared::{Chain, Sha256, shown};

use crate::serve::http::respond::{self, CachedJson, Source};
use crate::serve::index::oci::OciRepo;
use crate::serve::index::oci::made::Doc;
use crate::serve::index::oci::models::make;
use crate::serve::ops::metrics::RouteLabel;
use crate::serve::request::Req;
use crate::serve::route::Route;

/// The answer cache's key of the document of this digest: no request's key
/// (each begins with its path's `/`) can be it.
fn key(sha: &Sha256) -> String {
    format!("oci-made:{sha}")
}

/// The document `doc` of `repo`, whose digest is `sha`.
pub async fn bytes(
    req: &Req<'_>,
    repo: &OciRepo,
    doc: &Doc,
    sha: &Sha256,
) -> Result<Bytes, Response> {
    let cache = &req.state.json_cache;
    let key = key(sha);
    if let Some((_, hit)) = cache.get(&req.index, &key) {
        return Ok(hit.body.clone());
    }
    let _flight = cache.join_flight(&key).await;
    if let Some((_, hit)) = cache.get(&req.index, &key) {
        return Ok(hit.body.clone());
    }
    let (name, doc_, sha_) = (repo.name.clone(), doc.clone(), sha.clone());
    let made = req
        .build_blocking(&[], move |r, _| make_and_keep(r, &name, &doc_, &sha_))
        .await;
    match made {
        Some(Ok(b)) => Ok(b),
        Some(Err(why)) => {
            tracing::error!(name = %shown(&repo.name), commit = %doc.commit, digest = %sha, why, "a model's OCI document cannot be made again");
            Err(failed(&repo.name, doc, &why))
        }
        None => Err(failed(&repo.name, doc, "its build stopped")),
    }
}

/// Makes every document of `doc`'s profile at its commit, keeps each the
/// index names in the answer cache, and gives the one of digest `sha`.
fn make_and_keep(r: &Req<'_>, name: &str, doc: &Doc, sha: &Sha256) -> Result<Bytes, String> {
    let repo = r
        .index
        .oci
        .generated(name)
        .ok_or("the repository is not in the index")?;
    let from = repo
        .made_from
        .as_deref()
        .ok_or("the repository is not made")?;
    let store = &r.state.store;
    let read = |blob: &Sha256, max: u64| match store.read_small_blob(blob, max) {
        Ok(b) => Some(b),
        Err(e) => {
            tracing::warn!(blob = %blob, error = %Chain(&e), "a model's config.json unreadable");
            None
        }
    };
    let docs = make::make(&r.index, from, doc, &read).map_err(|e| Chain(&e).to_string())?;
    r.state
        .metrics
        .json_builds
        .get_or_create(&RouteLabel {
            route: Route::OciManifest,
        })
        .inc();
    let mut wanted = None;
    for (_, bytes) in docs {
        let digest = Sha256::of(&bytes);
        if !repo.made.contains_key(&digest) {
            continue;
        }
        let body = Bytes::from(bytes);
        if digest == *sha {
            wanted = Some(body.clone());
        }
        let kept = CachedJson {
            headers: HeaderMap::new(),
            body,
            etag: String::new(),
            source: Source::HubRepo(from.kind, from.key.clone()),
        };
        r.state
            .json_cache
            .put(&r.index, key(&digest), Route::OciManifest, kept);
    }
    wanted.ok_or_else(|| {
        "the document made again has another digest (the store changed under it?)".into()
    })
}

/// The answer when a document cannot be made: the client may try again
/// (the next index may make it), the operator reads the log.
fn failed(name: &str, doc: &Doc, why: &str) -> Response {
    respond::text(
        StatusCode::INTERNAL_SERVER_ERROR,
        format!(
            "the {:?} document of {} at {} could not be made: {why}; try again, and if it \
             persists run `llmgw mirror verify` on the store\n",
            doc.which,
            shown(name),
            doc.commit
        ),
    )
}
