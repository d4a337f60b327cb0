//! The digests publishers give and the ones this project computes.
//!
//! Everything is hashed while its bytes stream past, once: sha256 is the
//! store's address for every blob, and a Hugging Face file that is not in
//! LFS is only vouched for by its git blob sha1, so both can be computed in
//! the same pass.

use sha1::Sha1;
use sha2::{Digest, Sha256};

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
    pub sha256: String,
    pub git_blob_sha1: Option<String>,
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

    pub fn is_empty(&self) -> bool {
        self.len == 0
    }

    pub fn finalize(self) -> StreamDigest {
        StreamDigest {
            sha256: hex::encode(self.sha256.finalize()),
            git_blob_sha1: self.git.map(GitBlobHasher::finalize_hex),
            len: self.len,
        }
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
        assert_eq!(d.git_blob_sha1, Some(git_blob_sha1_hex(&data)));
        assert_eq!(d.len, data.len() as u64);
    }

    #[test]
    fn pointer_size_matches_the_hub() {
        // protocols.md: 131 bytes for a 6-digit size.
        assert_eq!(lfs_pointer(&"a".repeat(64), 300_000).len(), 131);
    }
}
