//! Forgetting bundles and dropping the blobs no kept bundle names.
//!
//! `remove` only deletes `bundles/<sha>.json` (and its number in the import
//! order): the bundle disappears from
//! the mirror at once, and its blobs stay until `gc`, which keeps every
//! blob any remaining manifest names and deletes the rest (and stale
//! staging folders a killed import left in `tmp/`, but not a volume import
//! in progress, which several runs add to). Both hold the store
//! lock, so they never race an import that is adding blobs.
//!
//! A store in a bucket ([`gc_bucket`]) is collected the same way, from the
//! manifests copied into its work folder, with one more rule: a blob
//! younger than the grace period (its object's `last_modified`) is kept
//! even when no manifest names it, so an import whose manifest is not up
//! yet is never robbed of its blobs.

use std::collections::BTreeSet;
use std::path::PathBuf;

use thiserror::Error;

use crate::fsutil::{self, StoreLock};
use crate::store::state::{self, ImportOrder};
use crate::store::{Store, StoreError};

#[derive(Debug, Error)]
pub enum GcError {
    #[error(transparent)]
    Store(#[from] StoreError),
    #[error(
        "no bundle in the store matches {given:?} (held: {held}); `llmgw mirror list` shows them"
    )]
    NoSuchBundle { given: String, held: String },
    #[error("{given:?} matches {count} bundles; give more of the sha256")]
    Ambiguous { given: String, count: usize },
}

/// What gc removed (or, in a dry run, would remove).
#[derive(Debug, Clone, Default, serde::Serialize)]
pub struct GcReport {
    pub dry_run: bool,
    pub bundles_kept: usize,
    pub blobs_kept: usize,
    pub bytes_kept: u64,
    pub blobs_removed: Vec<PathBuf>,
    pub bytes_removed: u64,
    pub staging_removed: Vec<PathBuf>,
    /// Volume imports in progress (`tmp/import-<sha>/` with its
    /// `volumes.json`): kept, so the volumes already taken in need not be
    /// read again.
    pub staging_kept: Vec<PathBuf>,
    /// Blobs no manifest names, kept because they are younger than the
    /// grace period (a store in a bucket only).
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub blobs_young: Vec<PathBuf>,
}

/// Drops every blob of `blobs` that no manifest held in `store` names and
/// that is older than `grace` at `now`. The caller holds the store's lock
/// object and has copied the manifests into `store`'s folder.
pub fn gc_bucket(
    store: &Store,
    blobs: &dyn crate::store::backend::BlobStore,
    grace: std::time::Duration,
    now: std::time::SystemTime,
    dry_run: bool,
) -> Result<GcReport, StoreError> {
    let (keep, mut report) = named_blobs(store, dry_run)?;
    let name = |sha: &llmgw_shared::Sha256| match store.remote() {
        Some(s3) => PathBuf::from(s3.key_url(&crate::store::layout::blob_key(sha))),
        None => store.blob_file(sha),
    };
    for (sha, meta) in blobs.list_blobs()? {
        if keep.contains(sha.as_str()) {
            report.blobs_kept += 1;
            report.bytes_kept += meta.size;
            continue;
        }
        // A time in the future, or none, counts as new: kept.
        let old = meta
            .modified
            .and_then(|t| now.duration_since(t).ok())
            .is_some_and(|age| age >= grace);
        if !old {
            report.blobs_young.push(name(&sha));
            continue;
        }
        if !dry_run {
            blobs.delete_blob(&sha)?;
        }
        report.bytes_removed += meta.size;
        report.blobs_removed.push(name(&sha));
    }
    Ok(report)
}

/// The sha256 of every blob a held manifest names, and a report that
/// counts the held bundles: where both kinds of store begin.
fn named_blobs(
    store: &Store,
    dry_run: bool,
) -> Result<(BTreeSet<llmgw_shared::Sha256>, GcReport), StoreError> {
    let bundles = store.read_bundles()?;
    let mut keep = BTreeSet::new();
    for (_, m) in &bundles {
        keep.extend(m.blobs().into_keys());
    }
    let report = GcReport {
        dry_run,
        bundles_kept: bundles.len(),
        ..GcReport::default()
    };
    Ok((keep, report))
}

