//! A store in object storage, worked on through a local folder: the
//! folder holds a copy of the bucket's small files (`bundles/`, `state/`,
//! `trust/`) so that import, its checks and the server's index read them
//! as they read any store, while blobs stay in the bucket and are looked
//! up there ([`super::Store::in_bucket`]).
//!
//! Invariant: copying either way writes manifests last and removes them
//! first, so neither side ever holds a manifest before what it relies on.
//! Up ([`Remote::push`]) every blob goes before any small file, each blob
//! hashed again as it streams into the bucket ([`BlobStore::put_blob`]).
//! Down ([`Remote::pull`]) only keys shaped like a store's small files are
//! copied, each bounded, so a bucket cannot make the folder hold anything
//! else; the index then sees the folder change as after a local import.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use llmgw_shared::Sha256;

use super::backend::{BlobMeta, BlobStore, Put};
use super::fs::FsBlobs;
use super::s3::S3Blobs;
use super::{StoreError, layout};
use crate::store::fsutil;

mod own;

pub use own::OwnFile;

/// The folders copied between the bucket and the work folder.
const SMALL_DIRS: [&str; 3] = [layout::STATE, layout::TRUST, layout::BUNDLES];

/// A small file is never bigger than this (a manifest of a huge bundle is a
/// few MiB).
const MAX_SMALL: u64 = 64 << 20;

/// The key of the lock object, beside the store's folders.
pub const LOCK_KEY: &str = "lock";

/// Whether `key` may name a small file of the store: under one of
/// [`SMALL_DIRS`], at most three parts, each plain (no dot first, nothing
/// but letters, digits, `.`, `_`, `-`).
fn small_key(key: &str) -> bool {
    let parts: Vec<&str> = key.split('/').collect();
    parts.len() >= 2
        && parts.len() <= 3
        && SMALL_DIRS.contains(&parts[0])
        && parts.iter().all(|p| {
            !p.is_empty()
                && !p.starts_with('.')
                && p.bytes()
                    .all(|b| b.is_ascii_alphanumeric() || matches!(b, b'.' | b'_' | b'-'))
        })
}

/// Manifests go last up and first out.
fn is_manifest(key: &str) -> bool {
    layout::bundle_of_key(key).is_some()
}

/// A bucket and the local folder that works for it.
#[derive(Debug)]
pub struct Remote {
    s3: S3Blobs,
    work: PathBuf,
    /// Each small file as last copied: its size and time in the bucket, and
    /// the sha256 of its bytes.
    seen: BTreeMap<String, (BlobMeta, Sha256)>,
    /// The small files this process writes itself (a serving replica's
    /// state): [`Remote::pull`] leaves them be, [`Remote::push_own`] sends
    /// them up.
    own: Vec<OwnFile>,
    /// The sha256 of each own file as last sent up.
    own_sent: BTreeMap<String, Sha256>,
}

/// What [`Remote::push`] sent.
#[derive(Debug, Default, Clone, Copy, PartialEq, Eq)]
pub struct Pushed {
    /// Blobs the bucket did not hold, sent.
    pub blobs_added: usize,
    /// Their bytes.
    pub bytes_added: u64,
    /// Blobs the bucket held already, not sent again.
    pub blobs_held: usize,
    /// Small files (manifests, signatures, state, keys) sent.
    pub small_files: usize,
}

impl Remote {
    /// The bucket of `s3`, worked on through the folder `work` (made as
    /// needed; nothing is copied until [`Remote::pull`]).
    pub fn new(s3: S3Blobs, work: impl Into<PathBuf>) -> Self {
        Self {
            s3,
            work: work.into(),
            seen: BTreeMap::new(),
            own: Vec::new(),
            own_sent: BTreeMap::new(),
        }
    }

    /// The bucket.
    pub fn s3(&self) -> &S3Blobs {
        &self.s3
    }

    /// The local folder that holds the copy of the small files: a store
    /// folder to everything that reads one.
    pub fn work(&self) -> &Path {
        &self.work
    }

    /// Every small file under the work folder's [`SMALL_DIRS`], by key.
    fn local_small(&self) -> Result<Vec<String>, StoreError> {
        let mut keys = Vec::new();
        for dir in SMALL_DIRS {
            let root = self.work.join(dir);
            for item in walkdir::WalkDir::new(&root).sort_by_file_name() {
                let item = match item {
                    Ok(i) => i,
                    Err(e)
                        if e.io_error().map(|i| i.kind()) == Some(std::io::ErrorKind::NotFound) =>
                    {
                        continue;
                    }
                    Err(e) => {
                        let p = e.path().unwrap_or(&root).to_path_buf();
                        return Err(StoreError::io(p, e.into()));
                    }
                };
                if !item.file_type().is_file() {
                    continue;
                }
                let Ok(rel) = item.path().strip_prefix(&self.work) else {
                    continue;
                };
                let key = rel.to_string_lossy().replace('\\', "/");
                if small_key(&key) {
                    keys.push(key);
                }
            }
        }
        Ok(keys)
    }

