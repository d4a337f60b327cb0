//! Whole-blob hashes of staged files, on a thread of their own: a blob
//! whose chunks came out of order is read back and hashed while the next
//! volume streams in, rather than after the last one.
//!
//! Invariant: a digest is answered only for the file it was asked for, as
//! read from its first byte to its last; the files are only read. One
//! worker hashes the files one after another, so at most one extra core is
//! busy and at most one file open.

use std::collections::{BTreeSet, HashMap};
use std::fs::File;
use std::io::{self, Read};
use std::path::{Path, PathBuf};
use std::sync::mpsc::{self, Receiver, Sender};
use std::thread::JoinHandle;

use sha2::{Digest, Sha256};

/// The sha256 (hex) of the file at `path`.
pub fn hash_file(path: &Path) -> io::Result<String> {
    let mut r = llmgw_shared::HashReader::new(File::open(path)?, Sha256::new());
    r.drain()?;
    Ok(hex::encode(r.into_hasher().finalize()))
}

/// The sha256 (hex) of `len` bytes of the file at `path` from `offset`:
/// a chunk of a blob being assembled, checked on its own.
pub fn hash_range(path: &Path, offset: u64, len: u64) -> io::Result<String> {
    use std::io::{Seek, SeekFrom};
    let mut f = File::open(path)?;
    f.seek(SeekFrom::Start(offset))?;
    let mut r = llmgw_shared::HashReader::new(f.take(len), Sha256::new());
    let n = r.drain()?;
    if n != len {
        // Cut short: the staging file is not what was written to it.
        return Err(io::ErrorKind::UnexpectedEof.into());
    }
    Ok(hex::encode(r.into_hasher().finalize()))
}

type Done = (usize, io::Result<String>);

/// Files to hash, by key (a placement), and their digests once done.
#[derive(Default)]
pub struct Rehasher {
    jobs: Option<Sender<(usize, PathBuf)>>,
    results: Option<Receiver<Done>>,
    worker: Option<JoinHandle<()>>,
    queued: BTreeSet<usize>,
    done: HashMap<usize, io::Result<String>>,
}

impl Rehasher {
    /// Starts hashing `path` (after what was asked before), as `key`.
    pub fn submit(&mut self, key: usize, path: PathBuf) {
        if self.jobs.is_none() {
            let (jobs, todo) = mpsc::channel::<(usize, PathBuf)>();
            let (tell, results) = mpsc::channel::<Done>();
            self.worker = Some(std::thread::spawn(move || {
                for (key, path) in todo {
                    if tell.send((key, hash_file(&path))).is_err() {
                        return;
                    }
                }
            }));
            self.jobs = Some(jobs);
            self.results = Some(results);
        }
        let sent = self.jobs.as_ref().map(|j| j.send((key, path.clone())));
        if matches!(sent, Some(Ok(()))) {
            self.queued.insert(key);
        } else {
            // The worker is gone: hash here.
            self.done.insert(key, hash_file(&path));
        }
    }

    /// Whether `key` was submitted and not taken yet.
    pub fn has(&self, key: usize) -> bool {
        self.queued.contains(&key) || self.done.contains_key(&key)
    }

    /// The digest of what was submitted as `key`, waiting for it; `None`
    /// when it was not submitted.
    pub fn take(&mut self, key: usize) -> Option<io::Result<String>> {
        while self.queued.contains(&key) && !self.done.contains_key(&key) {
            let got = self.results.as_ref().map(|r| r.recv());
            match got {
                Some(Ok((k, r))) => {
                    self.done.insert(k, r);
                }
                _ => {
                    self.queued.remove(&key);
                    return Some(Err(io::Error::other("the hashing thread stopped")));
                }
            }
        }
        self.queued.remove(&key);
        self.done.remove(&key)
    }
}

impl Drop for Rehasher {
    fn drop(&mut self) {
        self.jobs = None;
        self.results = None;
        if let Some(w) = self.worker.take() {
            let _ = w.join();
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn digests_come_back_by_key_whatever_the_order_asked() {
        let dir = tempfile::tempdir().unwrap();
        let a = dir.path().join("a");
        let b = dir.path().join("b");
        std::fs::write(&a, b"abc").unwrap();
        std::fs::write(&b, vec![7u8; 3 << 20]).unwrap();
        let mut r = Rehasher::default();
        assert!(r.take(1).is_none());
        r.submit(1, a.clone());
        r.submit(2, b.clone());
        r.submit(3, dir.path().join("missing"));
        assert!(r.has(2));
        assert_eq!(r.take(2).unwrap().unwrap(), hash_file(&b).unwrap());
        assert_eq!(
            r.take(1).unwrap().unwrap(),
            "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad"
        );
        assert!(r.take(3).unwrap().is_err());
        assert!(!r.has(1) && r.take(1).is_none());
    }
}
