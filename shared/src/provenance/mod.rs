//! Publishers' Sigstore signatures, checked offline: a Sigstore bundle (a
//! GitHub artifact attestation, say) verified against a trusted root for
//! an artifact known only by its sha256, and the identity that signed it
//! held against who may sign for its source.
//!
//! Why offline: the far side has no network, and create should not trust
//! one either. A bundle carries its certificate chain, its transparency-log
//! entry with an inclusion proof and signed checkpoint, and its signing
//! time; with a trusted root (Fulcio's CAs, Rekor's and the CT logs' keys)
//! that is everything a verifier needs, so both sides run the same check.
//! Sigstore's own Rust verifier (`sigstore-verify`) does the cryptography.
//!
//! Why a policy: a valid signature only says *someone* signed. What makes
//! it evidence is *who*: the OIDC issuer and the certificate's identity
//! (for GitHub Actions, the workflow file and ref). A signature that
//! verifies but names another signer than the policy's is refused, never
//! taken as a weaker yes.
//!
//! Invariant: [`verify`] answers a [`Signed`] only when the bundle's
//! signature, certificate chain, log entry and timestamps all verify
//! against the root *and* the signed statement names `artifact`'s sha256;
//! every other outcome is an error that says which.

mod error;
pub mod pep740;

pub use error::ProvenanceError;

use sigstore_verify::trust_root::{SIGSTORE_PRODUCTION_TRUSTED_ROOT, TrustedRoot as Root};
use sigstore_verify::types::{Artifact, ArtifactDigest, Bundle, Sha256Hash};
use sigstore_verify::{VerificationPolicy, Verifier};

use crate::Sha256;

/// A Sigstore bundle larger than this is refused unread: one is a few KiB
/// (a certificate, a log entry, a signed statement).
pub const MAX_SIGSTORE_BUNDLE: usize = 4 << 20;

/// A trusted root larger than this is refused unread (Sigstore's is ~10 KiB).
pub const MAX_TRUSTED_ROOT: usize = 4 << 20;

/// Where the trusted root embedded in this binary came from, as recorded
/// with each bundle that uses it: the copy `sigstore-verify` 0.15.1 ships
/// (Sigstore's public-good root as its TUF repository served it when that
/// release was cut).
pub const EMBEDDED_ROOT_FROM: &str = "sigstore-trust-root 0.15.1 (public-good, embedded)";

/// GitHub Actions' OIDC issuer: who vouches for a workflow's identity.
pub const GITHUB_ACTIONS_ISSUER: &str = "https://token.actions.githubusercontent.com";

/// A parsed trusted root and the exact bytes it was parsed from (what a
/// bundle carries, so the far side checks against the same root).
pub struct TrustedRoot {
    json: Vec<u8>,
    root: Root,
}

impl std::fmt::Debug for TrustedRoot {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "TrustedRoot({} bytes)", self.json.len())
    }
}

impl TrustedRoot {
    /// The root this binary embeds.
    pub fn embedded() -> Self {
        Self::parse(
            SIGSTORE_PRODUCTION_TRUSTED_ROOT.as_bytes(),
            EMBEDDED_ROOT_FROM,
        )
        .expect("the embedded trusted root parses")
    }

    /// A root from `bytes` (a `trusted_root.json`); `from` names where it
    /// came from in the error.
    pub fn parse(bytes: &[u8], from: &str) -> Result<Self, ProvenanceError> {
        if bytes.len() > MAX_TRUSTED_ROOT {
            return Err(ProvenanceError::RootTooLarge {
                from: from.to_string(),
                size: bytes.len(),
            });
        }
        let text = std::str::from_utf8(bytes).map_err(|_| ProvenanceError::BadRoot {
            from: from.to_string(),
            reason: "it is not UTF-8 text".into(),
        })?;
        let root = Root::from_json(text).map_err(|e| ProvenanceError::BadRoot {
            from: from.to_string(),
            reason: e.to_string(),
        })?;
        // A root with no certificate authority can verify nothing; say so
        // here rather than at each bundle.
        if root.fulcio_certs().is_empty() {
            return Err(ProvenanceError::BadRoot {
                from: from.to_string(),
                reason: "it lists no certificate authority".into(),
            });
        }
        Ok(Self {
            json: bytes.to_vec(),
            root,
        })
    }

    /// The bytes it was parsed from.
    pub fn json(&self) -> &[u8] {
        &self.json
    }
}

