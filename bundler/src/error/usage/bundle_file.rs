//! `bundle sign` was given something it cannot sign: not a bundle, a
//! manifest that is not one, a bundle changed since it was made, or one
//! without a sequence.
//!
//! Invariant: what is signed is what `bundle create` made; each refusal
//! names the bundle, and the manifest parser's refusal is the `#[source]`.

use std::path::PathBuf;

use llmgw_shared::manifest::{MANIFEST_NAME, ManifestError, SIGNATURE_NAME};
use thiserror::Error;

/// The bundle given to `bundle sign` cannot be signed.
#[derive(Debug, Error)]
pub enum BundleFileError {
    /// Neither a tar, a tar.zst nor a directory.
    #[error(
        "{}: expected a bundle: a NAME.tar, NAME.tar.zst or a directory holding {}",
        path.display(),
        MANIFEST_NAME
    )]
    NotABundle {
        /// The path given.
        path: PathBuf,
    },
    /// The tar's first entry is not the manifest.
    #[error(
        "{}: not a bundle made by llmgw: its first entry is not {}",
        path.display(),
        MANIFEST_NAME
    )]
    FirstEntry {
        /// The bundle.
        path: PathBuf,
    },
    /// The manifest entry is larger than any manifest.
    #[error(
        "{}: not a bundle made by llmgw: its {} is {size} bytes",
        path.display(),
        MANIFEST_NAME
    )]
    ManifestSize {
        /// The bundle.
        path: PathBuf,
        /// The entry's size in its tar header.
        size: u64,
    },
    /// The signature entry is larger than any minisign signature.
    #[error(
        "{}: not a bundle made by llmgw: its {} is {size} bytes, not a minisign \
         signature",
        path.display(),
        SIGNATURE_NAME
    )]
    SignatureSize {
        /// The bundle.
        path: PathBuf,
        /// The entry's size in its tar header.
        size: u64,
    },
    /// A file read whole (the manifest, `BUNDLE.sha256`) is over its bound.
    #[error("{}: over {max} bytes; not what a bundle holds there", path.display())]
    TooLarge {
        /// The file.
        path: PathBuf,
        /// The bound, in bytes.
        max: u64,
    },
    /// The manifest does not parse as one.
    #[error("{}: its {} is not a bundle manifest", path.display(), MANIFEST_NAME)]
    Manifest {
        /// The bundle.
        path: PathBuf,
        /// Why it does not parse.
        #[source]
        error: Box<ManifestError>,
    },
    /// The manifest is not the one `BUNDLE.sha256` names.
    #[error(
        "{}: its manifest hashes to {sha256}, but {} says {recorded:?}; the bundle was changed \
         after it was made, so it is not signed",
        path.display(),
        sums.display()
    )]
    Changed {
        /// The bundle.
        path: PathBuf,
        /// What its manifest hashes to.
        sha256: String,
        /// `BUNDLE.sha256`.
        sums: PathBuf,
        /// What it says.
        recorded: String,
    },
    /// The manifest has no sequence, so a signature could not protect it
    /// against rollback.
    #[error(
        "{}: its manifest has no sequence, and a signed series without one cannot be \
         protected against rollback; make the bundle again with `llmgw bundle create … \
         --sequence N [--channel NAME]` (or `--sign-key KEY`, which takes the next number \
         from KEY.sequence)",
        path.display()
    )]
    NoSequence {
        /// The bundle.
        path: PathBuf,
    },
}
