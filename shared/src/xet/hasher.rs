//! One streaming pass over a file's bytes gives its [`XetRecord`].
//!
//! Invariant: the chunks are exactly those `xet-data`'s `Chunker` cuts
//! whatever the sizes of the pieces the bytes arrive in (the chunker keeps
//! what it has not cut yet), and the file and xorb hashes are
//! `xet-core-structures`' own functions over those chunks; the grouping of
//! chunks into xorbs follows the Hub's limits (at most 64 MiB of packed
//! bytes, at most 8 192 chunks).

use xet_core_structures::merklehash::{MerkleHash, file_hash, xorb_hash};
use xet_core_structures::xorb_object::constants::{MAX_XORB_BYTES, MAX_XORB_CHUNKS};
use xet_data::deduplication::Chunker;

use super::CHUNK_HEADER_LEN;
use super::record::{XetRecord, Xorb};
use crate::XetHash;

/// Hashes a file as it streams: [`XetHasher::update`] with every byte in
/// order, then [`XetHasher::finish`].
pub struct XetHasher {
    chunker: Chunker,
    /// Each chunk's hash and length so far: the file's hash is a tree over
    /// all of them (40 bytes a chunk while hashing, 0.6 MiB a GiB).
    chunks: Vec<(MerkleHash, u64)>,
}

impl Default for XetHasher {
    fn default() -> Self {
        Self::new()
    }
}

impl XetHasher {
    /// A hasher at the file's first byte.
    pub fn new() -> Self {
        Self {
            chunker: Chunker::default(),
            chunks: Vec::new(),
        }
    }

    /// The record of everything `r` reads, to its end (a file at hand).
    pub fn of_reader(mut r: impl std::io::Read) -> std::io::Result<XetRecord> {
        let mut h = Self::new();
        let mut buf = vec![0u8; 1 << 20];
        loop {
            match r.read(&mut buf) {
                Ok(0) => return Ok(h.finish()),
                Ok(n) => h.update(&buf[..n]),
                Err(e) if e.kind() == std::io::ErrorKind::Interrupted => {}
                Err(e) => return Err(e),
            }
        }
    }

    /// The next bytes of the file.
    pub fn update(&mut self, buf: &[u8]) {
        if buf.is_empty() {
            return;
        }
        for c in self.chunker.next_block(buf, false) {
            self.chunks.push((c.hash, c.data.len() as u64));
        }
    }

    /// The next bytes of the file, handed over: the chunker hashes each
    /// chunk where it lies instead of copying it out first (the same
    /// chunks as [`XetHasher::update`]; only the bytes of a chunk that
    /// straddles two buffers are copied).
    pub fn update_owned(&mut self, buf: Vec<u8>) {
        if buf.is_empty() {
            return;
        }
        for c in self
            .chunker
            .next_block_bytes(&bytes::Bytes::from(buf), false)
        {
            self.chunks.push((c.hash, c.data.len() as u64));
        }
    }

    /// Every byte was given: the last chunk is cut, the chunks are packed
    /// into xorbs and every hash is made.
    pub fn finish(mut self) -> XetRecord {
        // What the chunker holds uncut is the last chunk (`next_block` with
        // no bytes and `is_final` would drop it).
        if let Some(c) = self.chunker.finish() {
            self.chunks.push((c.hash, c.data.len() as u64));
        }
        let mut xorbs = Vec::new();
        let mut first = 0;
        let mut packed = 0u64;
        for (i, (_, len)) in self.chunks.iter().enumerate() {
            let count = i - first;
            let full = count == *MAX_XORB_CHUNKS
                || packed + CHUNK_HEADER_LEN + len > *MAX_XORB_BYTES as u64;
            if count > 0 && full {
                xorbs.push(pack(&self.chunks[first..i]));
                first = i;
                packed = 0;
            }
            packed += CHUNK_HEADER_LEN + len;
        }
        if first < self.chunks.len() {
            xorbs.push(pack(&self.chunks[first..]));
        }
        let file = XetHash::from_bytes(&merkle_bytes(&file_hash(&self.chunks)));
        let lens = self.chunks.iter().map(|(_, len)| *len as u32).collect();
        XetRecord::new(file, lens, xorbs)
    }
}

/// A xorb of these chunks.
fn pack(chunks: &[(MerkleHash, u64)]) -> Xorb {
    Xorb {
        hash: XetHash::from_bytes(&merkle_bytes(&xorb_hash(chunks))),
        chunks: chunks.len() as u32,
    }
}

/// A Merkle hash as the bytes whose hex is its `hex()`: its four 64-bit
/// words, each little-endian, as `MerkleHash::hex` prints them.
pub(super) fn merkle_bytes(h: &MerkleHash) -> [u8; 32] {
    let mut out = [0u8; 32];
    let text = h.hex();
    for (i, byte) in out.iter_mut().enumerate() {
        *byte = u8::from_str_radix(&text[2 * i..2 * i + 2], 16).unwrap_or_default();
    }
    out
}
