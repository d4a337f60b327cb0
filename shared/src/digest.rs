//! The digests publishers give and the ones this project computes.
//!
//! Everything is hashed while its bytes stream past, once: sha256 is the
//! store's address for every blob, and a Hugging Face file that is not in
//! LFS is only vouched for by its git blob sha1, so both can be computed in
//! the same pass. [`HashReader`] is that pass for anything read: the one
//! read-and-hash loop.

use std::io::{self, Read};

use sha1::Sha1;
use sha2::{Digest, Sha256};

use crate::ids::{self, GitOid};

/// sha256 of a byte slice, as 64 lower-case hex digits.
pub fn sha256_hex(bytes: &[u8]) -> String {
    hex::encode(Sha256::digest(bytes))
}

/// The git blob id of content: sha1 over `blob <len>\0` and the bytes, the
/// same as `git hash-object`.
pub fn git_blob_sha1_hex(bytes: &[u8]) -> String {
    let mut h = GitBlobHasher::new(bytes.len() as u64);
    h.update(bytes);
    h.finalize_hex()
}

impl GitOid {
    /// The git blob id of content (`git hash-object`).
    pub fn of_blob(bytes: &[u8]) -> Self {
        let mut h = GitBlobHasher::new(bytes.len() as u64);
        h.update(bytes);
        h.finalize()
    }
}

/// A streaming git blob sha1: git hashes a header with the length first, so
/// the length must be known before the first byte.
pub struct GitBlobHasher(Sha1);

impl GitBlobHasher {
    /// Starts the hash of a blob of `len` bytes.
    pub fn new(len: u64) -> Self {
        let mut h = Sha1::new();
        h.update(format!("blob {len}\0").as_bytes());
        Self(h)
    }

    /// Feeds the next bytes of the blob.
    pub fn update(&mut self, bytes: &[u8]) {
        self.0.update(bytes);
    }

    /// The blob id as 40 lower-case hex digits.
    pub fn finalize_hex(self) -> String {
        hex::encode(self.0.finalize())
    }

    /// The blob id.
    pub fn finalize(self) -> GitOid {
        GitOid::from_bytes(&self.0.finalize().into())
    }
}

/// sha256 and, optionally, the git blob sha1 of the same stream.
pub struct StreamHasher {
    sha256: Sha256,
    git: Option<GitBlobHasher>,
    len: u64,
}

/// What a [`StreamHasher`] saw.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct StreamDigest {
    /// The sha256 of every byte seen: the blob's name.
    pub sha256: ids::Sha256,
    /// The git blob sha1 (`blob <len>\0` and the bytes), when one was asked for: what the Hub lists as a file's `oid`.
    pub git_blob_sha1: Option<GitOid>,
    /// How many bytes were seen.
    pub len: u64,
}

impl StreamHasher {
    /// Hashes sha256 only.
    pub fn sha256() -> Self {
        Self {
            sha256: Sha256::new(),
            git: None,
            len: 0,
        }
    }

    /// Hashes sha256 and the git blob sha1 of a blob expected to be
    /// `expected_len` bytes long (the sha1 is only right if it is).
    pub fn with_git_blob(expected_len: u64) -> Self {
        Self {
            sha256: Sha256::new(),
            git: Some(GitBlobHasher::new(expected_len)),
            len: 0,
        }
    }

    /// Feeds the next bytes to every hash at once, so a file is read once.
    pub fn update(&mut self, bytes: &[u8]) {
        self.sha256.update(bytes);
        if let Some(g) = &mut self.git {
            g.update(bytes);
        }
        self.len += bytes.len() as u64;
    }

    /// Bytes seen so far.
    pub fn len(&self) -> u64 {
        self.len
    }

    /// Whether no byte was seen yet.
    pub fn is_empty(&self) -> bool {
        self.len == 0
    }

    /// The digests of everything seen.
    pub fn finalize(self) -> StreamDigest {
        StreamDigest {
            sha256: ids::Sha256::from_bytes(&self.sha256.finalize().into()),
            git_blob_sha1: self.git.map(GitBlobHasher::finalize),
            len: self.len,
        }
    }
}

/// What a [`HashReader`] feeds: a hash that takes bytes in order.
pub trait Feed {
    fn feed(&mut self, bytes: &[u8]);
}

impl Feed for StreamHasher {
    fn feed(&mut self, bytes: &[u8]) {
        self.update(bytes);
    }
}

impl Feed for Sha256 {
    fn feed(&mut self, bytes: &[u8]) {
        Digest::update(self, bytes);
    }
}