    /// Copies the bucket's small files into the work folder: those that
    /// changed since the last pull (size or time), manifests last; a file
    /// the bucket no longer has is removed, manifests first. Answers
    /// whether anything changed.
    pub fn pull(&mut self) -> Result<bool, StoreError> {
        let mut listed: BTreeMap<String, BlobMeta> = BTreeMap::new();
        for dir in SMALL_DIRS {
            for (k, m) in self.s3.list_keys(dir)? {
                if small_key(&k) {
                    listed.insert(k, m);
                }
            }
        }
        let mut changed = false;
        // Gone from the bucket: manifests first.
        let mut gone: Vec<String> = self
            .local_small()?
            .into_iter()
            .filter(|k| !listed.contains_key(k) && !self.is_own(k))
            .collect();
        gone.sort_by_key(|k| !is_manifest(k));
        for k in gone {
            let p = self.work.join(&k);
            std::fs::remove_file(&p).map_err(|e| StoreError::io(&p, e))?;
            self.seen.remove(&k);
            changed = true;
        }
        let (manifests, others): (Vec<_>, Vec<_>) =
            listed.into_iter().partition(|(k, _)| is_manifest(k));
        for (k, m) in others.into_iter().chain(manifests) {
            if self.is_own(&k) {
                continue;
            }
            let local = self.work.join(&k);
            if self.seen.get(&k).is_some_and(|(was, _)| *was == m) && local.is_file() {
                continue;
            }
            let Some(bytes) = self.s3.get_small(&k, MAX_SMALL)? else {
                continue;
            };
            let sha = Sha256::of(&bytes);
            let same = fsutil::read_bounded(&local, MAX_SMALL)
                .ok()
                .is_some_and(|b| Sha256::of(&b) == sha);
            if !same {
                write_replacing(&local, &bytes)?;
                changed = true;
            }
            self.seen.insert(k, (m, sha));
        }
        Ok(changed)
    }

    /// Sends what the work folder has and the bucket lacks: every blob in
    /// its `blobs/` (hashed again on the way; the local copy is removed once
    /// the bucket holds it), then every small file that differs from what
    /// was pulled, manifests last; then removes from the bucket what was
    /// removed here, manifests first.
    pub fn push(&mut self) -> Result<Pushed, StoreError> {
        let mut done = Pushed::default();
        let local = FsBlobs::at(&self.work);
        for (sha, meta) in local.list_blobs()? {
            let path = self.work.join(layout::blob_key(&sha));
            let mut file = std::fs::File::open(&path).map_err(|e| StoreError::io(&path, e))?;
            match self.s3.put_blob(&sha, meta.size, &mut file)? {
                Put::Added => {
                    done.blobs_added += 1;
                    done.bytes_added += meta.size;
                }
                Put::Held => done.blobs_held += 1,
            }
            local.delete_blob(&sha)?;
        }
        let mut keys = self.local_small()?;
        keys.sort_by_key(|k| is_manifest(k));
        for k in &keys {
            let path = self.work.join(k);
            let bytes = fsutil::read_bounded(&path, MAX_SMALL)?;
            let sha = Sha256::of(&bytes);
            if self.seen.get(k).is_some_and(|(_, s)| *s == sha) {
                continue;
            }
            self.s3.put_small(k, bytes)?;
            done.small_files += 1;
        }
        let mut gone: Vec<String> = self
            .seen
            .keys()
            .filter(|k| !keys.contains(k))
            .cloned()
            .collect();
        gone.sort_by_key(|k| !is_manifest(k));
        for k in gone {
            self.s3.delete_key(&k)?;
            self.seen.remove(&k);
        }
        // What is there now is what the next push compares with.
        self.pull()?;
        Ok(done)
    }

