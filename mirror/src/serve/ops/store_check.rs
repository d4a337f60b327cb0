//! What `--store` points at, looked at once before the server starts: a
//! store that can be read, an empty one, or something that is not a store.
//!
//! Invariant: the server starts only on a folder it can list whose
//! `bundles/` (when there is one) it can list too; a folder that holds
//! other things and no `bundles/` is refused, since serving it would only
//! ever answer "not found". An empty folder, or one holding only the
//! store's own folders, is an empty store: it starts and says so.

use std::path::{Path, PathBuf};

use llmgw_shared::shown;

use crate::serve::error::ServeError;
use crate::store::{Store, StoreError};

/// What the store held when the server started.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Held {
    /// No bundle yet.
    Empty,
    /// This many bundle manifests.
    Bundles(usize),
}

/// The names a store's root may hold (see [`crate::store`]), and the
/// folder a fresh filesystem has.
const STORE_NAMES: [&str; 7] = [
    "blobs",
    "bundles",
    "trust",
    "tmp",
    "state",
    "lock",
    "lost+found",
];

/// Looks at the store before serving it.
pub fn check(root: &Path) -> Result<Held, ServeError> {
    let meta = std::fs::metadata(root);
    if !meta.as_ref().is_ok_and(|m| m.is_dir()) {
        return Err(ServeError::NoStore(root.to_path_buf()));
    }
    let unreadable = |path: PathBuf, source| ServeError::Unreadable { path, source };
    let mut names = Vec::new();
    for entry in std::fs::read_dir(root).map_err(|e| unreadable(root.to_path_buf(), e))? {
        let entry = entry.map_err(|e| unreadable(root.to_path_buf(), e))?;
        names.push(entry.file_name().to_string_lossy().into_owned());
    }
    names.sort();
    let store = Store::at(root);
    if names.iter().any(|n| n == "bundles") {
        let ids = store.bundle_ids().map_err(|e| match e {
            StoreError::Io { path, source } => unreadable(path, source),
            other => ServeError::Bundles(other),
        })?;
        return Ok(match ids.len() {
            0 => Held::Empty,
            n => Held::Bundles(n),
        });
    }
    let others: Vec<&String> = names
        .iter()
        .filter(|n| !STORE_NAMES.contains(&n.as_str()))
        .collect();
    if others.is_empty() {
        return Ok(Held::Empty);
    }
    let listed = others
        .iter()
        .take(5)
        .map(|n| format!("\"{}\"", shown(n)))
        .collect::<Vec<_>>()
        .join(", ");
    let more = if others.len() > 5 { ", …" } else { "" };
    let hint = if names.iter().any(|n| n == "manifest.json") {
        format!(
            "it looks like a bundle (it has manifest.json): import it with `llmgw bundle import \
             {} --store STORE`, then serve STORE",
            root.display()
        )
    } else {
        "give the folder `llmgw bundle import --store` made, or an empty folder for an empty \
         mirror"
            .to_string()
    };
    Err(ServeError::NotAStore {
        path: root.to_path_buf(),
        found: format!("{listed}{more}"),
        hint,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn empty_folders_and_bare_stores_are_empty_stores() {
        let d = tempfile::tempdir().unwrap();
        assert_eq!(check(d.path()).unwrap(), Held::Empty);
        std::fs::create_dir(d.path().join("lost+found")).unwrap();
        std::fs::create_dir(d.path().join("trust")).unwrap();
        assert_eq!(check(d.path()).unwrap(), Held::Empty);
        Store::at(d.path()).create_dirs().unwrap();
        assert_eq!(check(d.path()).unwrap(), Held::Empty);
    }

    #[test]
    fn other_folders_are_not_stores() {
        let d = tempfile::tempdir().unwrap();
        std::fs::write(d.path().join("manifest.json"), b"{}").unwrap();
        std::fs::create_dir(d.path().join("blobs")).unwrap();
        let e = check(d.path()).unwrap_err().to_string();
        assert!(e.contains("is not a mirror store"), "{e}");
        assert!(e.contains("\"manifest.json\""), "{e}");
        assert!(e.contains("llmgw bundle import"), "{e}");

        let f = d.path().join("manifest.json");
        let e = check(&f).unwrap_err().to_string();
        assert!(e.contains("is not a folder"), "{e}");
    }

    #[test]
    fn a_bundles_entry_that_cannot_be_listed_is_refused() {
        let d = tempfile::tempdir().unwrap();
        std::fs::write(d.path().join("bundles"), b"not a folder").unwrap();
        let e = check(d.path()).unwrap_err().to_string();
        assert!(e.contains("cannot read the store"), "{e}");
        assert!(e.contains("bundles"), "{e}");
    }
}