/// A reader that hashes every byte read through it (as uv-extract's
/// `HashReader` does): wrap the file, read it as usual (or
/// [`HashReader::drain`] it), then take the hash with
/// [`HashReader::into_hasher`].
pub struct HashReader<R, H> {
    inner: R,
    hasher: H,
    len: u64,
}

impl<R: Read, H: Feed> HashReader<R, H> {
    /// Reads `inner`, feeding `hasher` every byte read.
    pub fn new(inner: R, hasher: H) -> Self {
        Self {
            inner,
            hasher,
            len: 0,
        }
    }

    /// Reads to the end, hashing and dropping the bytes, 1 MiB at a time;
    /// answers with the bytes read by this call.
    pub fn drain(&mut self) -> io::Result<u64> {
        let mut buf = vec![0u8; 1 << 20];
        let mut n = 0u64;
        loop {
            match self.read(&mut buf) {
                Ok(0) => return Ok(n),
                Ok(k) => n += k as u64,
                Err(e) if e.kind() == io::ErrorKind::Interrupted => {}
                Err(e) => return Err(e),
            }
        }
    }

    /// Bytes read through so far.
    pub fn len(&self) -> u64 {
        self.len
    }

    /// Whether no byte was read through yet.
    pub fn is_empty(&self) -> bool {
        self.len == 0
    }

    /// The hash of what was read, and the reader.
    pub fn into_parts(self) -> (R, H) {
        (self.inner, self.hasher)
    }

    /// The hash of what was read.
    pub fn into_hasher(self) -> H {
        self.hasher
    }
}

impl<R: Read, H: Feed> Read for HashReader<R, H> {
    fn read(&mut self, buf: &mut [u8]) -> io::Result<usize> {
        let n = self.inner.read(buf)?;
        self.hasher.feed(&buf[..n]);
        self.len += n as u64;
        Ok(n)
    }
}

/// The text of a Git LFS pointer file for content with this sha256 and size.
///
/// The Hub's tree lists an LFS file's `oid` as the git blob sha1 of this
/// pointer, and a mirror must give the same.
pub fn lfs_pointer(sha256: &str, size: u64) -> String {
    format!("version https://git-lfs.github.com/spec/v1\noid sha256:{sha256}\nsize {size}\n")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn known_values() {
        assert_eq!(
            sha256_hex(b"abc"),
            "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad"
        );
        // `printf 'hello\n' | git hash-object --stdin`
        assert_eq!(
            git_blob_sha1_hex(b"hello\n"),
            "ce013625030ba8dba906f756967f9e9ca394464a"
        );
        // `git hash-object /dev/null`
        assert_eq!(
            git_blob_sha1_hex(b""),
            "e69de29bb2d1d6434b8b29ae775ad8c2e48c5391"
        );
    }

    #[test]
    fn streaming_equals_one_shot() {
        let data: Vec<u8> = (0..100_000u32).map(|i| (i % 251) as u8).collect();
        let mut h = StreamHasher::with_git_blob(data.len() as u64);
        for chunk in data.chunks(777) {
            h.update(chunk);
        }
        let d = h.finalize();
        assert_eq!(d.sha256, sha256_hex(&data));
        assert_eq!(
            d.git_blob_sha1.as_deref(),
            Some(git_blob_sha1_hex(&data).as_str())
        );
        assert_eq!(d.len, data.len() as u64);
    }

    #[test]
    fn the_hash_reader_hashes_what_it_reads() {
        let data: Vec<u8> = (0..3_000_000u32).map(|i| (i % 253) as u8).collect();
        let mut r = HashReader::new(&data[..], StreamHasher::with_git_blob(data.len() as u64));
        let mut first = [0u8; 1000];
        r.read_exact(&mut first).unwrap();
        assert_eq!(r.drain().unwrap(), data.len() as u64 - 1000);
        assert_eq!(r.len(), data.len() as u64);
        let d = r.into_hasher().finalize();
        assert_eq!(d.sha256, sha256_hex(&data));
        assert_eq!(
            d.git_blob_sha1.as_deref(),
            Some(git_blob_sha1_hex(&data).as_str())
        );
        let mut r = HashReader::new(&b"abc"[..], Sha256::new());
        r.drain().unwrap();
        assert_eq!(
            hex::encode(r.into_hasher().finalize()),
            "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad"
        );
    }

    #[test]
    fn pointer_size_matches_the_hub() {
        // protocols.md: 131 bytes for a 6-digit size.
        assert_eq!(lfs_pointer(&"a".repeat(64), 300_000).len(), 131);
    }
}