/// Who signed, as the verified certificate says.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Signed {
    /// The OIDC issuer that vouched for the signer.
    pub issuer: String,
    /// The certificate's identity (its subject alternative name).
    pub identity: String,
    /// When it was signed, as the transparency log or a timestamp
    /// authority attests (RFC 3339).
    pub signed_at: String,
    /// The certificate's Source Repository URI (Fulcio's `.1.12`), for a
    /// CI workload: `https://github.com/owner/repo`.
    pub source_repository: Option<String>,
    /// The certificate's Build Config URI (Fulcio's `.1.18`): the
    /// workflow that ran, with its ref, even when the signing identity is
    /// a reusable workflow it called.
    pub build_config: Option<String>,
}

/// Verifies `bundle` (a Sigstore bundle's JSON) as a signature over the
/// artifact whose sha256 is `artifact`, against `root`, and says who
/// signed. No network: everything comes from the bundle and the root.
pub fn verify(
    bundle: &[u8],
    artifact: &Sha256,
    root: &TrustedRoot,
) -> Result<Signed, ProvenanceError> {
    if bundle.len() > MAX_SIGSTORE_BUNDLE {
        return Err(ProvenanceError::TooLarge { size: bundle.len() });
    }
    let text = std::str::from_utf8(bundle).map_err(|_| ProvenanceError::NotABundle {
        reason: "it is not UTF-8 text".into(),
    })?;
    let parsed = Bundle::from_json(text).map_err(|e| ProvenanceError::NotABundle {
        reason: e.to_string(),
    })?;
    let hash = Sha256Hash::from_hex(artifact).map_err(|e| ProvenanceError::NotABundle {
        reason: format!("the artifact's sha256 is not usable: {e}"),
    })?;
    let verifier = Verifier::new(&root.root).map_err(|e| ProvenanceError::Unverified {
        reason: format!("the trusted root cannot verify: {e}"),
    })?;
    // Crypto only here: the identity is held against the source's policy
    // by the caller ([`Identity::admits`]), which can then name both.
    let policy = VerificationPolicy::any_identity();
    let result = verifier
        .verify(
            Artifact::Digest(ArtifactDigest::sha256(hash)),
            &parsed,
            &policy,
        )
        .map_err(|e| ProvenanceError::Unverified {
            reason: e.to_string(),
        })?;
    let (Some(identity), Some(issuer)) = (result.identity(), result.issuer()) else {
        return Err(ProvenanceError::Unverified {
            reason: "its certificate names no identity or no issuer".into(),
        });
    };
    let signed_at = result
        .integrated_time()
        .or_else(|| result.verified_timestamps().first().copied())
        .map(|t| t.strftime("%Y-%m-%dT%H:%M:%SZ").to_string())
        .unwrap_or_default();
    let claims = result.certificate().map(|c| &c.ci_claims);
    Ok(Signed {
        issuer: issuer.to_string(),
        identity: identity.as_str().to_string(),
        signed_at,
        source_repository: claims.and_then(|c| c.source_repository_uri.clone()),
        build_config: claims.and_then(|c| c.build_config_uri.clone()),
    })
}

/// Who may sign for a source: an OIDC issuer and a certificate identity.
/// An identity that ends in `@` admits every ref of that workflow
/// (`https://github.com/ggml-org/llama.cpp/.github/workflows/release.yml@`
/// admits `…@refs/tags/b8000`), since each release is signed from its
/// own tag; any other identity must match exactly.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Identity {
    /// The issuer, exactly.
    pub issuer: String,
    /// The identity, exactly or up to a trailing `@`.
    pub identity: String,
}

impl Identity {
    /// Whether `signed` is by this signer.
    pub fn admits(&self, signed: &Signed) -> bool {
        if signed.issuer != self.issuer {
            return false;
        }
        match self.identity.strip_suffix('@') {
            Some(workflow) => signed
                .identity
                .strip_prefix(workflow)
                .is_some_and(|rest| rest.starts_with('@')),
            None => signed.identity == self.identity,
        }
    }
}

impl std::fmt::Display for Identity {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        if self.identity.ends_with('@') {
            write!(f, "{}<any ref> issued by {}", self.identity, self.issuer)
        } else {
            write!(f, "{} issued by {}", self.identity, self.issuer)
        }
    }
}

#[cfg(test)]
mod tests;
