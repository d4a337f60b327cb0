//! Small file-system helpers the store needs to be crash-safe: fsync of
//! directories (so a rename survives a power cut), early writeback of long
//! writes, free space, and the store lock that keeps two writers (import,
//! gc, remove, trust) apart.
//!
//! Invariant: each primitive is written once, here; the one `unsafe` call
//! (writeback, which neither std nor rustix has) is a hint that changes no
//! data.

use std::fs::{File, OpenOptions};
use std::io;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, Ordering};

use crate::store::error::StoreError;

/// Whether this process's writes must survive a power cut: true but in
/// `bundle rehearse`, whose process holds nothing but a throwaway store
/// removed when it ends (a sync there only waits for the disk: a fifth of
/// a small bundle's rehearsal).
static DURABLE: AtomicBool = AtomicBool::new(true);

/// Declares every store this process opens throwaway: files and folders
/// are no longer synced. Only for a process that never opens an
/// operator's store (`bundle rehearse`).
pub fn throwaway_stores_only() {
    DURABLE.store(false, Ordering::Relaxed);
}

/// Makes a file's bytes durable (but in a throwaway process).
pub fn sync_file(f: &File) -> io::Result<()> {
    if DURABLE.load(Ordering::Relaxed) {
        f.sync_all()
    } else {
        Ok(())
    }
}

/// Makes a directory's entries (new names, renames, removals) durable.
pub fn fsync_dir(dir: &Path) -> Result<(), StoreError> {
    if !DURABLE.load(Ordering::Relaxed) {
        return Ok(());
    }
    File::open(dir)
        .and_then(|d| d.sync_all())
        .map_err(|e| StoreError::io(dir, e))
}

/// Bytes available to an unprivileged writer on the filesystem holding `path`.
pub fn free_bytes(path: &Path) -> Result<u64, StoreError> {
    llmgw_shared::free_space(path)
        .map(|s| s.bytes)
        .map_err(|e| StoreError::io(path, e))
}

/// A lock on the store, held until dropped. Import, gc, remove and trust
/// changes take it exclusively; `mirror verify` takes it shared, so that a
/// blob gc'd in the middle of its long walk is not reported as damage.
/// Serve and list never take it, since writers only ever make complete
/// things appear or disappear.
#[derive(Debug)]
pub struct StoreLock {
    _file: File,
    path: PathBuf,
}

impl StoreLock {
    /// Takes the lock, or fails at once naming what holds it.
    pub fn acquire(path: &Path, what: &str) -> Result<Self, StoreError> {
        Self::take(path, what, true)
    }

    /// Takes the lock shared with other readers that need the store to
    /// stand still (`mirror verify`), or fails at once if a writer holds it.
    pub fn acquire_shared(path: &Path, what: &str) -> Result<Self, StoreError> {
        Self::take(path, what, false)
    }

    /// `flock(2)` through std (`File::try_lock`): released when the file
    /// closes, so a killed process never leaves the store locked.
    fn take(path: &Path, what: &str, exclusive: bool) -> Result<Self, StoreError> {
        let file = open_keeping(path).map_err(|e| StoreError::io(path, e))?;
        let taken = if exclusive {
            file.try_lock()
        } else {
            file.try_lock_shared()
        };
        match taken {
            Ok(()) => {}
            Err(std::fs::TryLockError::WouldBlock) => {
                return Err(StoreError::Busy {
                    path: path.to_path_buf(),
                    what: what.to_string(),
                });
            }
            Err(std::fs::TryLockError::Error(e)) => return Err(StoreError::io(path, e)),
        }
        Ok(Self {
            _file: file,
            path: path.to_path_buf(),
        })
    }

    /// The lock file held, for a message that names what is busy.
    pub fn path(&self) -> &Path {
        &self.path
    }
}

/// Opens `path` to read and write, creating it when absent and keeping
/// what it holds: a lock file, or a staging file written at offsets over
/// several runs.
pub fn open_keeping(path: &Path) -> io::Result<File> {
    OpenOptions::new()
        .create(true)
        .truncate(false)
        .read(true)
        .write(true)
        .open(path)
}

