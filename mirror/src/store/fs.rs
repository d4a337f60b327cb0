//! The filesystem backend of [`BlobStore`]: the store folder as it has
//! always been (`blobs/sha256/<2 hex>/<64 hex>`, `bundles/<sha>.json`).
//!
//! Invariant: a blob appears under its name only by a rename from
//! `tmp/`, after its bytes were hashed, counted and synced; a manifest
//! only by a rename of a synced file, then a sync of `bundles/`.

use std::fs::File;
use std::io::{Read, Seek, SeekFrom};
use std::ops::Range;
use std::path::{Path, PathBuf};

use llmgw_shared::{BundleId, Sha256};

use super::backend::{BlobMeta, BlobStore};
use super::checked_file::write_checked;
use super::{StoreError, layout};
use crate::store::fsutil;

/// Blobs and manifests in a store folder.
#[derive(Debug, Clone)]
pub struct FsBlobs {
    root: PathBuf,
}

impl FsBlobs {
    pub fn at(root: impl Into<PathBuf>) -> Self {
        Self { root: root.into() }
    }

    fn path(&self, key: &str) -> PathBuf {
        self.root.join(key)
    }

    /// A unique name in `tmp/` for a blob being written.
    fn temp_for(&self, sha256: &Sha256) -> PathBuf {
        self.root
            .join(layout::TMP)
            .join(format!("put-{}-{}", std::process::id(), sha256.as_str()))
    }
}

fn meta_of(path: &Path) -> Result<Option<BlobMeta>, StoreError> {
    match std::fs::symlink_metadata(path) {
        Ok(m) if m.is_file() => Ok(Some(BlobMeta {
            size: m.len(),
            modified: m.modified().ok(),
        })),
        Ok(_) => Ok(None),
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => Ok(None),
        Err(e) => Err(StoreError::io(path, e)),
    }
}

impl BlobStore for FsBlobs {
    fn head(&self, sha256: &Sha256) -> Result<Option<BlobMeta>, StoreError> {
        meta_of(&self.path(&layout::blob_key(sha256)))
    }

    fn read(&self, sha256: &Sha256, range: Range<u64>) -> Result<Box<dyn Read + Send>, StoreError> {
        let path = self.path(&layout::blob_key(sha256));
        let mut f = File::open(&path).map_err(|e| StoreError::io(&path, e))?;
        f.seek(SeekFrom::Start(range.start))
            .map_err(|e| StoreError::io(&path, e))?;
        Ok(Box::new(f.take(range.end.saturating_sub(range.start))))
    }

    fn read_whole(&self, sha256: &Sha256) -> Result<Box<dyn Read + Send>, StoreError> {
        let path = self.path(&layout::blob_key(sha256));
        let f = File::open(&path).map_err(|e| StoreError::io(&path, e))?;
        Ok(Box::new(f))
    }

    fn blob_location(&self, sha256: &Sha256) -> String {
        self.path(&layout::blob_key(sha256)).display().to_string()
    }

    fn manifest_location(&self, manifest_sha256: &BundleId) -> String {
        self.path(&layout::bundle_key(manifest_sha256))
            .display()
            .to_string()
    }

    fn add_blob(&self, sha256: &Sha256, size: u64, from: &mut dyn Read) -> Result<(), StoreError> {
        let dest = self.path(&layout::blob_key(sha256));
        let tmp = self.temp_for(sha256);
        let dir = self.root.join(layout::TMP);
        std::fs::create_dir_all(&dir).map_err(|e| StoreError::io(&dir, e))?;
        let key = dest.display().to_string();
        write_checked(from, &tmp, &dest, sha256, size, &key)
    }

    fn list_blobs(&self) -> Result<Vec<(Sha256, BlobMeta)>, StoreError> {
        let mut out = Vec::new();
        for file in super::Store::at(&self.root).blob_files()? {
            // Only a blob filed under its own name is the blob.
            let Some(sha) = file.sha256 else {
                continue;
            };
            if let Some(m) = meta_of(&file.path)? {
                out.push((sha, m));
            }
        }
        out.sort_by(|a, b| a.0.as_str().cmp(b.0.as_str()));
        Ok(out)
    }

    fn list_strays(&self) -> Result<Vec<String>, StoreError> {
        let mut out = Vec::new();
        for file in super::Store::at(&self.root).blob_files()? {
            if file.sha256.is_none() || meta_of(&file.path)?.is_none() {
                // A name nobody checked: escaped, as it is printed.
                out.push(llmgw_shared::shown(&file.path.display().to_string()).to_string());
            }
        }
        out.sort();
        Ok(out)
    }

    fn delete_blob(&self, sha256: &Sha256) -> Result<(), StoreError> {
        let path = self.path(&layout::blob_key(sha256));
        match std::fs::remove_file(&path) {
            Err(e) if e.kind() != std::io::ErrorKind::NotFound => Err(StoreError::io(&path, e)),
            _ => Ok(()),
        }
    }

    fn list_bundles(&self) -> Result<Vec<BundleId>, StoreError> {
        super::Store::at(&self.root).bundle_ids()
    }

    fn put_manifest(&self, manifest_sha256: &BundleId, bytes: &[u8]) -> Result<(), StoreError> {
        let dest = self.path(&layout::bundle_key(manifest_sha256));
        let dir = self.root.join(layout::BUNDLES);
        std::fs::create_dir_all(&dir).map_err(|e| StoreError::io(&dir, e))?;
        let tmp = dir.join(format!(".{manifest_sha256}.json.tmp"));
        fsutil::write_durable(&tmp, bytes)?;
        std::fs::rename(&tmp, &dest).map_err(|e| StoreError::io(&dest, e))?;
        fsutil::fsync_dir(&dir)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_folder_backend_keeps_the_promises() {
        let dir = tempfile::tempdir().unwrap();
        crate::store::conformance::exercise(&FsBlobs::at(dir.path()));
        // Nothing half-written is left behind in tmp/.
        let left: Vec<_> = std::fs::read_dir(dir.path().join("tmp")).unwrap().collect();
        assert!(left.is_empty(), "{left:?}");
    }
}
