//! The download cache: content named by its sha256, so that any later run,
//! for any bundle, reuses what an earlier one verified.
//!
//! ```text
//! CACHE/blobs/sha256/<64 hex>      verified content, read-only
//! CACHE/git-sha1/<40 hex>          for a file known by its git blob sha1 only
//!                                  (a small Hub file): the sha256 it hashed to
//! CACHE/partial/<digest>.partial   a download in progress, named by the
//!                                  digest it must end with, so a killed run's
//!                                  bytes are found and resumed by the next
//! ```
//!
//! Content only enters `blobs/` after its hash matched what the publisher
//! said. It is hashed again when a later run reuses it, so a cache damaged
//! on disk costs a download, never a bad bundle.

use std::fs;
use std::io;
use std::path::{Path, PathBuf};

use llmgw_shared::{GitOid, HashReader, Sha256, StreamHasher};

/// What a download must hash to.
#[derive(Debug, Clone, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum Expect {
    /// A sha256 the publisher gave.
    Sha256(Sha256),
    /// Only a git blob sha1 (a small file of a Hugging Face repository).
    GitBlobSha1(GitOid),
}

impl Expect {
    /// The digest's hex, which names the partial file.
    pub fn key(&self) -> &str {
        match self {
            Expect::Sha256(h) => h,
            Expect::GitBlobSha1(g) => g,
        }
    }

    pub fn algorithm(&self) -> &'static str {
        match self {
            Expect::Sha256(_) => "sha256",
            Expect::GitBlobSha1(_) => "git blob sha1",
        }
    }
}

#[derive(Debug, Clone)]
pub struct Cache {
    root: PathBuf,
}

impl Cache {
    /// Opens (creating) the cache folder.
    pub fn open(root: &Path) -> io::Result<Self> {
        for sub in ["blobs/sha256", "git-sha1", "partial"] {
            fs::create_dir_all(root.join(sub))?;
        }
        Ok(Self {
            root: root.to_path_buf(),
        })
    }

    pub fn root(&self) -> &Path {
        &self.root
    }

    pub fn blob_path(&self, sha256: &str) -> PathBuf {
        self.root.join("blobs/sha256").join(sha256)
    }

    pub fn partial_path(&self, expect: &Expect) -> PathBuf {
        self.root
            .join("partial")
            .join(format!("{}.partial", expect.key()))
    }

    /// The sha256 a cached file is known by, if the cache has it (unchecked).
    pub fn known_sha256(&self, expect: &Expect) -> Option<Sha256> {
        let sha = match expect {
            Expect::Sha256(h) => h.clone(),
            Expect::GitBlobSha1(g) => {
                let text = fs::read_to_string(self.root.join("git-sha1").join(g.as_str())).ok()?;
                Sha256::parse_exact("cached sha256", text.trim()).ok()?
            }
        };
        self.blob_path(&sha).is_file().then_some(sha)
    }

    /// Bytes already on disk for `expect`: a whole cached file or a partial.
    pub fn bytes_present(&self, expect: &Expect, size: u64) -> u64 {
        if self.known_sha256(expect).is_some() {
            return size;
        }
        fs::metadata(self.partial_path(expect))
            .map(|m| m.len().min(size))
            .unwrap_or(0)
    }

    /// A cached file for `expect` of `size` bytes, hashed again to prove it
    /// is still what it was; a damaged one is removed and `None` returned.
    pub fn reuse(&self, expect: &Expect, size: u64) -> io::Result<Option<(Sha256, PathBuf)>> {
        let Some(sha) = self.known_sha256(expect) else {
            return Ok(None);
        };
        let path = self.blob_path(&sha);
        let hasher = match expect {
            Expect::Sha256(_) => StreamHasher::sha256(),
            Expect::GitBlobSha1(_) => StreamHasher::with_git_blob(size),
        };
        let mut r = HashReader::new(fs::File::open(&path)?, hasher);
        r.drain()?;
        let d = r.into_hasher().finalize();
        let ok = d.len == size
            && d.sha256 == sha
            && match expect {
                Expect::Sha256(h) => &d.sha256 == h,
                Expect::GitBlobSha1(g) => d.git_blob_sha1.as_ref() == Some(g),
            };
        if ok {
            Ok(Some((sha, path)))
        } else {
            tracing::warn!(
                "cache file {} no longer matches its name; downloading again",
                path.display()
            );
            let _ = make_writable(&path);
            fs::remove_file(&path)?;
            Ok(None)
        }
    }

