//! A file's Xet record: what a content server needs to answer for it, kept
//! per blob in a compact binary form (about 64 KiB per GiB of file: four
//! bytes a chunk, 36 a xorb).
//!
//! ```text
//! "LLMGWXET" version:u32=1 size:u64 file_hash:[32] chunks:u64 xorbs:u32
//! xorbs × (hash:[32] chunks:u32)  chunks × (len:u32)      all little-endian
//! ```
//!
//! Invariant: [`XetRecord::decode`] accepts only a record whose chunk
//! lengths add up to the size it is read for, each between 1 byte and the
//! chunker's largest, whose xorbs hold at least one chunk each and cover
//! every chunk, and that has no byte more or less than it says; so every
//! offset the server computes from it lies inside the file.

use super::{CHUNK_HEADER_LEN, max_chunk_len};
use crate::XetHash;

const MAGIC: &[u8; 8] = b"LLMGWXET";
const VERSION: u32 = 1;
/// magic, version, size, file hash, chunk count, xorb count.
const HEAD_LEN: usize = 8 + 4 + 8 + 32 + 8 + 4;

/// A record that is not one this version wrote for this file.
#[derive(Debug, thiserror::Error)]
#[error("the Xet record of a {size}-byte file is damaged: {why}")]
pub struct RecordError {
    /// The size of the file it was read for.
    pub size: u64,
    /// What is wrong.
    pub why: String,
}

/// A run of consecutive chunks served as one xorb.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Xorb {
    /// Its hash (the Merkle hash of its chunks).
    pub hash: XetHash,
    /// How many chunks it holds.
    pub chunks: u32,
}

/// Where a xorb lies: its chunks, and their bytes in the file.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct XorbSpan {
    /// Its index in [`XetRecord::xorbs`].
    pub index: usize,
    /// Its first chunk's index in the file.
    pub first_chunk: usize,
    /// One past its last chunk's index in the file.
    pub end_chunk: usize,
}

/// A file's Xet hash, chunks and xorbs.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct XetRecord {
    /// The file's hash (`xetHash`).
    pub file_hash: XetHash,
    /// Each chunk's length, in order.
    chunk_lens: Vec<u32>,
    /// The xorbs, in order.
    pub xorbs: Vec<Xorb>,
    /// Where each chunk starts in the file, and the file's size last.
    starts: Vec<u64>,
    /// Each xorb's first chunk, and the chunk count last.
    xorb_starts: Vec<usize>,
}

impl XetRecord {
    /// A record of these chunks and xorbs (the hasher's; trusted).
    pub(super) fn new(file_hash: XetHash, chunk_lens: Vec<u32>, xorbs: Vec<Xorb>) -> Self {
        let starts = prefix(chunk_lens.iter().map(|l| u64::from(*l)));
        let xorb_starts = prefix(xorbs.iter().map(|x| x.chunks as usize));
        Self {
            file_hash,
            chunk_lens,
            xorbs,
            starts,
            xorb_starts,
        }
    }

    /// The file's size in bytes.
    pub fn size(&self) -> u64 {
        self.starts.last().copied().unwrap_or_default()
    }

    /// How many chunks the file has.
    pub fn chunk_count(&self) -> usize {
        self.chunk_lens.len()
    }

    /// Chunk `i`'s length.
    pub fn chunk_len(&self, i: usize) -> u32 {
        self.chunk_lens[i]
    }

    /// Where chunk `i` starts in the file (`i == chunk_count()`: the size).
    pub fn chunk_start(&self, i: usize) -> u64 {
        self.starts[i]
    }

    /// The chunk that holds byte `offset` (which is below the size).
    pub fn chunk_at(&self, offset: u64) -> usize {
        self.starts.partition_point(|s| *s <= offset) - 1
    }

    /// Xorb `x`'s place.
    pub fn span(&self, x: usize) -> XorbSpan {
        XorbSpan {
            index: x,
            first_chunk: self.xorb_starts[x],
            end_chunk: self.xorb_starts[x + 1],
        }
    }

    /// The xorb that holds chunk `c`.
    pub fn xorb_of(&self, c: usize) -> usize {
        self.xorb_starts.partition_point(|s| *s <= c) - 1
    }

    /// The xorb of this hash, if the file has one.
    pub fn xorb_named(&self, hash: &XetHash) -> Option<usize> {
        self.xorbs.iter().position(|x| &x.hash == hash)
    }

    /// How many bytes chunks `from..to` of the file take in their xorb:
    /// each chunk's header and bytes.
    pub fn packed_len(&self, from: usize, to: usize) -> u64 {
        (self.starts[to] - self.starts[from]) + CHUNK_HEADER_LEN * (to - from) as u64
    }

    /// The lengths of chunks `from..to`, in order.
    pub fn chunk_lens(&self, from: usize, to: usize) -> &[u32] {
        &self.chunk_lens[from..to]
    }

