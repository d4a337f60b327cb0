//! A store folder a command is about to make: if the command is refused,
//! the folder (and any parent it had to make) is removed again, so a
//! mistyped `--store` leaves nothing behind.
//!
//! Invariant: only what this run created is removed, and only while it
//! holds nothing but empty folders and the lock file — never a file that
//! someone (or another run) put there.

use std::path::{Path, PathBuf};

use crate::store::{Store, StoreError};

/// The store's folders, made now; see [`NewStore::undo`].
#[derive(Debug)]
pub struct NewStore {
    /// The outermost folder that did not exist before, if any.
    made: Option<PathBuf>,
    root: PathBuf,
}

impl NewStore {
    /// Makes the store's folders, remembering the first one that was
    /// missing (the root itself, or a parent of it).
    pub fn create(store: &Store) -> Result<Self, StoreError> {
        let root = store.root().to_path_buf();
        let made = first_missing(&root);
        store.create_dirs()?;
        Ok(Self { made, root })
    }

    /// Whether this run made the store's root folder.
    pub fn is_new(&self) -> bool {
        self.made.is_some()
    }

    /// Removes what [`NewStore::create`] made, if it still holds nothing
    /// but empty folders and the lock file. Returns the folder removed.
    pub fn undo(self) -> Option<PathBuf> {
        let made = self.made?;
        if !holds_nothing(&self.root, &self.root) {
            return None;
        }
        std::fs::remove_dir_all(&made).ok()?;
        Some(made)
    }
}

/// The outermost missing folder on the way to `root`.
fn first_missing(root: &Path) -> Option<PathBuf> {
    let mut missing = None;
    let mut p = Some(root);
    while let Some(dir) = p {
        if dir.as_os_str().is_empty() || std::fs::symlink_metadata(dir).is_ok() {
            break;
        }
        missing = Some(dir.to_path_buf());
        p = dir.parent();
    }
    missing
}

/// Whether `dir` holds only folders that hold nothing, and `root/lock`.
fn holds_nothing(root: &Path, dir: &Path) -> bool {
    let Ok(entries) = std::fs::read_dir(dir) else {
        return false;
    };
    for entry in entries {
        let Ok(entry) = entry else { return false };
        let path = entry.path();
        let Ok(kind) = entry.file_type() else {
            return false;
        };
        if kind.is_dir() {
            if !holds_nothing(root, &path) {
                return false;
            }
        } else if !(kind.is_file() && path == root.join("lock")) {
            return false;
        }
    }
    true
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_new_store_and_its_new_parents_are_removed() {
        let d = tempfile::tempdir().unwrap();
        let store = Store::at(d.path().join("typo/store"));
        let made = NewStore::create(&store).unwrap();
        assert!(made.is_new());
        std::fs::write(store.lock_path(), b"").unwrap();
        assert_eq!(made.undo(), Some(d.path().join("typo")));
        assert!(!d.path().join("typo").exists());
    }

    #[test]
    fn an_existing_folder_or_one_with_a_file_is_kept() {
        let d = tempfile::tempdir().unwrap();
        let store = Store::at(d.path());
        let made = NewStore::create(&store).unwrap();
        assert!(!made.is_new());
        assert_eq!(made.undo(), None);
        assert!(store.bundles_dir().is_dir());

        let store = Store::at(d.path().join("new"));
        let made = NewStore::create(&store).unwrap();
        std::fs::write(store.trust_dir().join("k.pub"), b"key").unwrap();
        assert_eq!(made.undo(), None);
        assert!(store.trust_dir().join("k.pub").is_file());
    }
}
