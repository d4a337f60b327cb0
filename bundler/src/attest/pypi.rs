//! PEP 740 at create: for each file of an environment listed on a package
//! index that speaks PyPI's integrity API, its provenance object is
//! fetched (the URL the index's JSON entry names, else
//! `{index host}/integrity/{project}/{version}/{filename}/provenance` on
//! the main index), each attestation converted and verified offline for
//! the file's sha256 and name, and its signer held against who may sign.
//!
//! Who may sign: the site's `--identity pypi:PROJECT=…` rows, else the
//! recipe table's PyPI rows, else — nobody having named a signer — the
//! Trusted Publisher PyPI's provenance itself names for the file (the
//! certificate must come from that repository and workflow), recorded as
//! such so an auditor can tell it from a policy. Unlike release assets,
//! every file is looked up: PyPI offers provenance for any project
//! uploaded by a Trusted Publisher, and says which one.
//!
//! Invariant: a file either carries an attestation that verified and
//! names an admitted signer; or is recorded unsigned (its index offers
//! no provenance, and nothing requires one or `--allow-unsigned-upstream`
//! let it in); or the run stops naming the file and why. Evidence that
//! does not verify, or verifies for another signer, always stops it.

use llmgw_shared::Sha256;
use llmgw_shared::manifest::{AdmittedBy, SignatureKind, UnsignedArtifact};
use llmgw_shared::provenance::pep740::{self, INTEGRITY_TYPE, MAX_PROVENANCE};
use llmgw_shared::provenance::{Identity, Signed};

use super::{Attested, Found, SignaturePolicy, describe};
use crate::error::{CreateError, SignatureError};
use crate::http::{Http, HttpError};

/// One file of an environment, as the lookup needs it.
#[derive(Debug, Clone)]
pub struct IndexedFile {
    /// The project, PEP 503 normalized.
    pub project: String,
    /// Its version.
    pub version: String,
    /// The file's name, as its index lists it.
    pub filename: String,
    /// Its sha256, as its publisher gave it.
    pub sha256: Sha256,
    /// Where its provenance object is asked for; `None` when its index
    /// says it has none.
    pub provenance: Option<String>,
}

impl IndexedFile {
    /// What it is, for people and the manifest.
    pub fn what(&self) -> String {
        format!("PyPI {} {} {}", self.project, self.version, self.filename)
    }
}

/// The integrity API's URL of a file on the index whose simple API is at
/// `simple` (`https://pypi.org/simple` → `https://pypi.org/integrity/…`).
pub fn integrity_url(simple: &str, project: &str, version: &str, filename: &str) -> String {
    let seg = llmgw_shared::url::encode_segment;
    let host = simple.trim_end_matches('/');
    let host = host.strip_suffix("/simple").unwrap_or(host);
    format!(
        "{host}/integrity/{}/{}/{}/provenance",
        seg(project),
        seg(version),
        seg(filename)
    )
}

/// Who may sign `project`'s files, and by which policy; `None` for the
/// publisher PyPI names.
type Policy = Option<(Vec<Identity>, bool, AdmittedBy)>;

/// Seeks and checks the PEP 740 provenance of `file`: what goes on record.
pub async fn seek(
    http: &Http,
    policy: &SignaturePolicy,
    file: &IndexedFile,
) -> Result<Found, CreateError> {
    let what = file.what();
    let named = policy.signers_for_pypi(&file.project);
    let fetched = match &file.provenance {
        Some(url) => fetch(http, url).await?.map(|b| (url.clone(), b)),
        None => None,
    };
    let Some((url, body)) = fetched else {
        return none_offered(policy, named, what, file);
    };
    let unverified = |source| SignatureError::Unverified {
        what: what.clone(),
        url: url.clone(),
        source,
    };
    let provenance = pep740::parse_provenance(&body).map_err(unverified)?;
    let mut wrong: Option<(Signed, String)> = None;
    for b in &provenance.attestation_bundles {
        for bundle in &b.bundles {
            let signed = pep740::verify_file(bundle, &file.sha256, &file.filename, policy.root())
                .map_err(unverified)?;
            let (admitted, expected) = match &named {
                Some((who, _, by)) => (who.iter().any(|s| s.admits(&signed)), (describe(who), *by)),
                None if !b.publisher.readable() => {
                    return Err(SignatureError::UnreadablePublisher {
                        what,
                        publisher: b.publisher.to_string(),
                        project: file.project.clone(),
                    }
                    .into());
                }
                None => (
                    b.publisher.admits(&signed),
                    (
                        format!("{} (the publisher PyPI names)", b.publisher),
                        AdmittedBy::PublisherNamedByPypi,
                    ),
                ),
            };
            if admitted {
                return Ok(Found::Attested(Attested {
                    artifact: file.sha256.clone(),
                    what,
                    bundle: bundle.clone(),
                    signed,
                    kind: SignatureKind::Pep740Provenance,
                    file_name: Some(file.filename.clone()),
                    admitted_by: Some(expected.1),
                }));
            }
            wrong.get_or_insert((signed, expected.0));
        }
    }
    if let Some((signed, expected)) = wrong {
        return Err(SignatureError::WrongSigner {
            what,
            expected,
            issuer: signed.issuer,
            identity: signed.identity,
        }
        .into());
    }
    // A provenance object listing no attestation offers no evidence.
    none_offered(policy, named, what, file)
}

/// The provenance object at `url`, or `None` when the index has none (404).
async fn fetch(http: &Http, url: &str) -> Result<Option<Vec<u8>>, CreateError> {
    match http
        .get_small(url, Some(INTEGRITY_TYPE), MAX_PROVENANCE)
        .await
    {
        Ok((b, _)) => Ok(Some(b.to_vec())),
        Err(HttpError::Status { status: 404, .. }) => Ok(None),
        Err(e) => Err(e.into()),
    }
}

/// A file whose index offers no provenance: refused where a policy
/// requires one (unless `--allow-unsigned-upstream`), else recorded.
fn none_offered(
    policy: &SignaturePolicy,
    named: Policy,
    what: String,
    file: &IndexedFile,
) -> Result<Found, CreateError> {
    let asked = file
        .provenance
        .clone()
        .unwrap_or_else(|| "its index's page, which lists none".into());
    let (expected, allowed_by) = match named {
        Some((who, true, _)) if !policy.allow_unsigned() => {
            return Err(SignatureError::Missing {
                what,
                url: asked,
                expected: describe(&who),
            }
            .into());
        }
        Some((who, true, _)) => (describe(&who), "--allow-unsigned-upstream".to_string()),
        Some((who, false, by)) => (describe(&who), format!("{by}, which does not require one")),
        None => (
            "no one: no policy names a signer and PyPI offers no provenance".to_string(),
            "no policy requiring one".to_string(),
        ),
    };
    Ok(Found::Unsigned(UnsignedArtifact {
        artifact: file.sha256.clone(),
        what,
        expected,
        allowed_by,
    }))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_integrity_route_is_on_the_index_host() {
        assert_eq!(
            integrity_url(
                "https://pypi.org/simple/",
                "rfc8785",
                "0.1.2",
                "rfc8785-0.1.2-py3-none-any.whl"
            ),
            "https://pypi.org/integrity/rfc8785/0.1.2/rfc8785-0.1.2-py3-none-any.whl/provenance"
        );
        assert_eq!(
            integrity_url("http://127.0.0.1:9/simple", "a", "1+local", "a-1+local.whl"),
            "http://127.0.0.1:9/integrity/a/1%2Blocal/a-1%2Blocal.whl/provenance"
        );
    }
}
