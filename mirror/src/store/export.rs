//! What `llmgw mirror export` writes a held bundle again from: the
//! manifest's bytes exactly as carried (so its sha256 is the bundle's id),
//! the signature kept beside it, and the path of every blob it carries.
//!
//! Invariant: an export is answered only for a bundle whose every blob the
//! store holds, whole by size; what is missing (collected by `gc` after
//! another bundle replaced it, or lost) is named, never silently left out
//! of the bundle written. Only a folder store's blobs are at hand as files.

use std::path::PathBuf;

use llmgw_shared::{BundleId, Sha256};
use thiserror::Error;

use crate::store::gc::{GcError, find};
use crate::store::{Store, StoreError};

/// A held bundle, ready to be written again.
#[derive(Debug)]
pub struct Exportable {
    /// Its manifest's sha256.
    pub id: BundleId,
    /// The manifest's bytes as carried.
    pub manifest: Vec<u8>,
    /// Its signature (`manifest.json.minisig`), when it came signed.
    pub signature: Option<Vec<u8>>,
    /// Each blob it carries: `(sha256, size, path)`.
    pub blobs: Vec<(Sha256, u64, PathBuf)>,
}

/// Why a held bundle cannot be written again.
#[derive(Debug, Error)]
pub enum ExportError {
    /// No held bundle, or several, match what was given.
    #[error(transparent)]
    Find(#[from] GcError),
    /// The store could not be read.
    #[error(transparent)]
    Store(#[from] StoreError),
    /// A bucket store's blobs are not files at hand.
    #[error(
        "the store is in a bucket; export reads blobs from a folder store: run it where the \
         bucket's store is synced to a folder, or serve the bucket and create from it"
    )]
    Bucket,
    /// Blobs of the bundle are gone from the store.
    #[error(
        "bundle {id} cannot be written again: the store lacks {count} of its blobs \
         ({missing}); they were collected by `llmgw mirror gc` or lost. Import the bundle \
         again (or one that carries them), then export"
    )]
    Missing {
        /// The bundle.
        id: BundleId,
        /// How many.
        count: usize,
        /// The first few, with their sizes.
        missing: String,
    },
}

/// The held bundle `given` (its sha256 or a unique prefix), with every
/// blob at hand.
pub fn exportable(store: &Store, given: &str) -> Result<Exportable, ExportError> {
    if store.is_bucket() {
        return Err(ExportError::Bucket);
    }
    let id = find(store, given)?;
    let (bytes, manifest) = store.read_bundle_bytes(&id)?;
    let sig = store
        .bundles_dir()
        .join(crate::store::series::signature_file_name(&id));
    // Kept by import after it verified it, so within the bound import read it with.
    let signature = if sig.exists() {
        Some(crate::store::fsutil::read_bounded(
            &sig,
            crate::bundle::MAX_SIGNATURE_BYTES,
        )?)
    } else {
        None
    };
    let mut blobs = Vec::new();
    let mut missing = Vec::new();
    for (sha, size) in manifest.carried_blobs() {
        let p = store.blob_file(&sha);
        match std::fs::metadata(&p) {
            Ok(m) if m.len() == size => blobs.push((sha, size, p)),
            _ => missing.push(format!("{sha} ({size} bytes)")),
        }
    }
    if !missing.is_empty() {
        let count = missing.len();
        missing.truncate(5);
        if count > 5 {
            missing.push("…".into());
        }
        return Err(ExportError::Missing {
            id,
            count,
            missing: missing.join(", "),
        });
    }
    Ok(Exportable {
        id,
        manifest: bytes,
        signature,
        blobs,
    })
}
