//! What each held bundle names, kept small beside it, so that an import
//! reads in full only the held manifests that name something the new
//! bundle names (#35 item 4): the claims check costs what the bundle
//! touches, not what the store holds. A 100 000-file repository held in
//! one bundle made every small import parse its 10 MB manifest.
//!
//! Invariant: `STORE/state/claims-<id>.json` is a function of the manifest
//! `<id>` alone (whose name is its sha256), so it never goes stale. It is
//! written after the manifest is published; a held bundle without one (a
//! store from before it, a crash between the two writes) or with one that
//! does not read back as its own is read in full instead: slower, never
//! wrong. The file only ever lets the check skip a manifest that shares no
//! Hub revision and no release repository with the new bundle — the only
//! manifests whose claims could meet the new bundle's.
//!
//! The same names are also kept all in one file, `STORE/state/claims-names.json`
//! (bundle id → names), read first, so an import opens one file, not one a
//! bundle held (a store of 1 000 bundles opened 1 000). Each entry is a
//! function of its bundle's manifest as well, so an entry of a bundle since
//! removed is never wrong, only unused (and dropped at the next write); a
//! bundle it lacks, or a file that cannot be read, falls back to the
//! bundle's own file, then its manifest.

use std::collections::{BTreeMap, BTreeSet, HashMap};

use llmgw_shared::manifest::Manifest;
use llmgw_shared::repo_key;
use serde::{Deserialize, Serialize};

use crate::store::Store;

/// A names file is never bigger than this (one line per revision and
/// release repository of one bundle).
const MAX_NAMES_BYTES: u64 = 16 << 20;

/// The format of the file; another is read as absent.
const VERSION: u32 = 1;

/// The file of every held bundle's names, in `STORE/state/`.
pub const ALL_FILE: &str = "claims-names.json";

/// The file of every bundle's names is never bigger than this (a few
/// hundred bytes a bundle: a store of 100 000 bundles).
const MAX_ALL_BYTES: u64 = 64 << 20;

/// The names a bundle's claims live under.
#[derive(Debug, Default, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Names {
    /// `kind\0repo key\0commit` of each Hub repository revision it holds:
    /// a Hub file's claim key begins with one of these.
    pub revisions: BTreeSet<String>,
    /// The repository key of each release it carries: a release asset's
    /// claim, a signed `SHA256SUMS` and llmgw's own-release rule are all
    /// about one repository.
    pub release_repos: BTreeSet<String>,
}

/// The file as written: the names and whose they are.
#[derive(Serialize, Deserialize)]
struct NamesFile {
    version: u32,
    bundle: String,
    #[serde(flatten)]
    names: Names,
}

impl Names {
    /// The names `m` claims files under.
    pub fn of(m: &Manifest) -> Self {
        let revisions = m
            .repos
            .iter()
            .map(|r| {
                let kind = r.kind.singular();
                format!("{kind}\0{}\0{}", repo_key(&r.id), r.commit)
            })
            .collect();
        let release_repos = m.releases.iter().map(|r| repo_key(&r.repo)).collect();
        Self {
            revisions,
            release_repos,
        }
    }

    /// Whether a claim of one could be about a claim of the other.
    pub fn meet(&self, other: &Names) -> bool {
        !self.revisions.is_disjoint(&other.revisions)
            || !self.release_repos.is_disjoint(&other.release_repos)
    }
}

/// The file of every bundle's names, as written.
#[derive(Serialize, Deserialize)]
struct AllFile {
    version: u32,
    bundles: BTreeMap<String, Names>,
}

/// The names of each bundle [`ALL_FILE`] records, by id; empty when there
/// is no such file or it cannot be read or is another format (each bundle
/// is then looked up in its own file).
pub fn load_all(store: &Store) -> HashMap<String, Names> {
    let path = store.state_dir().join(ALL_FILE);
    let Ok(bytes) = crate::store::fsutil::read_bounded(&path, MAX_ALL_BYTES) else {
        return HashMap::new();
    };
    match serde_json::from_slice::<AllFile>(&bytes) {
        Ok(file) if file.version == VERSION => file.bundles.into_iter().collect(),
        _ => HashMap::new(),
    }
}

/// Adds `new` to [`ALL_FILE`], keeping what it records of the bundles
/// still held and dropping the rest; written whole and renamed into place.
/// Best effort, as [`record`].
pub fn record_all(store: &Store, new: &[(llmgw_shared::BundleId, Names)]) {
    let held: BTreeSet<String> = match store.bundle_ids() {
        Ok(ids) => ids.into_iter().map(|id| id.to_string()).collect(),
        Err(_) => return,
    };
    let mut bundles: BTreeMap<String, Names> = load_all(store)
        .into_iter()
        .filter(|(id, _)| held.contains(id))
        .collect();
    for (id, names) in new {
        bundles.insert(id.to_string(), names.clone());
    }
    let file = AllFile {
        version: VERSION,
        bundles,
    };
    if let Err(e) = crate::store::state::write_json(store, ALL_FILE, &file) {
        tracing::warn!(
            error = %llmgw_shared::Chain(&e),
            "the claims names file of every bundle was not written; the next import reads each bundle's own"
        );
    }
}

