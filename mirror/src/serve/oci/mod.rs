//! The read-only OCI registry (distribution-spec v1.1, pull only) and the
//! classic Helm chart repository, over the images and charts the held
//! bundles carry:
//!
//! - `GET /v2/`: 200 `{}`, `Docker-Distribution-API-Version: registry/2.0`
//! - `GET|HEAD /v2/<name>/manifests/<tag|digest>`: the stored bytes, by
//!   `Accept` over every `Accept` line
//! - `GET|HEAD /v2/<name>/blobs/<digest>`: with Range
//! - `GET /v2/<name>/tags/list`, `GET /v2/_catalog` (`n`, `last`)
//! - `GET /v2/<name>/referrers/<digest>` (`artifactType`)
//! - every other method: 405 `UNSUPPORTED`
//! - `GET /charts/index.yaml`, `GET /charts/<name>-<version>.tgz`
//!
//! `<name>` is the repository path without its registry; containerd says
//! the registry in `?ns=` (see [`crate::serve::index::oci::OciIndex::lookup`]).
//!
//! Invariant: `decide` picks the outcome from the index alone, `render`
//! writes it; the only file touched is a blob the index names, through the
//! blob path every protocol uses.

mod charts;
mod decide;
pub mod error;
mod made_doc;
pub mod names;
mod render;

use http::header;
use llmgw_shared::manifest::RepoKind;

use super::index::Index;
use super::request::Req;
use super::route::{Route, Routed};
pub use charts::charts;
use decide::{Ask, Outcome};

/// `/v2/…`; `segs` are the raw segments after `v2`, `path` the raw path.
pub async fn v2(req: &Req<'_>, segs: &[&str], path: &str) -> Routed {
    let accept: Vec<&str> = req
        .headers
        .get_all(header::ACCEPT)
        .iter()
        .filter_map(|v| v.to_str().ok())
        .collect();
    let ask = Ask {
        method: req.method,
        segs,
        query: &req.query,
        accept: &accept,
    };
    let outcome = decide::decide(&req.index.oci, &ask);
    let route = match &outcome {
        Outcome::Base => Route::OciBase,
        Outcome::Catalog { .. } => Route::OciCatalog,
        Outcome::Tags { .. } => Route::OciTags,
        Outcome::Manifest(_) => Route::OciManifest,
        Outcome::Made { manifest: true, .. } => Route::OciManifest,
        Outcome::Made { .. } => Route::OciBlob,
        Outcome::Blob(_) => Route::OciBlob,
        Outcome::Referrers { .. } => Route::OciReferrers,
        Outcome::Refused(_) | Outcome::NoRoute => Route::Oci,
    };
    (route, render::respond(req, outcome, path).await)
}

/// Whether `/v2/<owner>/<name>/manifests/<tag>` is older llama.cpp's `-hf`
/// asking for a Hub model's GGUF (`hub::manifests`) rather than a registry
/// client: no image of that name is held, and either the Hub holds that
/// model or the client names no OCI or Docker media type in `Accept`
/// (every registry client does; llama.cpp sends `application/json`), so
/// a miss of both is answered in the shape the client reads.
pub fn is_hub_gguf(index: &Index, segs: &[&str], headers: &http::HeaderMap) -> bool {
    let [owner, name, "manifests", _] = segs else {
        return false;
    };
    let id = format!("{owner}/{name}");
    if index.oci.holds(&id) {
        return false;
    }
    let registry_client = headers
        .get_all(header::ACCEPT)
        .iter()
        .filter_map(|v| v.to_str().ok())
        .any(|v| v.contains("application/vnd.oci.") || v.contains("application/vnd.docker."));
    index.repo(RepoKind::Model, &id).is_some() || !registry_client
}
