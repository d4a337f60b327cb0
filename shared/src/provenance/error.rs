//! Why a publisher's signature was not taken.

use thiserror::Error;

/// Why a Sigstore bundle or a trusted root was refused.
#[derive(Debug, Error)]
pub enum ProvenanceError {
    /// Larger than any real Sigstore bundle.
    #[error(
        "the Sigstore bundle is {size} bytes, more than the {} a bundle can be; it is not one",
        super::MAX_SIGSTORE_BUNDLE
    )]
    TooLarge {
        /// Its length.
        size: usize,
    },
    /// Not a Sigstore bundle at all.
    #[error("it is not a Sigstore bundle: {reason}")]
    NotABundle {
        /// What the parser said.
        reason: String,
    },
    /// A bundle whose signature, chain, log entry, time or subject does
    /// not verify.
    #[error("the Sigstore bundle does not verify: {reason}")]
    Unverified {
        /// What the verifier said.
        reason: String,
    },
    /// A trusted root too large to be one.
    #[error(
        "the trusted root from {from} is {size} bytes, more than the {} one can be",
        super::MAX_TRUSTED_ROOT
    )]
    RootTooLarge {
        /// Where it came from.
        from: String,
        /// Its length.
        size: usize,
    },
    /// A trusted root that does not parse or cannot verify.
    #[error("the trusted root from {from} is not usable: {reason}")]
    BadRoot {
        /// Where it came from.
        from: String,
        /// What the parser said.
        reason: String,
    },
    /// A PEP 740 provenance object or attestation too large to be one.
    #[error(
        "the PEP 740 provenance is {size} bytes, more than the {} one can be; it is not one",
        super::pep740::MAX_PROVENANCE
    )]
    ProvenanceTooLarge {
        /// Its length.
        size: usize,
    },
    /// Not PyPI's shape of a provenance object or an attestation.
    #[error("it is not a PEP 740 provenance object: {reason}")]
    NotAProvenance {
        /// What did not parse.
        reason: String,
    },
    /// A signature that verifies over a statement that says something
    /// else than that this file was published (another file, another
    /// predicate).
    #[error("the signed statement does not attest this file: {reason}")]
    WrongStatement {
        /// What it says instead.
        reason: String,
    },
}
