//! PEP 740 provenance, PyPI's integrity API: a file's attestations, each
//! converted into the Sigstore bundle [`super::verify`] takes, verified
//! offline for a file known by its sha256 *and* its filename, and the
//! Trusted Publisher PyPI names for them.
//!
//! The shapes are PyPI's (`pypi-attestations`' models): a provenance
//! object `{version: 1, attestation_bundles: [{publisher: {kind, …},
//! attestations: [attestation]}]}`, and an attestation `{version: 1,
//! verification_material: {certificate, transparency_entries},
//! envelope: {statement, signature}}`. An attestation is a DSSE envelope
//! over an in-toto statement; as `pypi-attestations`' `to_bundle` does,
//! it becomes a Sigstore bundle (v0.3) with payload type
//! `application/vnd.in-toto+json`, the leaf certificate and the log
//! entries as they are — nothing is re-signed or re-encoded, so the
//! bundle verifies exactly when the attestation does.
//!
//! Why the filename: a PyPI attestation's subject names the file as well
//! as its digest; a valid signature over another file's statement, or a
//! statement about something else than publishing (another predicate),
//! is not this file's provenance.
//!
//! Why the publisher is held by the caller: PyPI's `publisher` object is
//! what the index says, not what was signed. It is a policy of last
//! resort ([`Publisher::admits`]: the certificate must name that
//! repository and workflow, the check `pypi-attestations verify pypi`
//! makes), taken only where neither the recipe table nor the site names
//! the signer.
//!
//! Invariant: [`verify_file`] answers a [`Signed`] only when
//! [`super::verify`] does and the signed statement is an in-toto v1
//! statement with one subject, named `filename`, whose sha256 is the
//! file's, and a predicate PEP 740 defines for PyPI.

use std::collections::BTreeMap;

use base64::Engine;
use serde::Deserialize;
use serde_json::{Value, json};

use super::{GITHUB_ACTIONS_ISSUER, ProvenanceError, Signed, TrustedRoot};
use crate::Sha256;

/// A provenance object larger than this is refused unread: each
/// attestation is a few KiB, and a file has one or two.
pub const MAX_PROVENANCE: usize = 4 << 20;

/// At most this many attestations of one file are looked at.
pub const MAX_ATTESTATIONS: usize = 64;

/// What the integrity API answers, as `Accept` asks for it.
pub const INTEGRITY_TYPE: &str = "application/vnd.pypi.integrity.v1+json";

/// PyPI's publish attestation: "this file was uploaded by this publisher".
pub const PUBLISH_PREDICATE: &str = "https://docs.pypi.org/attestations/publish/v1";

/// SLSA provenance v1, the other predicate PEP 740 names.
pub const SLSA_PREDICATE: &str = "https://slsa.dev/provenance/v1";

/// GitLab's OIDC issuer, for GitLab Trusted Publishers.
pub const GITLAB_ISSUER: &str = "https://gitlab.com";

/// The Trusted Publisher an attestation bundle is listed under, as PyPI
/// names it (unsigned: what the index says).
#[derive(Debug, Clone, PartialEq, Eq, Deserialize)]
pub struct Publisher {
    /// `GitHub`, `GitLab`, `Google`, `ActiveState`.
    pub kind: String,
    /// GitHub's and GitLab's `owner/name`.
    #[serde(default)]
    pub repository: Option<String>,
    /// GitHub's workflow file name (`release.yml`).
    #[serde(default)]
    pub workflow: Option<String>,
    /// GitLab's CI file path (`.gitlab-ci.yml`).
    #[serde(default)]
    pub workflow_filepath: Option<String>,
    /// The deployment environment, if the publisher names one.
    #[serde(default)]
    pub environment: Option<String>,
}

impl Publisher {
    /// Whether this publisher's kind is one whose identity can be held
    /// against a certificate here (GitHub, GitLab).
    pub fn readable(&self) -> bool {
        self.expected().is_some()
    }

    /// (issuer, repository URL, workflow URL up to its ref) a
    /// certificate from this publisher must name.
    fn expected(&self) -> Option<(&'static str, String, String)> {
        let repo = self.repository.as_deref()?;
        match self.kind.as_str() {
            "GitHub" => {
                let w = self.workflow.as_deref()?;
                let url = format!("https://github.com/{repo}");
                Some((
                    GITHUB_ACTIONS_ISSUER,
                    url.clone(),
                    format!("{url}/.github/workflows/{w}@"),
                ))
            }
            "GitLab" => {
                let w = self.workflow_filepath.as_deref()?;
                let url = format!("https://gitlab.com/{repo}");
                Some((GITLAB_ISSUER, url.clone(), format!("{url}//{w}@")))
            }
            _ => None,
        }
    }