    /// The file size and hash a record's first bytes name, without reading
    /// the rest (an index of many files reads only this much of each);
    /// `None` when `head` is not the start of a record this version wrote.
    /// The record is checked whole when it is read to be served.
    pub fn peek(head: &[u8]) -> Option<(u64, XetHash)> {
        let mut r = Reader { bytes: head, at: 0 };
        if r.take(8)? != MAGIC.as_slice() || r.u32()? != VERSION {
            return None;
        }
        let size = r.u64()?;
        Some((size, r.hash()?))
    }

    /// How many bytes [`XetRecord::peek`] reads: magic, version, size
    /// and file hash.
    pub const PEEK_LEN: usize = 8 + 4 + 8 + 32;

    /// The record's bytes.
    pub fn encode(&self) -> Vec<u8> {
        let mut out =
            Vec::with_capacity(HEAD_LEN + self.xorbs.len() * 36 + self.chunk_lens.len() * 4);
        out.extend_from_slice(MAGIC);
        out.extend_from_slice(&VERSION.to_le_bytes());
        out.extend_from_slice(&self.size().to_le_bytes());
        out.extend_from_slice(&hash_bytes(&self.file_hash));
        out.extend_from_slice(&(self.chunk_lens.len() as u64).to_le_bytes());
        out.extend_from_slice(&(self.xorbs.len() as u32).to_le_bytes());
        for x in &self.xorbs {
            out.extend_from_slice(&hash_bytes(&x.hash));
            out.extend_from_slice(&x.chunks.to_le_bytes());
        }
        for len in &self.chunk_lens {
            out.extend_from_slice(&len.to_le_bytes());
        }
        out
    }

    /// The record in `bytes`, read for a file of `size` bytes.
    pub fn decode(bytes: &[u8], size: u64) -> Result<Self, RecordError> {
        let bad = |why: String| RecordError { size, why };
        let mut r = Reader { bytes, at: 0 };
        if r.take(8) != Some(MAGIC.as_slice()) {
            return Err(bad("it does not start with LLMGWXET".into()));
        }
        let version = r.u32().unwrap_or_default();
        if version != VERSION {
            return Err(bad(format!(
                "version {version}, this mirror reads {VERSION}"
            )));
        }
        let said = r.u64().unwrap_or_default();
        if said != size {
            return Err(bad(format!("it describes {said} bytes")));
        }
        let file_hash = r.hash().ok_or_else(|| bad("it is cut short".into()))?;
        let (chunks, xorbs) = (r.u64().unwrap_or(u64::MAX), r.u32().unwrap_or(u32::MAX));
        let need = (xorbs as u64) * 36 + chunks.saturating_mul(4);
        if need != (bytes.len() - r.at.min(bytes.len())) as u64 {
            return Err(bad(format!(
                "it lists {chunks} chunks and {xorbs} xorbs in {} bytes",
                bytes.len()
            )));
        }
        let mut list = Vec::with_capacity(xorbs as usize);
        for _ in 0..xorbs {
            let (hash, n) = (r.hash(), r.u32());
            let (Some(hash), Some(n @ 1..)) = (hash, n) else {
                return Err(bad("a xorb holds no chunk".into()));
            };
            list.push(Xorb { hash, chunks: n });
        }
        let lens: Vec<u32> = (0..chunks).filter_map(|_| r.u32()).collect();
        if lens
            .iter()
            .any(|l| *l == 0 || u64::from(*l) > max_chunk_len())
        {
            return Err(bad(
                "a chunk is empty or longer than the chunker makes".into()
            ));
        }
        let covered: u64 = list.iter().map(|x| u64::from(x.chunks)).sum();
        let total: u64 = lens.iter().map(|l| u64::from(*l)).sum();
        if covered != chunks || total != size {
            return Err(bad(format!(
                "its xorbs cover {covered} of {chunks} chunks, which hold {total} bytes"
            )));
        }
        Ok(Self::new(file_hash, lens, list))
    }
}

/// 0 and each running total.
fn prefix<T: Copy + Default + std::ops::Add<Output = T>>(items: impl Iterator<Item = T>) -> Vec<T> {
    let mut out = vec![T::default()];
    let mut sum = T::default();
    for i in items {
        sum = sum + i;
        out.push(sum);
    }
    out
}

fn hash_bytes(h: &XetHash) -> [u8; 32] {
    let mut out = [0u8; 32];
    // A XetHash is 64 hex digits by type.
    let _ = hex::decode_to_slice(h.as_str(), &mut out);
    out
}

/// Reads the record's fields in order; `None` past its end.
struct Reader<'a> {
    bytes: &'a [u8],
    at: usize,
}

impl<'a> Reader<'a> {
    fn take(&mut self, n: usize) -> Option<&'a [u8]> {
        let out = self.bytes.get(self.at..self.at.checked_add(n)?)?;
        self.at += n;
        Some(out)
    }
    fn u32(&mut self) -> Option<u32> {
        Some(u32::from_le_bytes(self.take(4)?.try_into().ok()?))
    }
    fn u64(&mut self) -> Option<u64> {
        Some(u64::from_le_bytes(self.take(8)?.try_into().ok()?))
    }
    fn hash(&mut self) -> Option<XetHash> {
        Some(XetHash::from_bytes(self.take(32)?.try_into().ok()?))
    }
}
