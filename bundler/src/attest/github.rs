//! GitHub's attestations API: `GET /repos/{owner}/{repo}/attestations/
//! sha256:{hex}` answers `{"attestations": [{"bundle": {…}, "bundle_url":
//! …}]}` (as `gh attestation verify` reads it, `pkg/cmd/attestation/api`),
//! or 404 when the repository has none for that digest.
//!
//! Invariant: the answer is read within [`MAX_ANSWER`], and each bundle
//! handed on is the JSON of one attestation's `bundle`, re-serialized
//! only as serde reads it (the verifier parses it again, strictly).

use llmgw_shared::Sha256;
use serde::Deserialize;

use crate::error::{CreateError, SignatureError};
use crate::http::{Http, HttpError};

/// An attestations answer larger than this is refused: each bundle is a
/// few KiB and GitHub pages at 30.
const MAX_ANSWER: usize = 16 << 20;

/// At most this many attestations of one digest are looked at.
const MAX_ATTESTATIONS: usize = 100;

#[derive(Deserialize)]
struct Answer {
    #[serde(default)]
    attestations: Vec<Entry>,
}

#[derive(Deserialize)]
struct Entry {
    /// Null when GitHub only offers `bundle_url` (a compressed copy this
    /// does not read): such an entry is passed over.
    #[serde(default)]
    bundle: Option<Box<serde_json::value::RawValue>>,
}

/// The URL asked, and the bundles GitHub lists for `sha256` in `repo`
/// (empty when it has none).
pub(super) async fn attestations(
    http: &Http,
    api: &str,
    repo: &str,
    sha256: &Sha256,
    what: &str,
) -> Result<(String, Vec<Vec<u8>>), CreateError> {
    let url = format!("{api}/repos/{repo}/attestations/sha256:{sha256}?per_page=30");
    let body = match http
        .get_small(&url, Some("application/vnd.github+json"), MAX_ANSWER)
        .await
    {
        Ok((b, _)) => b,
        Err(HttpError::Status { status: 404, .. }) => return Ok((url, Vec::new())),
        Err(e) => return Err(e.into()),
    };
    let answer: Answer = serde_json::from_slice(&body).map_err(|e| SignatureError::BadAnswer {
        what: what.to_string(),
        url: url.clone(),
        reason: e.to_string(),
    })?;
    let bundles = answer
        .attestations
        .into_iter()
        .take(MAX_ATTESTATIONS)
        .filter_map(|e| e.bundle)
        .map(|raw| raw.get().as_bytes().to_vec())
        .collect();
    Ok((url, bundles))
}
