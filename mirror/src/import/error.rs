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

use crate::claims::ClaimError;
use crate::fsutil;
use crate::series::SeriesError;
use crate::store::StoreError;
use crate::trust::TrustError;
use crate::verify::VerifyError;

/// Why an import failed: the bundle refused ([`VerifyError`]), or the
/// store, the staging folder or the commit failed.
#[derive(Debug, Error)]
pub enum ImportError {
    #[error(transparent)]
    Verify(#[from] VerifyError),
    #[error(transparent)]
    Store(#[from] StoreError),
    #[error(transparent)]
    Trust(#[from] TrustError),
    #[error(
        "the bundle verified, but adding it to the store failed; the store was left as \
         before (blobs added by this run were removed)"
    )]
    Commit(#[source] StoreError),
    #[error(transparent)]
    Claim(#[from] ClaimError),
    #[error(transparent)]
    Series(#[from] SeriesError),
    /// A delta whose prerequisites the store lacks: refused before
    /// anything was staged.
    #[error("{}", crate::have::missing_message(.0))]
    Prerequisites(Box<NeedList>),
    /// Writing the staging folder failed; nothing was committed.
    #[error("{}", stage_message(path, source))]
    Stage {
        path: PathBuf,
        #[source]
        source: io::Error,
    },
    #[error(
        "not enough free space to import: {needed} bytes of blobs must be staged under {path}, \
         and its filesystem has {available} bytes free; free space (or run `llmgw mirror gc`) \
         and import again; the store is unchanged"
    )]
    NoSpace {
        path: PathBuf,
        needed: u64,
        available: u64,
    },
    /// A blob the manifest names is not a sha256 (the manifest's own check
    /// refuses that first: a guard).
    #[error("not a sha256: {sha256}")]
    NotSha256 { sha256: String },
    /// The staging's own bookkeeping broke: a bug, not the bundle's fault.
    #[error("staged blob {sha256} was not written")]
    NotWritten { sha256: String },
    #[error("write after finish")]
    WriteAfterFinish,
    #[error("the staging sync thread panicked")]
    SyncerPanicked,
    /// `bundle import` of volumes was given none.
    #[error("no volume given")]
    NoVolume,
    /// The manifest of a set of volumes was not among them.
    #[error(transparent)]
    VolumeSet(#[from] crate::volumes::error::SetError),
    /// Writing what the volumes brought into the staging folder stopped.
    #[error(transparent)]
    VolumeStage(#[from] crate::volumes::error::StageError),
    #[error(transparent)]
    VolumeState(#[from] crate::volumes::error::StateError),
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
