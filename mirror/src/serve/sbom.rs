//! `GET /-/bundles/<manifest sha256>/sbom.cdx.json`: the CycloneDX SBOM a
//! held bundle carries, as the stored blob (issue #33).
//!
//! Invariant: answered from the index alone — the path's sha256 is only
//! compared with held bundles' ids, never made into a path — and the bytes
//! are the blob the bundle's manifest names, sent like any blob (ETag,
//! Range) with CycloneDX's media type.

use axum::http::{HeaderMap, Method, StatusCode};
use axum::response::Response;
use llmgw_shared::manifest::SBOM_MEDIA_TYPE;
use llmgw_shared::shown;

use super::request::Req;
use crate::serve::http::respond;

/// The SBOM of bundle `id`, or a 404 saying why there is none.
pub async fn sbom(r: &Req<'_>, id: &str) -> Response {
    if r.method != Method::GET && r.method != Method::HEAD {
        return respond::method_not_allowed("GET, HEAD");
    }
    let Some(bundle) = r.index.bundles.iter().find(|b| b.id == id) else {
        return respond::text(
            StatusCode::NOT_FOUND,
            format!(
                "this mirror holds no bundle whose manifest sha256 is {} (`llmgw mirror list` \
                 names the held ones)\n",
                shown(id)
            ),
        );
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