/// Drops every blob no held manifest names, and stale staging.
pub fn gc(store: &Store, dry_run: bool) -> Result<GcReport, StoreError> {
    let _lock = StoreLock::acquire(&store.lock_path(), "`llmgw mirror gc`")?;
    let (keep, mut report) = named_blobs(store, dry_run)?;
    let mut dirs = BTreeSet::new();
    for (name, path) in store.blob_files()? {
        let size = std::fs::symlink_metadata(&path)
            .map(|m| m.len())
            .unwrap_or(0);
        if keep.contains(name.as_str()) && store.blob_path(&name).as_deref() == Some(path.as_path())
        {
            report.blobs_kept += 1;
            report.bytes_kept += size;
            continue;
        }
        if !dry_run {
            std::fs::remove_file(&path).map_err(|e| StoreError::io(&path, e))?;
            if let Some(p) = path.parent() {
                dirs.insert(p.to_path_buf());
            }
        }
        report.bytes_removed += size;
        report.blobs_removed.push(path);
    }
    for d in &dirs {
        fsutil::fsync_dir(d)?;
    }
    let tmp = store.tmp_dir();
    if let Ok(entries) = std::fs::read_dir(&tmp) {
        for entry in entries.flatten() {
            let path = entry.path();
            if crate::import::volumes::stage::in_progress(&path) {
                report.staging_kept.push(path);
                continue;
            }
            if !dry_run {
                let r = if path.is_dir() {
                    std::fs::remove_dir_all(&path)
                } else {
                    std::fs::remove_file(&path)
                };
                r.map_err(|e| StoreError::io(&path, e))?;
            }
            report.staging_removed.push(path);
        }
    }
    Ok(report)
}

/// Forgets a bundle, given its sha256 or a unique prefix of it. Its blobs
/// stay until `gc`. Returns the full sha256.
pub fn remove(store: &Store, given: &str) -> Result<String, GcError> {
    let _lock = StoreLock::acquire(&store.lock_path(), "`llmgw mirror remove`")?;
    let given_lc = given.trim().to_ascii_lowercase();
    let ids = store.bundle_ids()?;
    let matches: Vec<&String> = ids
        .iter()
        .filter(|id| !given_lc.is_empty() && id.starts_with(&given_lc))
        .collect();
    let id = match matches.as_slice() {
        [one] => (*one).clone(),
        [] => {
            return Err(GcError::NoSuchBundle {
                given: given.to_string(),
                held: if ids.is_empty() {
                    "none".into()
                } else {
                    ids.join(", ")
                },
            });
        }
        many => {
            return Err(GcError::Ambiguous {
                given: given.to_string(),
                count: many.len(),
            });
        }
    };
    let path = store.bundle_path(&id).ok_or_else(|| {
        StoreError::io(store.bundles_dir(), std::io::ErrorKind::InvalidInput.into())
    })?;
    std::fs::remove_file(&path).map_err(|e| StoreError::io(&path, e))?;
    // Its signature, once the manifest is gone (a signature alone is inert).
    let sig = store
        .bundles_dir()
        .join(crate::store::series::signature_file_name(&id));
    if let Err(e) = std::fs::remove_file(&sig)
        && e.kind() != std::io::ErrorKind::NotFound
    {
        return Err(StoreError::io(&sig, e).into());
    }
    fsutil::fsync_dir(&store.bundles_dir())?;
    // Its import number goes too (after the manifest: a crash in between
    // leaves a number for a bundle not held, which nothing reads and the
    // next import drops). A damaged state file is left for import to name.
    if let Ok(mut order) = ImportOrder::load(store)
        && order.forget(&id)
    {
        state::save(store, &order)?;
    }
    Ok(id)
}
