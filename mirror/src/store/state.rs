//! Trusted state the store keeps beside its bundles: the order in which
//! they were imported.
//!
//! Which commit a branch names, when two bundles disagree, follows this
//! order (the later import wins) and never a date a bundle claims: a
//! bundle's `created` is free text its maker chose, while the import order
//! is what this machine saw. The file is
//!
//! ```text
//! STORE/state/imports.json   {"format": 1, "next": 3, "bundles": {"<manifest sha256>": 1, ...}}
//! ```
//!
//! Invariant: it is written only by [`save`] — whole, to a file in
//! `STORE/tmp/`, fsynced, renamed over the old one, the folder fsynced — so
//! a reader sees the old state or the new one, never a mix. Import numbers
//! a bundle before its manifest appears in `bundles/` (a bundle is never
//! held without its number, even after a crash); a bundle imported again
//! while held keeps its number; `mirror remove` drops it.
//!
//! Stores made before this file existed: bundles it does not number count
//! as imported before every numbered one, ordered among themselves by the
//! modification time of `bundles/<sha>.json` (the moment import wrote it),
//! then by sha256. The first import into such a store freezes that order
//! into the file.
//!
//! Signed bundles keep per-(signing key, channel) sequence numbers and the
//! store's policy beside it ([`crate::store::series`]), written by [`write_file`]
//! too.

use std::collections::BTreeMap;
use std::path::PathBuf;
use std::time::SystemTime;

use llmgw_shared::BundleId;
use serde::{Deserialize, Serialize};

use crate::store::fsutil;
use crate::store::{HeldManifest, StateFault, StateFile, Store, StoreError};

/// The version of `imports.json` this llmgw writes and reads.
pub const STATE_FORMAT: u32 = 1;

/// A state file larger than this is not read: a million bundles fit.
const MAX_STATE_BYTES: u64 = 128 << 20;

/// The import order of the bundles a store holds.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ImportOrder {
    format: u32,
    /// The number the next import gets.
    next: u64,
    /// Manifest sha256 -> its import number (1 = first).
    bundles: BTreeMap<String, u64>,
}

impl ImportOrder {
    /// The store's import order; an empty one when the file is missing.
    pub fn load(store: &Store) -> Result<Self, StoreError> {
        let path = path(store);
        let Some(bytes) = read_file(store, "imports.json")? else {
            return Ok(Self::default());
        };
        let order: Self = serde_json::from_slice(&bytes).map_err(|e| StoreError::BadState {
            path: path.clone(),
            file: StateFile::ImportOrder,
            fault: StateFault::NotJson,
            cause: Some(e),
        })?;
        if order.format != STATE_FORMAT {
            return Err(StoreError::BadState {
                path,
                file: StateFile::ImportOrder,
                fault: StateFault::Format {
                    found: order.format,
                    known: STATE_FORMAT,
                },
                cause: None,
            });
        }
        Ok(order)
    }

    /// The import number of a bundle, if it has one.
    pub fn number(&self, id: &str) -> Option<u64> {
        self.bundles.get(id).copied()
    }

    /// Sorts bundle ids oldest import first (see the module docs for
    /// bundles without a number).
    pub fn sort(&self, store: &Store, ids: &mut [BundleId]) {
        let mtime = |id: &BundleId| -> Option<SystemTime> {
            std::fs::metadata(store.bundle_file(id))
                .ok()
                .and_then(|m| m.modified().ok())
        };
        let mut keyed: Vec<(Option<u64>, Option<SystemTime>, BundleId)> = ids
            .iter()
            .map(|id| {
                let n = self.number(id);
                (n, if n.is_none() { mtime(id) } else { None }, id.clone())
            })
            .collect();
        keyed.sort();
        for (slot, (_, _, id)) in ids.iter_mut().zip(keyed) {
            *slot = id;
        }
    }

    /// Gives `id` the next number unless it is `held` already with one.
    /// Bundles the store holds without a number are numbered first, in
    /// the fallback order, and numbers of bundles no longer held dropped.
    pub fn record(&mut self, store: &Store, id: &BundleId, held: bool) -> Result<(), StoreError> {
        let mut ids = store.bundle_ids()?;
        self.sort(store, &mut ids);
        let kept: BTreeMap<String, u64> = ids
            .iter()
            .filter_map(|i| self.number(i).map(|n| (i.to_string(), n)))
            .collect();
        self.format = STATE_FORMAT;
        self.next = self.next.max(1);
        self.bundles = kept;
        for i in &ids {
            if !self.bundles.contains_key(i.as_str()) && (i != id || held) {
                self.bundles.insert(i.to_string(), self.next);
                self.next += 1;
            }
        }
        if !(held && self.bundles.contains_key(id.as_str())) {
            self.bundles.insert(id.to_string(), self.next);
            self.next += 1;
        }
        Ok(())
    }

    /// Drops a bundle's number (`mirror remove`).
    pub fn forget(&mut self, id: &str) -> bool {
        self.bundles.remove(id).is_some()
    }
}

/// Where the import order lives.
pub fn path(store: &Store) -> PathBuf {
    store.state_dir().join("imports.json")
}

/// The bytes of `STORE/state/<name>` (at most 128 MiB), or `None` when
/// the file does not exist.
pub fn read_file(store: &Store, name: &str) -> Result<Option<Vec<u8>>, StoreError> {
    match fsutil::read_bounded(&store.state_dir().join(name), MAX_STATE_BYTES) {
        Ok(b) => Ok(Some(b)),
        Err(StoreError::Io { source, .. }) if source.kind() == std::io::ErrorKind::NotFound => {
            Ok(None)
        }
        Err(e) => Err(e),
    }
}

