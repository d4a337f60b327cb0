//! Format 7's publishers' signatures: for each carried artifact whose
//! publisher signs it with Sigstore (a GitHub artifact attestation of a
//! release asset; format 9, a wheel's PEP 740 attestation from PyPI's
//! integrity API, as a Sigstore bundle), the verification bundle,
//! who signed (issuer and identity) and when, and the one trusted root
//! every bundle was verified against — all blobs the manifest names, so
//! the manifest's hash and the site's signature cover them.
//!
//! Why carry the root: the far side has no network, so it verifies again
//! against the root create used (dated by where it came from), never
//! against whatever root its own binary happens to embed.
//!
//! Invariant: every signature names a carried artifact and a carried
//! bundle blob, with bounded, printable text; an artifact the policy said
//! must be signed but was carried without (`--allow-unsigned-upstream`)
//! is listed in `unsigned`, so the gap is on record, not silent.

use std::collections::{BTreeMap, BTreeSet};

use serde::{Deserialize, Serialize};

use super::ManifestError;
use super::artifacts::BlobRef;
use super::claims::Claims;
use crate::Sha256;

/// The most signatures (or unsigned entries) a manifest may list: one per
/// carried artifact, and no bundle carries this many release assets.
pub const MAX_SIGNATURES: usize = 100_000;

/// The file name a carried Sigstore bundle is shown under
/// (`/-/bundles/<id>/evidence/<artifact sha256>.sigstore.json`).
pub const SIGSTORE_SUFFIX: &str = ".sigstore.json";

/// The file name the carried trusted root is shown under.
pub const TRUSTED_ROOT_NAME: &str = "trusted_root.json";

/// The publishers' signatures a bundle carries.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Signatures {
    /// The Sigstore trusted root (`trusted_root.json`) every bundle below
    /// verified against at create, and verifies against again at import.
    pub trusted_root: BlobRef,
    /// Where that root came from: the copy the binary embeds (and its
    /// version), or the file a site gave (`--trusted-root`).
    pub trusted_root_from: String,
    /// One entry per signed artifact.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub signed: Vec<PublisherSignature>,
    /// Artifacts whose publisher should have signed them and did not,
    /// carried because the run allowed it.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub unsigned: Vec<UnsignedArtifact>,
}

/// One publisher's signature over one carried artifact.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct PublisherSignature {
    /// The artifact's sha256 (a carried blob), the signed subject.
    pub artifact: Sha256,
    /// What it is, for people: `ggml-org/llama.cpp b6123 llama-….tar.gz`.
    pub what: String,
    /// What kind of evidence it is.
    pub kind: SignatureKind,
    /// The Sigstore bundle as the publisher served it: a blob.
    pub bundle: BlobRef,
    /// The OIDC issuer the certificate names.
    pub issuer: String,
    /// The certificate's identity (for GitHub Actions, the workflow and ref).
    pub identity: String,
    /// When it was signed, as the transparency log attests (RFC 3339).
    pub signed_at: String,
    /// The file name the signed statement must name (PEP 740: a PyPI
    /// attestation's subject is the file's name and digest).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub file_name: Option<String>,
    /// Which policy admitted the signer (PEP 740; a GitHub attestation's
    /// is the recipe table or `--identity`, not recorded).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub admitted_by: Option<AdmittedBy>,
}

/// Kinds of publisher evidence.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum SignatureKind {
    /// A GitHub artifact attestation (`/repos/{repo}/attestations/sha256:…`).
    GithubAttestation,
    /// A PEP 740 attestation of a file on a package index (PyPI's
    /// integrity API), carried as the Sigstore bundle it converts to
    /// (format 9).
    #[serde(rename = "pep740-provenance")]
    Pep740Provenance,
}

/// Which policy named the signer a signature was held against.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum AdmittedBy {
    /// The recipe table's signers (`shared/src/recipe/signers.rs`).
    RecipeTable,
    /// The site's own (`--identity`).
    Site,
    /// Nobody named one: the Trusted Publisher PyPI's provenance names
    /// for the file (unsigned by itself; the certificate must match it).
    PublisherNamedByPypi,
}

impl std::fmt::Display for AdmittedBy {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(match self {
            Self::RecipeTable => "the recipe table",
            Self::Site => "the site's --identity",
            Self::PublisherNamedByPypi => "the publisher named by PyPI",
        })
    }
}

/// An artifact carried without the signature its policy expects, or (a
/// file from a PEP 740 index) without any evidence, its index offering
/// none.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct UnsignedArtifact {
    /// The artifact's sha256 (a carried blob).
    pub artifact: Sha256,
    /// What it is, as in [`PublisherSignature::what`].
    pub what: String,
    /// Who should have signed it.
    pub expected: String,
    /// What let it in (`--allow-unsigned-upstream`).
    pub allowed_by: String,
}

