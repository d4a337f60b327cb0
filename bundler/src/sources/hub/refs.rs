//! Whether a revision is a branch, a tag or a commit, as the Hub's refs
//! API says, so a mirror lists each where it belongs.
//!
//! Invariant: an endpoint without the refs listing (404) never fails the
//! run: the revision is served as a branch, and the operator is told.

use llmgw_shared::is_sha1_hex;
use llmgw_shared::manifest::RefKind;
use serde::Deserialize;

use super::{HubClient, MAX_PAGE, what};
use crate::error::{CreateError, HubError};
use crate::http::HttpError;
use crate::spec::RepoSpec;

/// `GET /api/{type}s/{repo}/refs`: the names are all that is read.
#[derive(Deserialize)]
struct RefsJson {
    #[serde(default)]
    branches: Vec<RefName>,
    #[serde(default)]
    tags: Vec<RefName>,
}

#[derive(Deserialize)]
struct RefName {
    name: String,
}

/// Whether the revision asked for is a branch, a tag or a commit, as the
/// Hub's refs API says (a mirror lists each where it belongs). `refs/...`
/// names (pull requests, conversions) count as branches. An endpoint
/// without the refs listing (older mirrors, some proxies answer 404) has
/// the revision served as a branch, with a warning.
pub(super) async fn ref_kind(
    hub: &HubClient<'_>,
    spec: &RepoSpec,
    commit: &str,
) -> Result<RefKind, CreateError> {
    let rev = spec.revision.as_str();
    if rev.eq_ignore_ascii_case(commit) {
        return Ok(RefKind::Commit);
    }
    if rev.starts_with("refs/") {
        return Ok(RefKind::Branch);
    }
    let url = format!(
        "{}/api/{}/{}/refs",
        hub.endpoint,
        spec.kind.api_plural(),
        spec.id
    );
    let body = match hub
        .http
        .get_small(&url, Some("application/json"), MAX_PAGE)
        .await
    {
        Ok((body, _)) => body,
        Err(HttpError::Status { status: 404, .. }) => {
            return Ok(no_refs_listing(spec, &url));
        }
        Err(e) => {
            return Err(HubError::Refs {
                what: what(spec),
                url,
                error: Box::new(hub.refusal(spec, e)),
            }
            .into());
        }
    };
    let refs: RefsJson = serde_json::from_slice(&body)
        .map_err(|e| CreateError::hub_answer(&what(spec), &url, "refs answer", e))?;
    Ok(if refs.branches.iter().any(|b| b.name == rev) {
        RefKind::Branch
    } else if refs.tags.iter().any(|t| t.name == rev) {
        RefKind::Tag
    } else if is_sha1_hex(rev) || rev.len() < 40 && rev.bytes().all(|b| b.is_ascii_hexdigit()) {
        RefKind::Commit
    } else {
        RefKind::Branch
    })
}

/// The endpoint has no refs listing (404): the revision, which the
/// revision call found, is served as a branch, and the operator is told.
fn no_refs_listing(spec: &RepoSpec, url: &str) -> RefKind {
    tracing::warn!(
        "{}: {url} answered 404 (the endpoint has no refs listing); revision {} is served as a \
         branch (a mirror that lists refs would say whether it is a tag)",
        what(spec),
        llmgw_shared::shown(&spec.revision)
    );
    RefKind::Branch
}
