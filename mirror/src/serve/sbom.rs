//! `GET /-/bundles/<manifest sha256>/sbom.cdx.json`: the CycloneDX SBOM a
//! held bundle carries, as the stored blob (issue #33); and
//! `GET /-/bundles/<sha>/evidence/<artifact sha256>.sigstore.json` and
//! `…/evidence/trusted_root.json`: the publishers' Sigstore bundles it
//! carries and the root they verify against (#49), so a node or an auditor
//! can verify again (`gh attestation verify --bundle …
//! --custom-trusted-root …`, `sigstore verify`).
//!
//! Invariant: answered from the index alone — the path's sha256 is only
//! compared with held bundles' ids, never made into a path — and the bytes
//! are the blob the bundle's manifest names, sent like any blob (ETag,
//! Range) with CycloneDX's media type.

use axum::http::{HeaderMap, Method, StatusCode};
use axum::response::Response;
use llmgw_shared::manifest::{SBOM_MEDIA_TYPE, SIGSTORE_SUFFIX, TRUSTED_ROOT_NAME};
use llmgw_shared::shown;

use super::index::entries::{Blob, BundleInfo};
use super::request::Req;
use crate::serve::http::respond;

/// The held bundle `id`, or the answer saying there is none.
fn held<'i>(r: &'i Req<'_>, id: &str) -> Result<&'i BundleInfo, Box<Response>> {
    if r.method != Method::GET && r.method != Method::HEAD {
        return Err(Box::new(respond::method_not_allowed("GET, HEAD")));
    }
    r.index.bundles.iter().find(|b| b.id == id).ok_or_else(|| {
        Box::new(respond::text(
            StatusCode::NOT_FOUND,
            format!(
                "this mirror holds no bundle whose manifest sha256 is {} (`llmgw mirror list` \
                 names the held ones)\n",
                shown(id)
            ),
        ))
    })
}

/// The SBOM of bundle `id`, or a 404 saying why there is none.
pub async fn sbom(r: &Req<'_>, id: &str) -> Response {
    let bundle = match held(r, id) {
        Ok(b) => b,
        Err(resp) => return *resp,
    };
    let Some(blob) = &bundle.sbom else {
        return respond::text(
            StatusCode::NOT_FOUND,
            format!(
                "bundle {id} carries no SBOM: it was made before bundle format 4 (or is a \
                 repair bundle); make it again with a current llmgw\n"
            ),
        );
    };
    r.send_by_sha256(blob, SBOM_MEDIA_TYPE, HeaderMap::new())
        .await
}

/// A publisher's Sigstore bundle (`<artifact sha256>.sigstore.json`) or
/// the trusted root (`trusted_root.json`) bundle `id` carries.
pub async fn evidence(r: &Req<'_>, id: &str, name: &str) -> Response {
    let bundle = match held(r, id) {
        Ok(b) => b,
        Err(resp) => return *resp,
    };
    let Some(sigs) = &bundle.signatures else {
        return respond::text(
            StatusCode::NOT_FOUND,
            format!("bundle {id} carries no publisher's signature\n"),
        );
    };
    let blob = if name == TRUSTED_ROOT_NAME {
        Some(&sigs.trusted_root)
    } else {
        name.strip_suffix(SIGSTORE_SUFFIX)
            .and_then(|artifact| sigs.signed.iter().find(|s| s.artifact.as_str() == artifact))
            .map(|s| &s.bundle)
    };
    match blob {
        Some(b) => {
            let blob = Blob {
                sha256: b.sha256.clone(),
                size: b.size,
            };
            r.send_by_sha256(&blob, "application/json", HeaderMap::new())
                .await
        }
        None => respond::text(
            StatusCode::NOT_FOUND,
            format!(
                "bundle {id} carries no evidence named {}: it has {TRUSTED_ROOT_NAME} and \
                 <artifact sha256>{SIGSTORE_SUFFIX} for each of its {} signed artifacts \
                 (`llmgw mirror list` names them)\n",
                shown(name),
                sigs.signed.len()
            ),
        ),
    }
}
