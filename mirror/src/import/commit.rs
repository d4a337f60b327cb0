//! Step 4 of an import, the commit: staged blobs into `blobs/`, the
//! import number, the signature and series, and the manifest last.
//!
//! Invariant: the manifest in `bundles/` is written last, after every blob
//! it names is in `blobs/` and synced, so a reader starting from `bundles/`
//! sees the whole bundle or none of it; a commit that fails takes back
//! every blob, folder, number, signature, series step and policy change it
//! added.

use std::path::PathBuf;

use super::plan::SignedPlan;
use super::staging::Staging;
use crate::bundle::verify;
use crate::fsutil;
use crate::store::series;
use crate::store::state::{self, ImportOrder};
use crate::store::{Store, StoreError};

/// Step 4: renames the staged blobs into `blobs/`, syncs, numbers the
/// bundle in the import order (see [`crate::store::state`]), then publishes the
/// manifest. On failure takes back all of it: the blobs and folders it
/// added to `blobs/` and the import order as it was.
pub(super) fn commit(
    store: &Store,
    staging: &Staging<'_>,
    v: &verify::Verified,
    plan: &SignedPlan,
) -> Result<(usize, u64), StoreError> {
    if staging.dir.exists() {
        fsutil::fsync_dir(&staging.dir)?;
    }
    let before = ImportOrder::load(store)?;
    let state_dir_existed = store.state_dir().exists();
    let mut done = Done::default();
    let result = (|| {
        move_blobs(store, staging, v, &mut done)?;
        let dest = store.bundle_file(&v.manifest_sha256);
        // Numbered before it is visible, so no held bundle lacks a number.
        let mut order = before.clone();
        order.record(store, &v.manifest_sha256, dest.exists())?;
        if order != before {
            done.undo.push(StateBefore::read(store, "imports.json")?);
            state::save(store, &order)?;
        }
        // The signature and the series, before the manifest too.
        save_trust(store, staging, v, plan, &mut done)?;
        // The models' layer digests learned in the pass, so the model image
        // is served with the bundle; taken back with the rest if the commit
        // fails. A failure to write them only means the server hashes the
        // layers itself.
        let layers = crate::serve::index::models::imported_file(&v.manifest_sha256);
        done.undo.push(StateBefore::read(store, &layers)?);
        if let Err(e) = staging.layers.save(store, &v.manifest_sha256) {
            tracing::warn!(error = %llmgw_shared::Chain(&e), "model layer digests not recorded; the server hashes them");
        }
        // The Xet records made in the pass, so its large files are served
        // over Xet from the first answer; taken back with the rest.
        let undo = &mut done.undo;
        let mut before = |name: &str| {
            undo.push(StateBefore::read(store, name)?);
            Ok(())
        };
        staging.xet.save(store, &staging.dir, &mut before)?;
        // The manifest last: this is what makes the bundle visible.
        let tmp = staging.dir.join("manifest.json");
        std::fs::create_dir_all(&staging.dir).map_err(|e| StoreError::io(&staging.dir, e))?;
        fsutil::write_durable(&tmp, &v.manifest_bytes)?;
        std::fs::rename(&tmp, &dest).map_err(|e| StoreError::io(&dest, e))?;
        fsutil::fsync_dir(&store.bundles_dir())
    })();
    match result {
        Ok(()) => Ok((done.added.len(), done.bytes)),
        Err(e) => {
            done.take_back(store, state_dir_existed);
            Err(e)
        }
    }
}

/// What a commit changed so far, to take back if it fails.
#[derive(Default)]
struct Done {
    /// Blobs it added to `blobs/`.
    added: Vec<PathBuf>,
    /// Folders of `blobs/` it made.
    made_dirs: Vec<PathBuf>,
    /// The state files as they were, for those the commit rewrote.
    undo: Vec<StateBefore>,
    signature_added: Option<PathBuf>,
    /// Bytes of the blobs moved in.
    bytes: u64,
}

impl Done {
    /// Best effort: the commit's own error is what the operator is told.
    fn take_back(&self, store: &Store, state_dir_existed: bool) {
        for p in self.added.iter().chain(&self.signature_added) {
            let _ = std::fs::remove_file(p);
        }
        for d in &self.made_dirs {
            let _ = std::fs::remove_dir(d);
        }
        for b in self.undo.iter().rev() {
            b.restore(store);
        }
        if !state_dir_existed {
            let _ = std::fs::remove_dir(store.state_dir());
        }
    }
}

/// The staged blobs renamed into `blobs/` (those held already dropped),
/// then their folders synced.
fn move_blobs(
    store: &Store,
    staging: &Staging<'_>,
    v: &verify::Verified,
    done: &mut Done,
) -> Result<(), StoreError> {
    let mut dirs = std::collections::BTreeSet::new();
    for (sha, size) in v.manifest.blobs() {
        let staged = staging.staged_path(&sha);
        if store.has_blob(&sha, size) {
            let _ = std::fs::remove_file(&staged);
            continue;
        }
        let dest = store.blob_file(&sha);
        let parent = dest.parent().unwrap_or(store.root()).to_path_buf();
        if !parent.exists() {
            std::fs::create_dir_all(&parent).map_err(|e| StoreError::io(&parent, e))?;
            done.made_dirs.push(parent.clone());
        }
        let existed = dest.exists();
        std::fs::rename(&staged, &dest).map_err(|e| StoreError::io(&dest, e))?;
        if !existed {
            done.added.push(dest);
        }
        done.bytes += size;
        dirs.insert(parent);
    }
    for d in &dirs {
        fsutil::fsync_dir(d)?;
    }
    fsutil::fsync_dir(&store.blobs_dir())
}

/// The bundle's signature, series step and policy change, if it brings any.
fn save_trust(
    store: &Store,
    staging: &Staging<'_>,
    v: &verify::Verified,
    plan: &SignedPlan,
    done: &mut Done,
) -> Result<(), StoreError> {
    if let Some(sig) = &plan.signature {
        let to = store
            .bundles_dir()
            .join(series::signature_file_name(&v.manifest_sha256));
        let existed = to.exists();
        let tmp = staging.dir.join("manifest.json.minisig");
        std::fs::create_dir_all(&staging.dir).map_err(|e| StoreError::io(&staging.dir, e))?;
        fsutil::write_durable(&tmp, sig)?;
        std::fs::rename(&tmp, &to).map_err(|e| StoreError::io(&to, e))?;
        if !existed {
            done.signature_added = Some(to);
        }
    }
    if let Some(s) = &plan.series {
        done.undo.push(StateBefore::read(store, "series.json")?);
        s.save(store)?;
    }
    if let Some(p) = &plan.policy {
        done.undo.push(StateBefore::read(store, "policy.json")?);
        p.save(store)?;
    }
    Ok(())
}

/// A state file as it was before the commit rewrote it, to put back if
/// the commit fails: its bytes, or that it did not exist.
struct StateBefore {
    name: String,
    bytes: Option<Vec<u8>>,
}

impl StateBefore {
    fn read(store: &Store, name: &str) -> Result<Self, StoreError> {
        Ok(Self {
            name: name.to_string(),
            bytes: state::read_file(store, name)?,
        })
    }

    /// Best effort: the commit's own error is what the operator is told.
    fn restore(&self, store: &Store) {
        let _ = match &self.bytes {
            Some(b) => state::write_file(store, &self.name, b),
            None => std::fs::remove_file(store.state_dir().join(&self.name))
                .map_err(|e| StoreError::io(store.state_dir(), e)),
        };
    }
}