/// Writes the import order durably and atomically.
pub fn save(store: &Store, order: &ImportOrder) -> Result<(), StoreError> {
    let mut bytes = serde_json::to_vec_pretty(order).unwrap_or_default();
    bytes.push(b'\n');
    write_file(store, "imports.json", &bytes)
}

/// Writes `value` as compact JSON to `STORE/state/<name>` ([`write_file`]).
pub fn write_json(store: &Store, name: &str, value: &impl Serialize) -> Result<(), StoreError> {
    let bytes = serde_json::to_vec(value)
        .map_err(std::io::Error::other)
        .map_err(|e| StoreError::io(store.state_dir(), e))?;
    write_file(store, name, &bytes)
}

/// Writes `STORE/state/<name>` whole: to a file in `STORE/tmp/`, fsynced,
/// renamed over the old one, the folder fsynced. The only writer of
/// `STORE/state/` (the import order here, the signed series and the
/// policy in [`crate::store::series`], the Xet records in
/// [`crate::store::xet`], whose `name` holds one folder: `xet/<sha256>`).
pub fn write_file(store: &Store, name: &str, bytes: &[u8]) -> Result<(), StoreError> {
    let dest = store.state_dir().join(name);
    let dir = dest.parent().map_or_else(|| store.state_dir(), Into::into);
    std::fs::create_dir_all(&dir).map_err(|e| StoreError::io(&dir, e))?;
    let tmp_dir = store.tmp_dir();
    std::fs::create_dir_all(&tmp_dir).map_err(|e| StoreError::io(&tmp_dir, e))?;
    let flat = name.replace('/', "-");
    let tmp = tmp_dir.join(format!("state-{flat}-{}", std::process::id()));
    fsutil::write_durable(&tmp, bytes)?;
    if let Err(e) = std::fs::rename(&tmp, &dest) {
        let _ = std::fs::remove_file(&tmp);
        return Err(StoreError::io(&dest, e));
    }
    fsutil::fsync_dir(&dir)
}

/// The held bundles' sha256s in import order, no manifest read.
pub fn ids_in_order(store: &Store) -> Result<Vec<BundleId>, StoreError> {
    let mut ids = store.bundle_ids()?;
    ImportOrder::load(store)
        .unwrap_or_default()
        .sort(store, &mut ids);
    Ok(ids)
}

/// Every held manifest with its sha256, or why it cannot be read, in
/// import order: one damaged manifest does not hide the others.
pub fn held_in_order(store: &Store) -> Result<Vec<HeldManifest>, StoreError> {
    Ok(ids_in_order(store)?
        .into_iter()
        .map(|id| {
            let manifest = store.read_bundle(&id);
            HeldManifest { id, manifest }
        })
        .collect())
}

#[cfg(test)]
mod tests {
    use super::*;
    use llmgw_shared::manifest::Manifest;

    fn hold(store: &Store, arch: &str) -> BundleId {
        let m = Manifest::new(vec![arch.into()], 0).to_canonical_json();
        let id = BundleId::of(&m);
        std::fs::write(store.bundle_file(&id), &m).unwrap();
        id
    }

    #[test]
    fn order_is_kept_across_saves_and_old_stores_fall_back_to_file_times() {
        let dir = tempfile::tempdir().unwrap();
        let store = Store::at(dir.path());
        store.create_dirs().unwrap();
        assert_eq!(ImportOrder::load(&store).unwrap(), ImportOrder::default());
        // An old store: two bundles, no state file. File times decide.
        let a = hold(&store, "a");
        std::thread::sleep(std::time::Duration::from_millis(20));
        let b = hold(&store, "b");
        let mut ids = vec![b.clone(), a.clone()];
        ids.sort();
        ImportOrder::default().sort(&store, &mut ids);
        assert_eq!(ids, vec![a.clone(), b.clone()]);

        // The first import freezes that order and comes after it.
        let mut order = ImportOrder::load(&store).unwrap();
        let c: BundleId = "c".repeat(64).parse().unwrap();
        order.record(&store, &c, false).unwrap();
        save(&store, &order).unwrap();
        let order = ImportOrder::load(&store).unwrap();
        assert_eq!(
            (order.number(&a), order.number(&b), order.number(&c)),
            (Some(1), Some(2), Some(3))
        );
        // Held again: keeps its number; a fresh import after removal: new.
        let mut again = order.clone();
        again.record(&store, &a, true).unwrap();
        assert_eq!(again.number(&a), Some(1));
        again.forget(&a);
        again.record(&store, &a, false).unwrap();
        assert_eq!(again.number(&a), Some(4));
        // Nothing of the write is left in tmp/.
        assert_eq!(std::fs::read_dir(store.tmp_dir()).unwrap().count(), 0);
    }

    #[test]
    fn a_damaged_state_file_is_named() {
        let dir = tempfile::tempdir().unwrap();
        let store = Store::at(dir.path());
        std::fs::create_dir_all(store.state_dir()).unwrap();
        std::fs::write(path(&store), b"{not json").unwrap();
        let err = ImportOrder::load(&store).unwrap_err().to_string();
        assert!(err.contains("imports.json"), "{err}");
    }
}