    /// Moves a verified file into `blobs/`, read-only, and remembers the
    /// git blob sha1 it answers to when that is how it was asked for.
    pub fn commit(&self, from: &Path, sha256: &Sha256, expect: &Expect) -> io::Result<PathBuf> {
        let to = self.blob_path(sha256);
        let mut perm = fs::metadata(from)?.permissions();
        perm.set_readonly(true);
        fs::set_permissions(from, perm)?;
        fs::rename(from, &to)?;
        if let Expect::GitBlobSha1(g) = expect {
            let tmp = self.root.join("git-sha1").join(format!("{g}.tmp"));
            fs::write(&tmp, format!("{sha256}\n"))?;
            fs::rename(&tmp, self.root.join("git-sha1").join(g.as_str()))?;
        }
        Ok(to)
    }

    /// Drops a verified file this run put in `blobs/` for itself alone
    /// (copied out of an old partial bundle when the cache keeps nothing).
    pub fn forget(&self, sha256: &Sha256) {
        let path = self.blob_path(sha256);
        let _ = make_writable(&path);
        let _ = fs::remove_file(&path);
    }

    /// Stores small bytes already in memory and verified (a signed
    /// checksum file, its signature) so the writer finds them like the rest.
    pub fn put_bytes(&self, bytes: &[u8]) -> io::Result<(Sha256, PathBuf)> {
        let sha = Sha256::of(bytes);
        let to = self.blob_path(&sha);
        if !to.is_file() {
            let tmp = self.root.join("partial").join(format!("{sha}.put"));
            fs::write(&tmp, bytes)?;
            self.commit(&tmp, &sha, &Expect::Sha256(sha.clone()))?;
        }
        Ok((sha, to))
    }
}

fn make_writable(path: &Path) -> io::Result<()> {
    use std::os::unix::fs::PermissionsExt;
    let mut p = fs::metadata(path)?.permissions();
    p.set_mode(p.mode() | 0o200);
    fs::set_permissions(path, p)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn commit_then_reuse_then_rot() {
        let dir = tempfile::tempdir().unwrap();
        let c = Cache::open(dir.path()).unwrap();
        let body = b"hello\n";
        let e = Expect::GitBlobSha1(GitOid::of_blob(body));
        assert_eq!(c.bytes_present(&e, 6), 0);
        let p = c.partial_path(&e);
        fs::write(&p, body).unwrap();
        assert_eq!(c.bytes_present(&e, 6), 6);
        let sha = Sha256::of(body);
        c.commit(&p, &sha, &e).unwrap();
        assert_eq!(c.known_sha256(&e).as_deref(), Some(sha.as_str()));
        let (got, path) = c.reuse(&e, 6).unwrap().unwrap();
        assert_eq!(got, sha);
        assert_eq!(fs::read(&path).unwrap(), body);
        assert!(fs::metadata(&path).unwrap().permissions().readonly());

        // Damage on disk is found and the entry dropped.
        make_writable(&path).unwrap();
        fs::write(&path, b"hellO\n").unwrap();
        assert!(c.reuse(&e, 6).unwrap().is_none());
        assert!(!path.exists());
        assert!(c.known_sha256(&Expect::Sha256(sha)).is_none());
    }

    #[test]
    fn put_bytes_is_idempotent() {
        let dir = tempfile::tempdir().unwrap();
        let c = Cache::open(dir.path()).unwrap();
        let (a, p) = c.put_bytes(b"sums").unwrap();
        let (b, _) = c.put_bytes(b"sums").unwrap();
        assert_eq!(a, b);
        assert_eq!(fs::read(p).unwrap(), b"sums");
        assert!(c.reuse(&Expect::Sha256(a), 4).unwrap().is_some());
    }
}
