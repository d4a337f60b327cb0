//! Step 2, publishers' signatures (format 7): every carried Sigstore
//! bundle is verified again, against the trusted root the bundle carries,
//! for the artifact it names (a PEP 740 attestation also for the file
//! name its statement must name), and must name the signer the manifest
//! records. No network: the verification bundle holds its certificate,
//! its transparency-log proof and its time.
//!
//! Like the release signatures ([`super::signature`]), the bundles and the
//! root are ordinary blobs that may come in any order: their bytes are
//! gathered as they are verified (or from the target, when it holds them)
//! and the checks run once every blob was seen. The artifacts themselves
//! are not needed: a signature is over the artifact's sha256, and the
//! artifact's bytes are checked against that sha256 like every blob.
//!
//! Invariant: a bundle that carries a signature record passes only if
//! that record verifies now, against the carried root, for the same
//! artifact and signer; a record whose files are not in the bundle (a
//! delta's prerequisites, for `bundle verify`) is listed as unchecked,
//! never taken as verified.

use std::collections::{BTreeMap, BTreeSet};

use llmgw_shared::manifest::{Manifest, PublisherSignature, SignatureKind, Signatures as Carried};
use llmgw_shared::provenance::{
    self, MAX_SIGSTORE_BUNDLE, MAX_TRUSTED_ROOT, ProvenanceError, Signed, TrustedRoot,
};
use llmgw_shared::{Sha256, shown};

use super::error::{Recorded, VerifyError};
use super::target::Target;

/// One signature verified again: what, and whose.
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize)]
pub struct PublisherVerified {
    /// The artifact, as the manifest names it.
    pub what: String,
    /// The signer's identity.
    pub identity: String,
}

/// The checks of a bundle's publisher signatures, gathering their files.
pub(crate) struct PublisherChecks {
    carried: Option<Carried>,
    bytes: BTreeMap<Sha256, Vec<u8>>,
}

impl PublisherChecks {
    /// The checks `manifest` asks for, with the files `target` holds.
    pub(crate) fn start<T: Target + ?Sized>(
        manifest: &Manifest,
        target: &T,
    ) -> Result<Self, T::Error> {
        let carried = manifest
            .evidence
            .as_ref()
            .and_then(|e| e.signatures.clone());
        let mut bytes = BTreeMap::new();
        if let Some(c) = &carried {
            if c.trusted_root.size > MAX_TRUSTED_ROOT as u64 {
                return Err(VerifyError::PublisherSignature {
                    what: "the trusted root".into(),
                    reason: format!(
                        "it is {} bytes, more than the {MAX_TRUSTED_ROOT} a root can be",
                        c.trusted_root.size
                    ),
                }
                .into());
            }
            for s in &c.signed {
                if s.bundle.size > MAX_SIGSTORE_BUNDLE as u64 {
                    return Err(VerifyError::PublisherSignature {
                        what: s.what.clone(),
                        reason: format!(
                            "its Sigstore bundle is {} bytes, more than the {MAX_SIGSTORE_BUNDLE} \
                             one can be",
                            s.bundle.size
                        ),
                    }
                    .into());
                }
            }
            for b in c.blobs() {
                if target.have(&b.sha256, b.size) {
                    bytes.insert(b.sha256.clone(), target.read_have(&b.sha256)?);
                }
            }
        }
        Ok(Self { carried, bytes })
    }

    /// Whether a check still waits for this blob's bytes.
    pub(crate) fn wants(&self, sha256: &str) -> bool {
        self.carried.as_ref().is_some_and(|c| {
            c.blobs()
                .any(|b| b.sha256.as_str() == sha256 && !self.bytes.contains_key(&b.sha256))
        })
    }

    /// Hands over a verified blob's bytes.
    pub(crate) fn offer(&mut self, sha256: &str, bytes: &[u8]) {
        let Some(c) = &self.carried else { return };
        if let Some(b) = c.blobs().find(|b| b.sha256.as_str() == sha256) {
            self.bytes.insert(b.sha256.clone(), bytes.to_vec());
        }
    }

    /// Once every blob was seen: each signature verified again, or the
    /// refusal that names the artifact, the signer expected and why.
    pub(crate) fn settle(
        &self,
        elsewhere: &BTreeSet<&str>,
        unchecked: &mut Vec<String>,
    ) -> Result<Vec<PublisherVerified>, VerifyError> {
        let Some(c) = &self.carried else {
            return Ok(Vec::new());
        };
        let root_sha = &c.trusted_root.sha256;
        let Some(root_bytes) = self.bytes.get(root_sha) else {
            if elsewhere.contains(root_sha.as_str()) {
                unchecked.push(
                    "the publishers' signatures: their trusted root is a prerequisite".into(),
                );
                return Ok(Vec::new());
            }
            return Err(VerifyError::Missing {
                count: 1,
                list: format!("{root_sha} (the Sigstore trusted root)"),
            });
        };
        let root = TrustedRoot::parse(root_bytes, &c.trusted_root_from).map_err(|e| {
            VerifyError::PublisherSignature {
                what: "the trusted root".into(),
                reason: e.to_string(),
            }
        })?;
        let mut out = Vec::new();
        for s in &c.signed {
            let Some(bundle) = self.bytes.get(&s.bundle.sha256) else {
                if elsewhere.contains(s.bundle.sha256.as_str()) {
                    unchecked.push(format!(
                        "the publisher signature of {}: its bundle is a prerequisite",
                        shown(&s.what)
                    ));
                    continue;
                }
                return Err(VerifyError::Missing {
                    count: 1,
                    list: format!("{} (the Sigstore bundle of {})", s.bundle.sha256, s.what),
                });
            };
            let recorded = || {
                Box::new(Recorded {
                    what: s.what.clone(),
                    identity: s.identity.clone(),
                    issuer: s.issuer.clone(),
                })
            };
            let signed = verify_one(s, bundle, &root).map_err(|source| {
                VerifyError::PublisherUnverified {
                    recorded: recorded(),
                    source,
                }
            })?;
            if signed.issuer != s.issuer || signed.identity != s.identity {
                return Err(VerifyError::PublisherSigner {
                    recorded: recorded(),
                    found: Box::new(signed),
                });
            }
            out.push(PublisherVerified {
                what: s.what.clone(),
                identity: s.identity.clone(),
            });
        }
        Ok(out)
    }
}

/// One carried bundle verified as its kind says: a GitHub attestation for
/// the artifact's sha256, a PEP 740 attestation for the sha256 and the
/// file name its statement must name.
fn verify_one(
    s: &PublisherSignature,
    bundle: &[u8],
    root: &TrustedRoot,
) -> Result<Signed, ProvenanceError> {
    match (s.kind, &s.file_name) {
        (SignatureKind::GithubAttestation, _) => provenance::verify(bundle, &s.artifact, root),
        (SignatureKind::Pep740Provenance, Some(name)) => {
            provenance::pep740::verify_file(bundle, &s.artifact, name, root)
        }
        // The manifest's validation refuses this before any blob is read.
        (SignatureKind::Pep740Provenance, None) => Err(ProvenanceError::WrongStatement {
            reason: "the manifest names no file for it".into(),
        }),
    }
}