    /// Whether `signed` is by this publisher: the issuer, the
    /// certificate's source repository and the workflow that ran (its
    /// Build Config URI, else its identity) up to the ref, as
    /// `pypi-attestations` checks a publisher (repository names are not
    /// case-sensitive on either forge).
    pub fn admits(&self, signed: &Signed) -> bool {
        let Some((issuer, repo, workflow)) = self.expected() else {
            return false;
        };
        let ran = signed.build_config.as_deref().unwrap_or(&signed.identity);
        let starts = |s: &str, prefix: &str| {
            s.len() > prefix.len()
                && s.is_char_boundary(prefix.len())
                && s[..prefix.len()].eq_ignore_ascii_case(prefix)
        };
        let repo_ok = match &signed.source_repository {
            Some(r) => r.eq_ignore_ascii_case(&repo),
            None => starts(&signed.identity, &format!("{repo}/")),
        };
        signed.issuer == issuer && repo_ok && starts(ran, &workflow)
    }
}

impl std::fmt::Display for Publisher {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self.expected() {
            Some((issuer, _, workflow)) => write!(f, "{workflow}<any ref> issued by {issuer}"),
            None => write!(f, "a {} publisher", self.kind),
        }
    }
}

/// One publisher's attestations, each as a Sigstore bundle.
#[derive(Debug, Clone)]
pub struct AttestationBundle {
    /// Who PyPI says published them.
    pub publisher: Publisher,
    /// The attestations, converted ([`bundle_of`]).
    pub bundles: Vec<Vec<u8>>,
}

/// A provenance object, its attestations converted.
#[derive(Debug, Clone)]
pub struct Provenance {
    /// In the order PyPI lists them.
    pub attestation_bundles: Vec<AttestationBundle>,
}

#[derive(Deserialize)]
struct RawProvenance {
    version: u64,
    attestation_bundles: Vec<RawBundle>,
}

#[derive(Deserialize)]
struct RawBundle {
    publisher: Publisher,
    attestations: Vec<Attestation>,
}

#[derive(Deserialize)]
struct Attestation {
    version: u64,
    verification_material: Material,
    envelope: Envelope,
}

#[derive(Deserialize)]
struct Material {
    certificate: String,
    transparency_entries: Vec<Value>,
}

#[derive(Deserialize)]
struct Envelope {
    statement: String,
    signature: String,
}

/// Reads a provenance object (the integrity API's answer), each of its
/// attestations converted into a Sigstore bundle.
pub fn parse_provenance(bytes: &[u8]) -> Result<Provenance, ProvenanceError> {
    if bytes.len() > MAX_PROVENANCE {
        return Err(ProvenanceError::ProvenanceTooLarge { size: bytes.len() });
    }
    let not = |reason: String| ProvenanceError::NotAProvenance { reason };
    let raw: RawProvenance = serde_json::from_slice(bytes).map_err(|e| not(e.to_string()))?;
    if raw.version != 1 {
        return Err(not(format!(
            "its version is {}, and only version 1 is defined",
            raw.version
        )));
    }
    let total: usize = raw
        .attestation_bundles
        .iter()
        .map(|b| b.attestations.len())
        .sum();
    if total > MAX_ATTESTATIONS {
        return Err(not(format!(
            "it lists {total} attestations, more than the {MAX_ATTESTATIONS} a file can have"
        )));
    }
    let mut out = Vec::new();
    for b in raw.attestation_bundles {
        check_publisher(&b.publisher).map_err(not)?;
        let bundles = b
            .attestations
            .into_iter()
            .map(convert)
            .collect::<Result<_, _>>()?;
        out.push(AttestationBundle {
            publisher: b.publisher,
            bundles,
        });
    }
    Ok(Provenance {
        attestation_bundles: out,
    })
}

/// One attestation's JSON (a `.publish.attestation` file) as the Sigstore
/// bundle [`verify_file`] takes.
pub fn bundle_of(attestation: &[u8]) -> Result<Vec<u8>, ProvenanceError> {
    if attestation.len() > MAX_PROVENANCE {
        return Err(ProvenanceError::ProvenanceTooLarge {
            size: attestation.len(),
        });
    }
    let a: Attestation =
        serde_json::from_slice(attestation).map_err(|e| ProvenanceError::NotAProvenance {
            reason: e.to_string(),
        })?;
    convert(a)
}

