//! The store's one transaction that makes a bundle held: a checked
//! bundle's staged blobs into `blobs/`, the import number, the signature
//! and series, the state learned on the way, and the manifest last; then
//! the records kept beside it (its names, its summary).
//!
//! Invariant: the manifest in `bundles/` is written last, after every blob
//! it names is in `blobs/` and synced, so a reader starting from `bundles/`
//! sees the whole bundle or none of it; a commit that fails takes back
//! every blob, folder, number, signature, series step and policy change it
//! added. Only this module renames into `blobs/` and `bundles/`: the
//! import hands it a [`Staged`] and never spells a store path.

use std::path::{Path, PathBuf};

use llmgw_shared::BundleId;
use llmgw_shared::manifest::Manifest;

use crate::store::claims::{self, Unrecorded};
use crate::store::fsutil;
use crate::store::series::{self, Policy, Series};
use crate::store::state::{self, ImportOrder};
use crate::store::{Store, StoreError};

/// A checked bundle ready to be made held: what its import staged and
/// decided, handed to [`Store::commit`].
pub struct Staged<'a> {
    /// The import's staging folder: each blob the store lacks is there as
    /// a file named by its sha256, whole and synced.
    pub dir: &'a Path,
    /// The bundle's id: its manifest's sha256.
    pub id: &'a BundleId,
    /// The manifest, parsed.
    pub manifest: &'a Manifest,
    /// The manifest's bytes, as they hashed to `id`.
    pub manifest_bytes: &'a [u8],
    /// The bundle's signature, kept beside its manifest.
    pub signature: Option<&'a [u8]>,
    /// The series step the bundle makes, if it is signed into one.
    pub series: Option<&'a Series>,
    /// The store's policy as the bundle changes it.
    pub policy: Option<&'a Policy>,
    /// A state file learned while the bundle streamed (the models' layer
    /// digests), written before the manifest, taken back with the rest;
    /// a failure to write it is only logged.
    pub learned: Learned,
    /// The Xet records made while the bundle streamed, of its blobs the
    /// store has none for: written before the manifest, so its large files
    /// are served over Xet from its first answer; taken back with the rest.
    pub xet: Vec<(llmgw_shared::Sha256, llmgw_shared::xet::XetRecord)>,
    /// The held bundles whose names the store's names file lacks, found
    /// by the claims check: recorded once the bundle is held.
    pub unrecorded: Vec<Unrecorded>,
}

/// A state file an import learned on the way: its name in `state/`, and
/// its bytes (none when nothing was learned).
pub struct Learned {
    /// The file's name in `state/`.
    pub name: String,
    /// What to write; `None` writes nothing.
    pub bytes: Option<Vec<u8>>,
}

/// What a commit added.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Committed {
    /// Blobs moved into `blobs/`.
    pub blobs: usize,
    /// Their bytes.
    pub bytes: u64,
}

impl Store {
    /// Makes `staged` held: renames its blobs into `blobs/`, syncs,
    /// numbers the bundle in the import order (see [`crate::store::state`]),
    /// then publishes the manifest, and records its names and summary. On
    /// failure takes back all of it: the blobs and folders it added to
    /// `blobs/` and the import order as it was.
    pub fn commit(&self, staged: Staged<'_>) -> Result<Committed, StoreError> {
        let added = transact(self, &staged)?;
        after_commit(self, staged);
        Ok(added)
    }
}

/// The records kept beside a held bundle, once its manifest is published:
/// the names of each bundle the claims check read in full, then its own,
/// and its summary. Best effort each: without them the next reader reads
/// the manifests in full.
fn after_commit(store: &Store, staged: Staged<'_>) {
    let new_names = claims::names::Names::of(staged.manifest);
    let mut recorded = Vec::with_capacity(staged.unrecorded.len() + 1);
    for u in staged.unrecorded {
        if !u.in_own_file {
            claims::names::record(store, &u.id, u.names.clone());
        }
        recorded.push((u.id, u.names));
    }
    claims::names::record(store, staged.id, new_names.clone());
    recorded.push((staged.id.clone(), new_names));
    claims::names::record_all(store, &recorded);
    let summary = crate::store::inspect::Summary::of(staged.id, staged.manifest);
    let manifest_bytes = staged.manifest_bytes.len() as u64;
    crate::store::summaries::record(store, staged.id, &summary, manifest_bytes);
}