/// Writes a small file and syncs it, so a later rename publishes whole bytes.
pub fn write_durable(path: &Path, bytes: &[u8]) -> Result<(), StoreError> {
    use std::io::Write;
    let mut f = File::create(path).map_err(|e| StoreError::io(path, e))?;
    let written = f.write_all(bytes).and_then(|()| sync_file(&f));
    if let Err(e) = written {
        // A disk that filled up leaves nothing half-written behind (the
        // callers write to a temporary name: the store stays as it was).
        drop(f);
        let _ = std::fs::remove_file(path);
        return Err(StoreError::io(path, e));
    }
    Ok(())
}

/// Reads a file that should be small (a key, a hash, a token, a state
/// file), at most `max` bytes of it: a bigger file — or `/dev/zero` — is
/// refused after `max + 1` bytes, never read whole.
pub fn read_bounded(path: &Path, max: u64) -> Result<Vec<u8>, StoreError> {
    use std::io::Read;
    let file = File::open(path).map_err(|e| StoreError::io(path, e))?;
    let mut bytes = Vec::new();
    file.take(max + 1)
        .read_to_end(&mut bytes)
        .map_err(|e| StoreError::io(path, e))?;
    if bytes.len() as u64 > max {
        return Err(StoreError::TooLarge {
            path: path.to_path_buf(),
            max,
        });
    }
    Ok(bytes)
}

/// Starts writing a file's dirty pages back to disk, without waiting:
/// a long write calls it every few MiB so that the final fsync waits for
/// little and a big file never piles up gigabytes of dirty memory. A hint
/// only: a failure (a filesystem without it) changes nothing and is
/// ignored, and the fsync that follows is what makes the bytes durable.
pub fn start_writeback(file: &File) {
    use std::os::fd::AsRawFd;
    // rustix has no sync_file_range, hence libc.
    // SAFETY: sync_file_range only reads its integer arguments; the
    // descriptor is borrowed from a live `File` for the whole call, and
    // SYNC_FILE_RANGE_WRITE starts writeback without changing any data.
    unsafe {
        libc::sync_file_range(file.as_raw_fd(), 0, 0, libc::SYNC_FILE_RANGE_WRITE);
    }
}

/// Whether an I/O error means the disk is full.
pub fn is_disk_full(e: &io::Error) -> bool {
    matches!(e.raw_os_error(), Some(libc::ENOSPC) | Some(libc::EDQUOT))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn bounded_reads_stop_at_the_bound() {
        let dir = tempfile::tempdir().unwrap();
        let p = dir.path().join("small");
        std::fs::write(&p, b"1234").unwrap();
        assert_eq!(read_bounded(&p, 4).unwrap(), b"1234");
        let err = read_bounded(&p, 3).unwrap_err().to_string();
        assert!(err.contains("larger than 3 bytes"), "{err}");
        let err = read_bounded(Path::new("/dev/zero"), 4096)
            .unwrap_err()
            .to_string();
        assert!(err.contains("/dev/zero"), "{err}");
    }

    #[test]
    fn lock_is_exclusive() {
        let dir = tempfile::tempdir().unwrap();
        let p = dir.path().join("lock");
        let a = StoreLock::acquire(&p, "import").unwrap();
        let err = StoreLock::acquire(&p, "gc").unwrap_err().to_string();
        assert!(err.contains("another"), "{err}");
        let err = StoreLock::acquire_shared(&p, "verify")
            .unwrap_err()
            .to_string();
        assert!(err.contains("busy"), "{err}");
        drop(a);
        let r1 = StoreLock::acquire_shared(&p, "verify").unwrap();
        let _r2 = StoreLock::acquire_shared(&p, "verify").unwrap();
        assert!(StoreLock::acquire(&p, "gc").is_err());
        drop((r1, _r2));
        StoreLock::acquire(&p, "gc").unwrap();
        assert!(free_bytes(dir.path()).unwrap() > 0);
    }
}
