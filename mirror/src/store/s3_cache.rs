//! The per-replica read-through cache of whole blobs (`mirror serve
//! --cache-dir`, an emptyDir in Kubernetes), so a hundred nodes pulling one
//! model cost about one read of it from the bucket per replica.
//!
//! Invariant: a file appears under its blob's key in the cache only by a
//! rename, after the whole object was read, counted and hashed to that
//! sha256 and synced; a fill in progress lives under a temporary name in
//! `tmp/` and is never served. One fill per blob at a time; requests that
//! miss meanwhile are streamed from the bucket.

use std::collections::HashSet;
use std::fs::File;
use std::path::PathBuf;
use std::sync::{Arc, Mutex};

use llmgw_shared::Sha256;

use super::backend::BlobStore;
use super::checked_file::write_checked;
use super::s3::S3Blobs;
use super::{StoreError, layout};

/// Whole blobs copied from the bucket into a local folder.
#[derive(Debug)]
pub struct BlobCache {
    dir: PathBuf,
    filling: Mutex<HashSet<String>>,
}

impl BlobCache {
    pub fn new(dir: impl Into<PathBuf>) -> Self {
        Self {
            dir: dir.into(),
            filling: Mutex::new(HashSet::new()),
        }
    }

    /// The cached copy of a blob, opened, when it is there whole (its size
    /// is the manifest's); blocking.
    pub fn open(&self, sha256: &Sha256, size: u64) -> Option<File> {
        let f = File::open(self.dir.join(layout::blob_key(sha256))).ok()?;
        (f.metadata().ok()?.len() == size).then_some(f)
    }

    /// Starts copying a blob into the cache on a thread of its own, unless
    /// a copy of it is under way.
    pub fn fill(self: &Arc<Self>, s3: &S3Blobs, sha256: &Sha256, size: u64) {
        if let Ok(mut f) = self.filling.lock()
            && !f.insert(sha256.to_string())
        {
            return;
        }
        let (me, s3, sha) = (self.clone(), s3.clone(), sha256.clone());
        let spawned = std::thread::Builder::new()
            .name("llmgw-cache-fill".into())
            .spawn(move || {
                if let Err(e) = me.copy(&s3, &sha, size) {
                    tracing::warn!(blob = %sha, error = %llmgw_shared::chain(&e), "cache fill failed; the blob is streamed from the bucket");
                }
                if let Ok(mut f) = me.filling.lock() {
                    f.remove(sha.as_str());
                }
            });
        if spawned.is_err()
            && let Ok(mut f) = self.filling.lock()
        {
            f.remove(sha256.as_str());
        }
    }

    /// Reads the whole object into `tmp/`, hashing it, and renames it into
    /// place only when it is `size` bytes hashing to `sha256`.
    fn copy(&self, s3: &S3Blobs, sha256: &Sha256, size: u64) -> Result<(), StoreError> {
        let tmp_dir = self.dir.join(layout::TMP);
        std::fs::create_dir_all(&tmp_dir).map_err(|e| StoreError::io(&tmp_dir, e))?;
        let tmp = tmp_dir.join(format!("{}.{}", sha256, std::process::id()));
        let mut reader = s3.read(sha256, 0..size)?;
        let dest = self.dir.join(layout::blob_key(sha256));
        let key = s3.key_url(&layout::blob_key(sha256));
        write_checked(&mut reader, &tmp, &dest, sha256, size, &key)
    }
}
