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
use std::io::{Read, Write};
use std::path::PathBuf;
use std::sync::{Arc, Mutex};

use llmgw_shared::Sha256;
use sha2::Digest as _;

use super::backend::{BlobStore, hex_of};
use super::s3::S3Blobs;
use super::{StoreError, layout};
use crate::fsutil;

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
        let written = (|| {
            let mut reader = s3.read(sha256, 0..size)?.take(size + 1);
            let mut out = File::create(&tmp).map_err(|e| StoreError::io(&tmp, e))?;
            let mut hasher = sha2::Sha256::new();
            let mut buf = vec![0u8; 1 << 20];
            let mut n = 0u64;
            loop {
                let k = match reader.read(&mut buf) {
                    Ok(0) => break,
                    Ok(k) => k,
                    Err(e) if e.kind() == std::io::ErrorKind::Interrupted => continue,
                    Err(e) => return Err(StoreError::io(&tmp, e)),
                };
                hasher.update(&buf[..k]);
                out.write_all(&buf[..k])
                    .map_err(|e| StoreError::io(&tmp, e))?;
                n += k as u64;
            }
            let actual = hex_of(hasher);
            if actual != sha256.as_str() || n != size {
                return Err(StoreError::BlobMismatch {
                    key: s3.key_url(&layout::blob_key(sha256)),
                    expected: sha256.to_string(),
                    expected_size: size,
                    actual,
                    actual_size: n,
                });
            }
            out.sync_all().map_err(|e| StoreError::io(&tmp, e))
        })();
        if let Err(e) = written {
            let _ = std::fs::remove_file(&tmp);
            return Err(e);
        }
        let dest = self.dir.join(layout::blob_key(sha256));
        let parent = dest.parent().unwrap_or(&self.dir).to_path_buf();
        std::fs::create_dir_all(&parent).map_err(|e| StoreError::io(&parent, e))?;
        std::fs::rename(&tmp, &dest).map_err(|e| StoreError::io(&dest, e))?;
        fsutil::fsync_dir(&parent)
    }
}
