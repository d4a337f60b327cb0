//! Why a publisher's signature stopped a run: evidence that does not
//! verify, evidence by another signer than the policy's, evidence missing
//! where the policy says the publisher always signs, or a policy flag
//! that is not one.

use llmgw_shared::provenance::ProvenanceError;
use llmgw_shared::shown;
use thiserror::Error;

/// A publisher's signature that could not be taken.
#[derive(Debug, Error)]
pub enum SignatureError {
    /// The publisher served evidence for the artifact that does not
    /// verify: forged, truncated, for another artifact, or not chaining to
    /// the trusted root. Never carried, never skipped.
    #[error(
        "{}: the publisher's attestation from {} is refused; nothing was written (if the \
         trusted root is old, pass a current one with --trusted-root)",
        shown(what),
        shown(url)
    )]
    Unverified {
        /// The artifact.
        what: String,
        /// Where the evidence came from.
        url: String,
        /// Why it does not verify.
        #[source]
        source: ProvenanceError,
    },
    /// A signature that verifies, by someone the policy does not name: an
    /// attack, not a gap.
    #[error(
        "{}: the publisher's attestation is validly signed, but by {} issued by {}, and only {} \
         may sign it; refusing it (if the publisher moved its release workflow, name the new \
         one with --identity after checking it)",
        shown(what),
        shown(identity),
        shown(issuer),
        expected
    )]
    WrongSigner {
        /// The artifact.
        what: String,
        /// Who the policy admits.
        expected: String,
        /// The issuer the certificate names.
        issuer: String,
        /// The identity the certificate names.
        identity: String,
    },
    /// No evidence where the policy says there must be some.
    #[error(
        "{}: its publisher offers no attestation for it (asked {}), and {} must sign it; pass \
         --allow-unsigned-upstream to carry it unsigned (recorded in the manifest)",
        shown(what),
        shown(url),
        expected
    )]
    Missing {
        /// The artifact.
        what: String,
        /// Where it was asked.
        url: String,
        /// Who the policy admits.
        expected: String,
    },
    /// The attestations answer is not GitHub's shape.
    #[error(
        "{}: the answer of {} is not GitHub's attestations list: {reason}",
        shown(what),
        shown(url)
    )]
    BadAnswer {
        /// The artifact.
        what: String,
        /// The URL asked.
        url: String,
        /// What is wrong with it.
        reason: String,
    },
    /// PyPI's provenance names a publisher of a kind whose identity is
    /// not read here, and no policy names the project's signer.
    #[error(
        "{}: PyPI's provenance names {}, whose certificates this llmgw cannot hold against \
         it; name who may sign the project's files with --identity \
         pypi:{}=ISSUER,IDENTITY after checking one",
        shown(what),
        shown(publisher),
        shown(project)
    )]
    UnreadablePublisher {
        /// The file.
        what: String,
        /// The publisher, as PyPI names it.
        publisher: String,
        /// The project (normalized).
        project: String,
    },
    /// `--identity` is not `SOURCE=ISSUER,IDENTITY`.
    #[error(
        "--identity {}: expected github:OWNER/REPO=ISSUER,IDENTITY or \
         pypi:PROJECT=ISSUER,IDENTITY, e.g. \
         github:ggml-org/llama.cpp=https://token.actions.githubusercontent.com,\
         https://github.com/ggml-org/llama.cpp/.github/workflows/release.yml@ ({reason})",
        shown(text)
    )]
    IdentityFlag {
        /// The value as given.
        text: String,
        /// What is wrong with it.
        reason: &'static str,
    },
    /// `--trusted-root` cannot be read or is no trusted root.
    #[error("--trusted-root {}", path.display())]
    TrustedRoot {
        /// The file as given.
        path: std::path::PathBuf,
        /// Why it is not usable.
        #[source]
        source: ProvenanceError,
    },
}

impl SignatureError {
    /// Whether the request itself is wrong (exit code 2).
    pub fn is_usage(&self) -> bool {
        matches!(
            self,
            SignatureError::IdentityFlag { .. } | SignatureError::TrustedRoot { .. }
        )
    }
}