/// `pypi-attestations`' `Attestation.to_bundle`: the same certificate,
/// log entries, statement and signature, in a Sigstore bundle v0.3.
fn convert(a: Attestation) -> Result<Vec<u8>, ProvenanceError> {
    let not = |reason: &str| ProvenanceError::NotAProvenance {
        reason: format!("an attestation {reason}"),
    };
    if a.version != 1 {
        return Err(not("is not version 1"));
    }
    if a.verification_material.transparency_entries.is_empty() {
        return Err(not("lists no transparency log entry"));
    }
    let b64 = base64::engine::general_purpose::STANDARD;
    for (what, v) in [
        ("certificate", &a.verification_material.certificate),
        ("statement", &a.envelope.statement),
        ("signature", &a.envelope.signature),
    ] {
        if b64.decode(v).is_err() {
            return Err(ProvenanceError::NotAProvenance {
                reason: format!("an attestation's {what} is not base64"),
            });
        }
    }
    let bundle = json!({
        "mediaType": "application/vnd.dev.sigstore.bundle.v0.3+json",
        "verificationMaterial": {
            "certificate": {"rawBytes": a.verification_material.certificate},
            "tlogEntries": a.verification_material.transparency_entries,
        },
        "dsseEnvelope": {
            "payload": a.envelope.statement,
            "payloadType": "application/vnd.in-toto+json",
            "signatures": [{"sig": a.envelope.signature}],
        },
    });
    serde_json::to_vec(&bundle).map_err(|e| not(&e.to_string()))
}

/// A publisher's names are short printable text (they are shown).
fn check_publisher(p: &Publisher) -> Result<(), String> {
    let fields = [
        Some(&p.kind),
        p.repository.as_ref(),
        p.workflow.as_ref(),
        p.workflow_filepath.as_ref(),
        p.environment.as_ref(),
    ];
    for v in fields.into_iter().flatten() {
        if v.is_empty() || v.len() > 500 || v.chars().any(char::is_control) {
            return Err(format!(
                "a publisher's field {:?} is not 1 to 500 printable characters",
                crate::shown(&v.chars().take(100).collect::<String>())
            ));
        }
    }
    Ok(())
}

#[derive(Deserialize)]
struct BundleView {
    #[serde(rename = "dsseEnvelope")]
    dsse: Option<Dsse>,
}

#[derive(Deserialize)]
struct Dsse {
    payload: String,
}

#[derive(Deserialize)]
struct Statement {
    #[serde(rename = "_type")]
    kind: String,
    subject: Vec<Subject>,
    #[serde(rename = "predicateType")]
    predicate_type: String,
}

#[derive(Deserialize)]
struct Subject {
    name: String,
    digest: BTreeMap<String, String>,
}

/// Verifies `bundle` (a converted attestation) as the provenance of the
/// file named `filename` whose sha256 is `sha256`, against `root`, and
/// says who signed. No network.
pub fn verify_file(
    bundle: &[u8],
    sha256: &Sha256,
    filename: &str,
    root: &TrustedRoot,
) -> Result<Signed, ProvenanceError> {
    let signed = super::verify(bundle, sha256, root)?;
    let wrong = |reason: String| ProvenanceError::WrongStatement { reason };
    let view: BundleView = serde_json::from_slice(bundle).map_err(|e| wrong(e.to_string()))?;
    let payload = view
        .dsse
        .ok_or_else(|| wrong("it is not a DSSE envelope".into()))?
        .payload;
    let statement = base64::engine::general_purpose::STANDARD
        .decode(payload)
        .map_err(|e| wrong(format!("its payload is not base64: {e}")))?;
    let s: Statement = serde_json::from_slice(&statement)
        .map_err(|e| wrong(format!("it is not an in-toto statement: {e}")))?;
    if s.kind != "https://in-toto.io/Statement/v1" {
        return Err(wrong(format!(
            "its type is {:?}, not an in-toto v1 statement",
            crate::shown(&s.kind)
        )));
    }
    if s.predicate_type != PUBLISH_PREDICATE && s.predicate_type != SLSA_PREDICATE {
        return Err(wrong(format!(
            "its predicate is {:?}, expected {PUBLISH_PREDICATE} or {SLSA_PREDICATE}",
            crate::shown(&s.predicate_type)
        )));
    }
    let [subject] = s.subject.as_slice() else {
        return Err(wrong(format!(
            "it names {} subjects, expected exactly one",
            s.subject.len()
        )));
    };
    if subject.name != filename {
        return Err(wrong(format!(
            "its subject is named {:?}, expected {:?}",
            crate::shown(&subject.name),
            crate::shown(filename)
        )));
    }
    if subject.digest.get("sha256").map(|d| d.to_ascii_lowercase()) != Some(sha256.to_string()) {
        return Err(wrong(format!(
            "its subject's sha256 is not {sha256}, the file's"
        )));
    }
    Ok(signed)
}

#[cfg(test)]
mod tests;