/// The names file of bundle `id`, in `STORE/state/`.
pub fn file_name(id: &str) -> String {
    format!("claims-{id}.json")
}

/// The names of held bundle `id` as its file says, or `None` when it has
/// no file, or one that cannot be read, is another format, or is not its
/// own (the caller then reads the manifest).
pub fn load(store: &Store, id: &str) -> Option<Names> {
    let path = store.state_dir().join(file_name(id));
    let bytes = crate::store::fsutil::read_bounded(&path, MAX_NAMES_BYTES).ok()?;
    let file: NamesFile = serde_json::from_slice(&bytes).ok()?;
    (file.version == VERSION && file.bundle == id).then_some(file.names)
}

/// Writes the names file of bundle `id`, once its manifest is published
/// (or, for a held bundle without one, once an import read it in full
/// and committed). Best effort: without it the next import reads that manifest in full,
/// so a failure is logged, not the import's.
pub fn record(store: &Store, id: &str, names: Names) {
    let file = NamesFile {
        version: VERSION,
        bundle: id.to_string(),
        names,
    };
    if let Err(e) = crate::store::state::write_json(store, &file_name(id), &file) {
        tracing::warn!(
            bundle = %id,
            error = %llmgw_shared::Chain(&e),
            "the claims names file was not written; the next import reads this manifest in full"
        );
    }
}

/// Removes the names file of a bundle no longer held (`mirror remove`).
/// Best effort: a file of a bundle not held is never read.
pub fn forget(store: &Store, id: &str) {
    let _ = std::fs::remove_file(store.state_dir().join(file_name(id)));
}

#[cfg(test)]
mod tests {
    use super::*;

    fn held(store: &Store, m: &Manifest) -> llmgw_shared::BundleId {
        let bytes = m.to_canonical_json();
        let id = llmgw_shared::BundleId::of(&bytes);
        std::fs::create_dir_all(store.bundles_dir()).unwrap();
        std::fs::write(store.bundle_file(&id), &bytes).unwrap();
        id
    }

    #[test]
    fn a_names_file_reads_back_only_as_its_own_bundles() {
        let dir = tempfile::tempdir().unwrap();
        let store = Store::at(dir.path());
        let m = Manifest::new(vec!["amd64".into()], 0);
        let id = held(&store, &m);
        assert_eq!(load(&store, &id), None, "no file yet");
        record(&store, &id, Names::of(&m));
        assert_eq!(load(&store, &id), Some(Names::of(&m)));
        // Copied under another bundle's name: not that bundle's.
        let other = "0".repeat(64);
        std::fs::copy(
            store.state_dir().join(file_name(&id)),
            store.state_dir().join(file_name(&other)),
        )
        .unwrap();
        assert_eq!(load(&store, &other), None);
        // Damaged: read as absent.
        std::fs::write(store.state_dir().join(file_name(&id)), b"{").unwrap();
        assert_eq!(load(&store, &id), None);
        forget(&store, &id);
        assert!(!store.state_dir().join(file_name(&id)).exists());
    }

    /// The one file of every bundle's names keeps what it recorded of the
    /// bundles still held, adds what it is given, drops the rest; one that
    /// cannot be read is read as empty.
    #[test]
    fn the_one_file_keeps_the_held_bundles_names_only() {
        let dir = tempfile::tempdir().unwrap();
        let store = Store::at(dir.path());
        let a = Manifest::new(vec!["amd64".into()], 1);
        let b = Manifest::new(vec!["arm64".into()], 2);
        let (ida, idb) = (held(&store, &a), held(&store, &b));
        assert!(load_all(&store).is_empty(), "no file yet");
        record_all(&store, &[(ida.clone(), Names::of(&a))]);
        record_all(&store, &[(idb.clone(), Names::of(&b))]);
        let all = load_all(&store);
        assert_eq!(all.len(), 2);
        assert_eq!(all[ida.as_str()], Names::of(&a));
        std::fs::remove_file(store.bundle_file(&ida)).unwrap();
        record_all(&store, &[]);
        let all = load_all(&store);
        assert_eq!(all.keys().collect::<Vec<_>>(), [idb.as_str()]);
        std::fs::write(store.state_dir().join(ALL_FILE), b"{").unwrap();
        assert!(load_all(&store).is_empty());
    }
}