impl Signatures {
    /// Sorts both lists by artifact.
    pub fn sort(&mut self) {
        self.signed
            .sort_by(|a, b| (&a.artifact, &a.bundle).cmp(&(&b.artifact, &b.bundle)));
        self.unsigned.sort_by(|a, b| a.artifact.cmp(&b.artifact));
    }

    /// The blobs this part names: the root and each bundle.
    pub fn blobs(&self) -> impl Iterator<Item = &BlobRef> {
        std::iter::once(&self.trusted_root).chain(self.signed.iter().map(|s| &s.bundle))
    }

    /// Whether a PEP 740 attestation is carried (format 9).
    pub fn carries_pep740(&self) -> bool {
        self.signed
            .iter()
            .any(|s| s.kind == SignatureKind::Pep740Provenance)
    }

    /// The signature of artifact `sha256`, if one is carried.
    pub fn of(&self, sha256: &Sha256) -> Option<&PublisherSignature> {
        self.signed.iter().find(|s| &s.artifact == sha256)
    }

    /// Each entry names an artifact among `carried` (the manifest's other
    /// blobs) and bounded, printable text; each blob's size is claimed.
    pub(super) fn validate(
        &self,
        carried: &BTreeMap<Sha256, u64>,
        claims: &mut Claims,
    ) -> Result<(), ManifestError> {
        if self.signed.len() > MAX_SIGNATURES || self.unsigned.len() > MAX_SIGNATURES {
            return Err(ManifestError::Inconsistent(format!(
                "it lists more than {MAX_SIGNATURES} publisher signatures"
            )));
        }
        claims.claim(
            &self.trusted_root.sha256,
            self.trusted_root.size,
            "the Sigstore trusted root".to_string(),
        )?;
        check_text("the trusted root's origin", &self.trusted_root_from)?;
        let mut seen = BTreeSet::new();
        for s in &self.signed {
            let who = format!(
                "the publisher signature of {}",
                crate::shown::shown(&s.what)
            );
            check_text(&who, &s.what)?;
            for v in [&s.issuer, &s.identity, &s.signed_at] {
                check_text(&who, v)?;
            }
            if !carried.contains_key(&s.artifact) {
                return Err(ManifestError::Inconsistent(format!(
                    "{who} names artifact {}, which is not carried",
                    s.artifact
                )));
            }
            check_pep740(&who, s)?;
            if !seen.insert(&s.artifact) {
                return Err(ManifestError::Inconsistent(format!(
                    "{who}: artifact {} has two signatures",
                    s.artifact
                )));
            }
            claims.claim(
                &s.bundle.sha256,
                s.bundle.size,
                format!("the Sigstore bundle of {}", s.what),
            )?;
        }
        for u in &self.unsigned {
            let who = format!("the unsigned entry of {}", crate::shown::shown(&u.what));
            for v in [&u.what, &u.expected, &u.allowed_by] {
                check_text(&who, v)?;
            }
            if !carried.contains_key(&u.artifact) {
                return Err(ManifestError::Inconsistent(format!(
                    "{who} names artifact {}, which is not carried",
                    u.artifact
                )));
            }
        }
        Ok(())
    }
}

/// A PEP 740 signature names the file its statement must name (a plain
/// file name) and the policy that admitted it; other kinds name neither.
fn check_pep740(who: &str, s: &PublisherSignature) -> Result<(), ManifestError> {
    let pep740 = s.kind == SignatureKind::Pep740Provenance;
    match (&s.file_name, s.admitted_by) {
        (Some(name), Some(_)) if pep740 => {
            check_text(who, name)?;
            if name.contains(['/', '\\']) || name.starts_with('.') {
                return Err(ManifestError::BadValue {
                    what: format!("{who}: its file name"),
                    expected: "a file name without a folder",
                    found: name.chars().take(200).collect(),
                });
            }
            Ok(())
        }
        (None, None) if !pep740 => Ok(()),
        _ => Err(ManifestError::Inconsistent(format!(
            "{who}: a PEP 740 signature names its file and the policy that admitted it, and \
             only it does"
        ))),
    }
}

/// Text from a publisher's certificate or this tool: bounded, printable.
fn check_text(who: &str, v: &str) -> Result<(), ManifestError> {
    if v.is_empty() || v.len() > 2000 || v.chars().any(char::is_control) {
        return Err(ManifestError::BadValue {
            what: who.to_string(),
            expected: "1 to 2000 characters of text without control characters",
            found: v.chars().take(200).collect(),
        });
    }
    Ok(())
}
