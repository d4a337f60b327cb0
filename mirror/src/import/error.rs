//! Why an import failed, in the import's own words.
//!
//! Invariant: a refusal of the bundle is a [`VerifyError`] carried as it
//! is; everything else here is the import's own layer (the store, the
//! staging folder, the commit, a delta's prerequisites, the volumes), and
//! names what to do. A cause is a `#[source]`, not repeated in the message.

use std::io;
use std::path::{Path, PathBuf};

use llmgw_shared::NeedList;
use thiserror::Error;

use crate::bundle::verify::VerifyError;
use crate::store::StoreError;
use crate::store::claims::ClaimError;
use crate::store::fsutil;
use crate::store::series::SeriesError;
use crate::store::trust::TrustError;

/// Why an import failed: the bundle refused (`VerifyError`), or the
/// store, the staging folder or the commit failed.
#[derive(Debug, Error)]
pub enum ImportError {
    /// The bundle itself was refused: nothing of it was taken.
    #[error(transparent)]
    Verify(#[from] VerifyError),
    /// Reading or writing the store failed.
    #[error(transparent)]
    Store(#[from] StoreError),
    /// The store's trusted keys could not be read.
    #[error(transparent)]
    Trust(#[from] TrustError),
    /// The last step, making the bundle visible, failed and was rolled back.
    #[error(
        "the bundle verified, but adding it to the store failed; the store was left as \
         before (blobs added by this run were removed)"
    )]
    Commit(#[source] StoreError),
    /// The bundle gives a name (a tag, a file path) other bytes than a held
    /// bundle does.
    #[error(transparent)]
    Claim(#[from] ClaimError),
    /// The bundle's signed series refuses it (rollback, equivocation,
    /// expiry), or the series state could not be read.
    #[error(transparent)]
    Series(#[from] SeriesError),
    /// A delta whose prerequisites the store lacks: refused before
    /// anything was staged.
    #[error("{}", crate::store::have::missing_message(.0))]
    Prerequisites(Box<NeedList>),
    /// Writing the staging folder failed; nothing was committed.
    #[error("{}", stage_message(path, source))]
    Stage {
        /// The file or folder being written.
        path: PathBuf,
        /// What the filesystem said.
        #[source]
        source: io::Error,
    },
    /// The blobs to stage do not fit on the store's filesystem: refused
    /// before writing any.
    #[error(
        "not enough free space to import: {needed} bytes of blobs must be staged under {path}, \
         and its filesystem has {available} bytes free; free space (or run `llmgw mirror gc`) \
         and import again; the store is unchanged"
    )]
    NoSpace {
        /// The staging folder.
        path: PathBuf,
        /// Bytes the blobs not yet held take.
        needed: u64,
        /// Bytes free on its filesystem.
        available: u64,
    },
    /// The staging's own bookkeeping broke: a bug, not the bundle's fault.
    #[error("staged blob {sha256} was not written")]
    NotWritten {
        /// The blob the bookkeeping expected on disk.
        sha256: String,
    },
    /// A blob sink was written to after it was finished: a bug.
    #[error("write after finish")]
    WriteAfterFinish,
    /// The thread that syncs staged blobs died: a bug, and the import stops
    /// rather than commit blobs not known to be on disk.
    #[error("the staging sync thread panicked")]
    SyncerPanicked,
    #[error(
        "the store's policy is model-files {rule}, and the bundle carries files it refuses:\n\
         {files}\nNothing was added to the store. Carry other files (the real safetensors or GGUF \
         files named, or the weights converted to safetensors: a pickle under another name is \
         refused by its content), or change the rule with `llmgw mirror policy model-files \
         allow|no-pickle|scanned-clean`"
    )]
    /// `mirror policy model-files` refuses some of the bundle's files.
    ModelFiles {
        /// The rule (`no-pickle`, `scanned-clean`).
        rule: &'static str,
        /// One line per file (repository, commit, path, why), escaped.
        files: String,
    },

    #[error("reading {path} (blob {sha256}) to see whether it loads with pickle")]
    /// A staged or held file could not be read for the model-file rule.
    ModelFileRead {
        /// The file's path in its repository.
        path: String,
        /// Its blob.
        sha256: String,
        /// Why.
        #[source]
        source: std::io::Error,
    },
    /// A Hub file's Xet hash recorded in the manifest (the Hub's listing)
    /// is not the hash of its bytes.
    #[error(
        "{file}: the bundle records the Hub's Xet hash {hub}, but its bytes (sha256 {sha256}, \
         which matched) hash to {computed}: the Hub's listing and the file disagree, and the \
         mirror would serve it over Xet under a hash no client asks for. Nothing was added to \
         the store; make the bundle again (if the Hub still lists that hash, report it to the \
         repository's owner)"
    )]
    XetHash {
        /// `model acme/tiny at commit … file …`, escaped.
        file: String,
        /// The file's sha256 (checked).
        sha256: String,
        /// The Xet hash the Hub listed.
        hub: String,
        /// The Xet hash of the bytes.
        computed: String,
    },
    /// A held blob could not be read to compute its Xet hash.
    #[error("reading held blob {path} to compute its Xet hash")]
    XetRead {
        /// The held blob.
        path: PathBuf,
        /// Why.
        #[source]
        source: std::io::Error,
    },
    /// `bundle import` of volumes was given none.
    #[error("no volume given")]
    NoVolume,
    /// The manifest of a set of volumes was not among them.
    #[error(transparent)]
    VolumeSet(#[from] crate::import::volumes::error::SetError),
    /// Writing what the volumes brought into the staging folder stopped.
    #[error(transparent)]
    VolumeStage(#[from] crate::import::volumes::error::StageError),
    /// The staging folder's record of verified volumes (`volumes.json`) is
    /// unreadable or not this bundle's.
    #[error(transparent)]
    VolumeState(#[from] crate::import::volumes::error::StateError),
}

fn stage_message(path: &Path, e: &io::Error) -> String {
    if fsutil::is_disk_full(e) {
        format!(
            "the disk filled up while writing {}; the import stopped and the store is \
             unchanged: free space on the store's filesystem and run the import again",
            path.display()
        )
    } else {
        format!(
            "writing {}; the import stopped and the store is unchanged",
            path.display()
        )
    }
}
