//! The per-replica read-through cache of whole blobs (`mirror serve
//! --cache-dir`, an emptyDir in Kubernetes), so a hundred nodes pulling one
//! model cost about one read of it from the bucket per replica.
//!
//! Invariant: a file appears under its blob's key in the cache only by a
//! rename, after the whole object was read, counted and hashed to that
//! sha256 and synced; a fill in progress lives under a temporary name in
//! `tmp/` and is never served. One fill per blob at a time; requests that
//! miss meanwhile are streamed from the bucket. With a bound
//! (`--cache-size`), the blobs held and the fills under way never take
//! more than it ([`super::cache_lru`]): least recently used blobs are
//! evicted, whole, to make room; a blob larger than the bound is streamed
//! and never cached.

use std::fs::File;
use std::path::PathBuf;
use std::sync::{Arc, Mutex, MutexGuard};

use llmgw_shared::Sha256;

use super::backend::BlobStore;
use super::cache_lru::{Admit, Lru};
use super::checked_file::write_checked;
use super::fs::FsBlobs;
use super::{StoreError, layout};

/// Whole blobs copied from the bucket into a local folder.
#[derive(Debug)]
pub struct BlobCache {
    dir: PathBuf,
    lru: Mutex<Lru>,
}

impl BlobCache {
    /// The cache in `dir`, holding at most `limit` bytes when given.
    /// Blocking: what an earlier run left there (an emptyDir outlives a
    /// container restart) is counted, oldest first by file time, and
    /// trimmed to the bound; unfinished fills in `tmp/` are removed.
    pub fn open_dir(dir: impl Into<PathBuf>, limit: Option<u64>) -> Result<Self, StoreError> {
        let dir = dir.into();
        let tmp = dir.join(layout::TMP);
        match std::fs::remove_dir_all(&tmp) {
            Err(e) if e.kind() != std::io::ErrorKind::NotFound => {
                return Err(StoreError::io(&tmp, e));
            }
            _ => {}
        }
        let mut found = FsBlobs::at(&dir).list_blobs()?;
        found.sort_by_key(|(_, m)| m.modified);
        let mut lru = Lru::new(limit);
        let mut over = Vec::new();
        for (sha, meta) in found {
            over.extend(lru.found(sha, meta.size));
        }
        let cache = Self {
            dir,
            lru: Mutex::new(lru),
        };
        cache.unlink(&over);
        Ok(cache)
    }

    /// The bookkeeping; a thread that panicked while holding it left
    /// nothing half-done that matters more than serving on.
    fn lru(&self) -> MutexGuard<'_, Lru> {
        self.lru.lock().unwrap_or_else(|p| p.into_inner())
    }

    /// The cached copy of a blob, opened, when it is there whole (its size
    /// is the manifest's); a hit counts as a use. Blocking.
    pub fn open(&self, sha256: &Sha256, size: u64) -> Option<File> {
        let f = File::open(self.dir.join(layout::blob_key(sha256))).ok()?;
        (f.metadata().ok()?.len() == size).then(|| {
            self.lru().touch(sha256);
            f
        })
    }

    /// Bytes of blobs held and of fills under way.
    pub fn used(&self) -> u64 {
        self.lru().used()
    }

    /// Starts copying a blob from `bucket` into the cache on a thread of
    /// its own (after evicting what must go to make room), unless a copy of
    /// it is under way or it cannot be cached now. Any [`BlobStore`] will
    /// do, so the cache needs nothing of the bucket backend that uses it.
    pub fn fill<S: BlobStore + Clone + 'static>(
        self: &Arc<Self>,
        bucket: &S,
        sha256: &Sha256,
        size: u64,
    ) {
        let victims = match self.lru().admit(sha256, size) {
            Admit::Fill { victims } => victims,
            Admit::Busy | Admit::NoRoom => return,
            Admit::TooLarge { first } => {
                if first {
                    tracing::warn!(
                        blob = %sha256,
                        size,
                        "the blob is larger than the whole --cache-size: it is streamed from \
                         the bucket on every request and never cached"
                    );
                }
                return;
            }
        };
        let pending = victims.clone();
        let (me, bucket, sha) = (self.clone(), bucket.clone(), sha256.clone());
        let spawned = std::thread::Builder::new()
            .name("llmgw-cache-fill".into())
            .spawn(move || {
                me.unlink(&victims);
                match me.copy(&bucket, &sha, size) {
                    Ok(()) => me.lru().filled(&sha),
                    Err(e) => {
                        tracing::warn!(blob = %sha, error = %llmgw_shared::chain(&e), "cache fill failed; the blob is streamed from the bucket");
                        me.lru().failed(&sha);
                    }
                }
            });
        if spawned.is_err() {
            // Nothing was evicted after all: the victims' files stay,
            // uncounted until the cache is next opened.
            let mut lru = self.lru();
            lru.evicted(&pending);
            lru.failed(sha256);
        }
    }

    /// Removes evicted blobs' files, then lets them be filled again. A
    /// blob being served while it is evicted still finishes: on Linux an
    /// unlinked file stays readable through the descriptor already open
    /// (the server's body holds one), and its room is freed when that
    /// closes.
    fn unlink(&self, victims: &[Sha256]) {
        for v in victims {
            let path = self.dir.join(layout::blob_key(v));
            match std::fs::remove_file(&path) {
                Err(e) if e.kind() != std::io::ErrorKind::NotFound => {
                    tracing::warn!(path = %path.display(), error = %e, "cannot evict a cached blob");
                }
                _ => tracing::debug!(blob = %v, "evicted from the cache"),
            }
        }
        self.lru().evicted(victims);
    }

    /// Reads the whole object into `tmp/`, hashing it, and renames it into
    /// place only when it is `size` bytes hashing to `sha256`.
    fn copy(&self, bucket: &dyn BlobStore, sha256: &Sha256, size: u64) -> Result<(), StoreError> {
        let tmp_dir = self.dir.join(layout::TMP);
        std::fs::create_dir_all(&tmp_dir).map_err(|e| StoreError::io(&tmp_dir, e))?;
        let tmp = tmp_dir.join(format!("{}.{}", sha256, std::process::id()));
        let mut reader = bucket.read(sha256, 0..size)?;
        let dest = self.dir.join(layout::blob_key(sha256));
        let key = bucket.blob_location(sha256);
        write_checked(&mut reader, &tmp, &dest, sha256, size, &key)
    }
}
