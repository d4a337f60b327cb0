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
//! One gc for both kinds of store, over the published blobs
//! ([`Store::published`]): a store in a bucket is collected the same way,
//! from the manifests its session copied into the work folder, with one
//! more rule: a blob younger than the grace period (its object's
//! `last_modified`) is kept even when no manifest names it, so an import
//! whose manifest is not up yet is never robbed of its blobs.

use std::collections::BTreeSet;
use std::path::PathBuf;

use llmgw_shared::BundleId;
use thiserror::Error;

use crate::store::fsutil::{self, StoreLock};
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
    /// read again; and a state file a live process is writing
    /// (`tmp/state-<name>-<pid>`, see [`super::leftovers`]).
    pub staging_kept: Vec<PathBuf>,
    /// Blobs no manifest names, kept because they are younger than the
    /// grace period (a store in a bucket only).
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub blobs_young: Vec<PathBuf>,
}

/// How `mirror gc` runs.
#[derive(Debug, Clone, Copy)]
pub struct GcOptions {
    /// Only say what would be removed.
    pub dry_run: bool,
    /// In a store whose blobs are shared with writers that do not hold its
    /// lock ([`Store::shared_blobs`]: a bucket), an unnamed blob younger
    /// than this is kept: an import whose manifest is not up yet is never
    /// robbed of its blobs.
    pub grace: std::time::Duration,
    /// The time ages are measured at.
    pub now: std::time::SystemTime,
}

/// Drops every published blob no held manifest names (in a bucket, once
/// older than the grace period), and the folder's stale staging. Holds the
/// store lock; a store in a bucket is collected inside its session, which
/// holds its lock object and copied its manifests into the folder.
pub fn gc(store: &Store, opts: GcOptions) -> Result<GcReport, StoreError> {
    let lock = StoreLock::acquire(&store.lock_path(), "`llmgw mirror gc`")?;
    let (keep, mut report) = named_blobs(store, opts.dry_run)?;
    let blobs = store.published();
    for (sha, meta) in blobs.list_blobs()? {
        if keep.contains(sha.as_str()) {
            report.blobs_kept += 1;
            report.bytes_kept += meta.size;
            continue;
        }
        // A time in the future, or none, counts as new: kept.
        let old = meta
            .modified
            .and_then(|t| opts.now.duration_since(t).ok())
            .is_some_and(|age| age >= opts.grace);
        let young = store.shared_blobs() && !old;
        if young {
            report.blobs_young.push(blobs.blob_location(&sha).into());
            continue;
        }
        if !opts.dry_run {
            blobs.delete_blob(&sha)?;
            super::xet::remove(store, &sha);
        }
        report.bytes_removed += meta.size;
        report.blobs_removed.push(blobs.blob_location(&sha).into());
    }
    if !store.shared_blobs() {
        sweep_folder(store, &lock, opts.dry_run, &mut report)?;
    }
    Ok(report)
}

/// The sha256 of every blob a held manifest names, and a report that
/// counts the held bundles.
fn named_blobs(
    store: &Store,
    dry_run: bool,
) -> Result<(BTreeSet<llmgw_shared::Sha256>, GcReport), StoreError> {
    let bundles = store.read_bundles()?;
    let mut keep = BTreeSet::new();
    for held in &bundles {
        keep.extend(held.manifest.blobs().into_keys());
    }
    let report = GcReport {
        dry_run,
        bundles_kept: bundles.len(),
        ..GcReport::default()
    };
    Ok((keep, report))
}

/// The store folder's own leftovers, where the folder is the store: what
/// lies under `blobs/` but is no blob (a misfiled name, a link), and the
/// staging in `tmp/` of imports that stopped (not a volume import in
/// progress, which several runs add to, nor what a live process is
/// writing: [`super::leftovers`]). A bucket store's work folder is
/// left alone: its `blobs/` holds what a stopped publish still has to send
/// up, and its staging what a stopped import resumes from.
fn sweep_folder(
    store: &Store,
    lock: &StoreLock,
    dry_run: bool,
    report: &mut GcReport,
) -> Result<(), StoreError> {
    let mut dirs = BTreeSet::new();
    for file in store.blob_files()? {
        let path = file.path;
        if file.sha256.is_some() && std::fs::symlink_metadata(&path).is_ok_and(|m| m.is_file()) {
            // A blob: kept or swept above.
            continue;
        }
        let size = std::fs::symlink_metadata(&path)
            .map(|m| m.len())
            .unwrap_or(0);
        if !dry_run {
            std::fs::remove_file(&path).map_err(|e| StoreError::io(&path, e))?;
            if let Some(p) = path.parent() {
                dirs.insert(p.to_path_buf());
            }
        }
        report.bytes_removed += size;
        report.blobs_removed.push(path);
    }
    if !dry_run {
        // The blobs removed above went through the backend, which does
        // not sync their folders: a removal survives a power cut once
        // its folder is synced.
        for p in &report.blobs_removed {
            if let Some(d) = p.parent() {
                dirs.insert(d.to_path_buf());
            }
        }
    }
    for d in &dirs {
        fsutil::fsync_dir(d)?;
    }
    let swept = super::leftovers::sweep(store, lock, super::leftovers::Sweeper::Gc, dry_run)?;
    report.staging_removed.extend(swept.removed);
    report.staging_kept.extend(swept.kept);
    Ok(())
}

/// The held bundle `given` names: its sha256 or a unique prefix of it.
pub fn find(store: &Store, given: &str) -> Result<BundleId, GcError> {
    let given_lc = given.trim().to_ascii_lowercase();
    let ids = store.bundle_ids()?;
    let matches: Vec<&BundleId> = ids
        .iter()
        .filter(|id| !given_lc.is_empty() && id.starts_with(&given_lc))
        .collect();
    match matches.as_slice() {
        [one] => Ok((*one).clone()),
        [] => Err(GcError::NoSuchBundle {
            given: given.to_string(),
            held: if ids.is_empty() {
                "none".into()
            } else {
                ids.join(", ")
            },
        }),
        many => Err(GcError::Ambiguous {
            given: given.to_string(),
            count: many.len(),
        }),
    }
}

/// Forgets a bundle, given its sha256 or a unique prefix of it. Its blobs
/// stay until `gc`. Returns the full sha256.
pub fn remove(store: &Store, given: &str) -> Result<BundleId, GcError> {
    let _lock = StoreLock::acquire(&store.lock_path(), "`llmgw mirror remove`")?;
    let id = find(store, given)?;
    let path = store.bundle_file(&id);
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
    crate::store::claims::names::forget(store, &id);
    crate::store::summaries::forget(store, &id);
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
