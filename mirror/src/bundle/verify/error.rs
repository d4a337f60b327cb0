//! Why a bundle was refused by the check itself.
//!
//! Invariant: every variant is about the bundle (its entries, its manifest,
//! its signatures) or about reading it; what a [`super::Target`] does with
//! the blobs (staging, free space) fails with the target's own error type,
//! never with one of these. Each message names the entry, what was expected
//! and what was found; a cause is a `#[source]`, not repeated in the message.

use std::io;

use llmgw_shared::UnsafeName;
use llmgw_shared::manifest::{ManifestError, SIGNATURE_NAME};
use llmgw_shared::shown;
use thiserror::Error;

use crate::bundle::reader::ReadError;
use crate::bundle::signed::SignedError;

/// Why a bundle was refused. Each message names the entry, what was
/// expected and what was found.
#[derive(Debug, Error)]
pub enum VerifyError {
    #[error(transparent)]
    Read(#[from] ReadError),
    #[error("reading {entry} from the bundle")]
    ReadEntry {
        entry: String,
        #[source]
        source: io::Error,
    },
    #[error(
        "the first entry of the bundle must be manifest.json, found {} ({kind}); \
         this is not an llmgw bundle, or its entries were reordered",
        shown(.found)
    )]
    FirstEntry { found: String, kind: String },
    #[error("manifest.json is {actual} bytes; at most {max} are accepted")]
    ManifestTooLarge { actual: u64, max: u64 },
    #[error(
        "manifest.json hashes to sha256 {actual}, but the expected bundle hash (--sha256) is \
         {expected}: this is not the bundle whose hash you were given (damaged, tampered with, \
         or the wrong file); do not import it"
    )]
    ManifestHash { expected: String, actual: String },
    /// The parser's message, which may quote the manifest, is a cause:
    /// the chain prints it escaped.
    #[error(transparent)]
    Manifest(#[from] ManifestError),
    #[error("bundle entry")]
    UnsafeEntry(#[source] UnsafeName),
    #[error(
        "bundle entry {} is a {kind}; a bundle holds only regular files \
         (manifest.json and blobs/sha256/<sha256>)",
        shown(.entry)
    )]
    EntryType { entry: String, kind: String },
    #[error(
        "bundle entry {} is a directory; the only directories a bundle may hold are \
         blobs and blobs/sha256",
        shown(.entry)
    )]
    UnexpectedDir { entry: String },
    #[error(
        "bundle entry {} is not part of the bundle format (expected only manifest.json \
         and blobs/sha256/<64 lower-case hex>); refusing a bundle with extra files",
        shown(.entry)
    )]
    UnknownEntry { entry: String },
    #[error(
        "bundle entry {entry} is a blob the manifest does not name; refusing a bundle with \
         extra content"
    )]
    UnlistedBlob { entry: String },
    #[error(
        "bundle entry {SIGNATURE_NAME} ({size} bytes) is not where a bundle's signature goes: \
         the second entry, right after manifest.json, at most {max} bytes"
    )]
    MisplacedSignature { size: u64, max: u64 },
    #[error(
        "the bundle is signed, and a signed bundle is checked (signature, series) before the \
         rest is read, which a pipe does not allow; import it from a file"
    )]
    UncheckedSignature,
    #[error("bundle entry {} appears twice in the bundle", shown(.entry))]
    Duplicate { entry: String },
    #[error(
        "bundle entry {entry} ({what}) is {actual} bytes, but the manifest declares {expected} \
         bytes"
    )]
    SizeMismatch {
        entry: String,
        what: String,
        expected: u64,
        actual: u64,
    },
    #[error(
        "bundle entry {entry} ({what}) is damaged: its bytes hash to sha256 {actual}, expected \
         {expected} (its name)"
    )]
    HashMismatch {
        entry: String,
        what: String,
        expected: String,
        actual: String,
    },
    #[error(
        "the bundle lacks {count} blob(s) the manifest names and nothing already verified holds \
         (for import: the store): {list}; import the bundle that carries them first, or use a \
         complete bundle"
    )]
    Missing { count: usize, list: String },
    #[error(transparent)]
    Signed(#[from] SignedError),
    /// An image or chart is not the closed tree its record claims (its
    /// message names the image, the blob, expected and actual).
    #[error(transparent)]
    Oci(#[from] Box<llmgw_shared::manifest::OciTreeError>),
    /// A carried publisher's signature part that is not usable: too
    /// large to be one.
    #[error(
        "the publisher signature of {}: {reason}; refusing the bundle (it was altered or made \
         wrong: make it again)",
        llmgw_shared::shown(what)
    )]
    PublisherSignature { what: String, reason: String },
    /// A carried publisher's signature that does not verify again.
    #[error(
        "the publisher signature of {} (by {} issued by {}, as the manifest records) does not \
         verify against the bundle's trusted root; refusing the bundle (it was altered or made \
         wrong: make it again)",
        llmgw_shared::shown(&recorded.what),
        llmgw_shared::shown(&recorded.identity),
        llmgw_shared::shown(&recorded.issuer)
    )]
    PublisherUnverified {
        recorded: Box<Recorded>,
        #[source]
        source: llmgw_shared::provenance::ProvenanceError,
    },
    /// A carried publisher's signature by another signer than recorded.
    #[error(
        "the publisher signature of {}: the manifest records {} issued by {}, but the bundle is \
         signed by {} issued by {}; refusing the bundle",
        llmgw_shared::shown(&recorded.what),
        llmgw_shared::shown(&recorded.identity),
        llmgw_shared::shown(&recorded.issuer),
        llmgw_shared::shown(&found.identity),
        llmgw_shared::shown(&found.issuer)
    )]
    PublisherSigner {
        recorded: Box<Recorded>,
        found: Box<llmgw_shared::provenance::Signed>,
    },
    /// A target said it held a blob it cannot hand over (`bundle verify`
    /// holds nothing, so it never says so).
    #[error("blob {sha256} is not at hand")]
    NotAtHand { sha256: String },
    /// The thread writing a blob out panicked: a bug, not the bundle's fault.
    #[error("the writer thread panicked")]
    WriterPanicked,
}

impl VerifyError {
    /// The same error; a release signed by an untrusted key now says how
    /// to trust one in the words of the command at hand (`bundle verify
    /// --trust`, `bundle trust add` for import).
    #[must_use]
    pub fn with_trust_fix(self, fix: impl Into<String>) -> Self {
        match self {
            VerifyError::Signed(SignedError::Signing { release, source }) => {
                VerifyError::Signed(SignedError::Signing {
                    release,
                    source: source.with_fix(fix),
                })
            }
            other => other,
        }
    }
}

/// A publisher's signature as the manifest records it: what, and whose.
#[derive(Debug)]
pub struct Recorded {
    /// The artifact.
    pub what: String,
    /// The signer's identity.
    pub identity: String,
    /// The signer's issuer.
    pub issuer: String,
}