    /// Takes the store's lock object, so one writer at a time works on the
    /// store; `what` names the holder in the refusal another writer gets.
    ///
    /// The object is written with `If-None-Match: *` (refused when one is
    /// there). Not every server honours that header (Garage 2.5 overwrites),
    /// so the lock is also looked for before, and read back after: a
    /// writer that finds another's name there backs off. On such a server
    /// two writers starting within one round trip of each other can both
    /// pass; the import Job's one-at-a-time rule is what keeps them apart.
    pub fn lock(&self, what: &str) -> Result<RemoteLock, StoreError> {
        let host = std::fs::read_to_string("/proc/sys/kernel/hostname").unwrap_or_default();
        let since = std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .unwrap_or_default();
        let holder = format!(
            "{what} (process {} on {}, since Unix time {}.{:09})",
            std::process::id(),
            host.trim(),
            since.as_secs(),
            since.subsec_nanos()
        );
        let lease = lock_lease();
        let busy = |held: Option<Vec<u8>>| StoreError::RemoteBusy {
            url: self.s3.url().to_string(),
            lock: self.s3.key_url(LOCK_KEY),
            holder: held
                .map(|b| String::from_utf8_lossy(&b).escape_debug().to_string())
                .unwrap_or_else(|| "another writer".into()),
            lease_seconds: lease.as_secs(),
        };
        if let Some(held) = self.s3.get_small(LOCK_KEY, 4096)? {
            // A holder renews its lock every quarter lease; one not renewed
            // for a whole lease belongs to a process that is gone (killed,
            // its node lost), so a rerun picks up where it stopped. An
            // object's time comes in whole seconds (Last-Modified), so a
            // lock renewed 0.9 s ago may read as 1.9 s old: the second of
            // rounding is allowed for, or a short lease (the tests') would
            // be taken from a live holder.
            match self.s3.key_age(LOCK_KEY)? {
                Some(age) if age > lease + std::time::Duration::from_secs(1) => {
                    tracing::warn!(
                        holder = %String::from_utf8_lossy(&held).escape_debug(),
                        age_seconds = age.as_secs(),
                        "taking over the store's lock object: not renewed for a whole lease"
                    );
                    self.s3.delete_key(LOCK_KEY)?;
                }
                _ => return Err(busy(Some(held))),
            }
        }
        if !self
            .s3
            .create_small(LOCK_KEY, holder.clone().into_bytes())?
        {
            return Err(busy(self.s3.get_small(LOCK_KEY, 4096).ok().flatten()));
        }
        match self.s3.get_small(LOCK_KEY, 4096)? {
            Some(b) if b == holder.as_bytes() => {
                Ok(RemoteLock::hold(self.s3.clone(), holder, lease))
            }
            // Another writer's name is there now: it is the holder.
            other => Err(busy(other)),
        }
    }
}

/// How long a lock object stays the holder's without being renewed: 10
/// minutes, or `$LLMGW_S3_LOCK_LEASE_SECONDS` (the tests shorten it).
fn lock_lease() -> std::time::Duration {
    let secs = std::env::var("LLMGW_S3_LOCK_LEASE_SECONDS")
        .ok()
        .and_then(|v| v.parse::<u64>().ok())
        .filter(|&s| s > 0)
        .unwrap_or(600);
    std::time::Duration::from_secs(secs)
}

/// The store's lock object: renewed every quarter lease by a thread of its
/// own while held, deleted when dropped.
#[derive(Debug)]
pub struct RemoteLock {
    s3: S3Blobs,
    /// Dropping it stops the renewing thread.
    stop: Option<std::sync::mpsc::Sender<()>>,
    renewer: Option<std::thread::JoinHandle<()>>,
}

impl RemoteLock {
    fn hold(s3: S3Blobs, holder: String, lease: std::time::Duration) -> Self {
        let (stop, stopped) = std::sync::mpsc::channel::<()>();
        let renewing = s3.clone();
        let renewer = std::thread::spawn(move || {
            while let Err(std::sync::mpsc::RecvTimeoutError::Timeout) =
                stopped.recv_timeout(lease / 4)
            {
                if let Err(e) = renewing.put_small(LOCK_KEY, holder.clone().into_bytes()) {
                    tracing::error!(error = %llmgw_shared::Chain(&e), "cannot renew the store's lock object");
                }
            }
        });
        RemoteLock {
            s3,
            stop: Some(stop),
            renewer: Some(renewer),
        }
    }
}

impl Drop for RemoteLock {
    fn drop(&mut self) {
        drop(self.stop.take());
        if let Some(t) = self.renewer.take() {
            let _ = t.join();
        }
        if let Err(e) = self.s3.delete_key(LOCK_KEY) {
            tracing::error!(error = %llmgw_shared::Chain(&e), "cannot remove the store's lock object");
        }
    }
}

/// Writes `bytes` to `path` under a temporary name, synced, then renamed,
/// making the folders it needs.
fn write_replacing(path: &Path, bytes: &[u8]) -> Result<(), StoreError> {
    let dir = path.parent().unwrap_or(Path::new("."));
    std::fs::create_dir_all(dir).map_err(|e| StoreError::io(dir, e))?;
    let name = path.file_name().map(|n| n.to_string_lossy().into_owned());
    let tmp = dir.join(format!(".{}.pull", name.unwrap_or_default()));
    fsutil::write_durable(&tmp, bytes)?;
    std::fs::rename(&tmp, path).map_err(|e| StoreError::io(path, e))?;
    fsutil::fsync_dir(dir)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn only_small_files_of_a_store_are_copied() {
        let hex = "ab".repeat(32);
        for ok in [
            format!("bundles/{hex}.json"),
            format!("bundles/{hex}.json.minisig"),
            "state/imports.json".into(),
            "trust/bundle/RWQ1.pub".into(),
        ] {
            assert!(small_key(&ok), "{ok}");
        }
        for bad in [
            "blobs/sha256/ab/x",
            "state",
            "state/../x",
            "state/.hidden",
            "trust/a/b/c.pub",
            "tmp/x",
            "state/a b",
            "lock",
        ] {
            assert!(!small_key(bad), "{bad}");
        }
        assert!(is_manifest(&format!("bundles/{hex}.json")));
        assert!(!is_manifest(&format!("bundles/{hex}.json.minisig")));
    }
}