/// Blobs, number, signature, learned state and manifest, in that order,
/// or none of them.
fn transact(store: &Store, staged: &Staged<'_>) -> Result<Committed, StoreError> {
    if staged.dir.exists() {
        fsutil::fsync_dir(staged.dir)?;
    }
    let before = ImportOrder::load(store)?;
    let state_dir_existed = store.state_dir().exists();
    let mut done = Done::default();
    let result = (|| {
        move_blobs(store, staged, &mut done)?;
        let dest = store.bundle_file(staged.id);
        // Numbered before it is visible, so no held bundle lacks a number.
        let mut order = before.clone();
        order.record(store, staged.id, dest.exists())?;
        if order != before {
            done.undo.push(StateBefore::read(store, "imports.json")?);
            state::save(store, &order)?;
        }
        // The signature and the series, before the manifest too.
        save_trust(store, staged, &mut done)?;
        // The models' layer digests learned in the pass, so the model image
        // is served with the bundle; taken back with the rest if the commit
        // fails. A failure to write them only means the server hashes the
        // layers itself.
        done.undo
            .push(StateBefore::read(store, &staged.learned.name)?);
        if let Some(bytes) = &staged.learned.bytes
            && let Err(e) = state::write_file(store, &staged.learned.name, bytes)
        {
            tracing::warn!(error = %llmgw_shared::Chain(&e), "model layer digests not recorded; the server hashes them");
        }
        for (sha, record) in &staged.xet {
            done.undo
                .push(StateBefore::read(store, &super::xet::state_name(sha))?);
            super::xet::write(store, sha, record)?;
        }
        // The manifest last: this is what makes the bundle visible.
        let tmp = staged.dir.join("manifest.json");
        std::fs::create_dir_all(staged.dir).map_err(|e| StoreError::io(staged.dir, e))?;
        fsutil::write_durable(&tmp, staged.manifest_bytes)?;
        std::fs::rename(&tmp, &dest).map_err(|e| StoreError::io(&dest, e))?;
        fsutil::fsync_dir(&store.bundles_dir())
    })();
    match result {
        Ok(()) => Ok(Committed {
            blobs: done.added.len(),
            bytes: done.bytes,
        }),
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
        // The records' folder, if the commit made it and left it empty.
        let _ = std::fs::remove_dir(super::xet::dir(store));
        if !state_dir_existed {
            let _ = std::fs::remove_dir(store.state_dir());
        }
    }
}

/// The staged blobs renamed into `blobs/` (those held already dropped),
/// then their folders synced.
fn move_blobs(store: &Store, staged: &Staged<'_>, done: &mut Done) -> Result<(), StoreError> {
    let mut dirs = std::collections::BTreeSet::new();
    for (sha, size) in staged.manifest.blobs() {
        let from = staged.dir.join(sha.as_str());
        if store.has_blob(&sha, size) {
            let _ = std::fs::remove_file(&from);
            continue;
        }
        let dest = store.blob_file(&sha);
        let parent = dest.parent().unwrap_or(store.root()).to_path_buf();
        if !parent.exists() {
            std::fs::create_dir_all(&parent).map_err(|e| StoreError::io(&parent, e))?;
            done.made_dirs.push(parent.clone());
        }
        let existed = dest.exists();
        std::fs::rename(&from, &dest).map_err(|e| StoreError::io(&dest, e))?;
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
fn save_trust(store: &Store, staged: &Staged<'_>, done: &mut Done) -> Result<(), StoreError> {
    if let Some(sig) = staged.signature {
        let to = store
            .bundles_dir()
            .join(series::signature_file_name(staged.id));
        let existed = to.exists();
        let tmp = staged.dir.join("manifest.json.minisig");
        std::fs::create_dir_all(staged.dir).map_err(|e| StoreError::io(staged.dir, e))?;
        fsutil::write_durable(&tmp, sig)?;
        std::fs::rename(&tmp, &to).map_err(|e| StoreError::io(&to, e))?;
        if !existed {
            done.signature_added = Some(to);
        }
    }
    if let Some(s) = staged.series {
        done.undo.push(StateBefore::read(store, "series.json")?);
        s.save(store)?;
    }
    if let Some(p) = staged.policy {
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
