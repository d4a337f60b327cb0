//! Xet, the Hub's own transfer format, computed from bytes already held.
//!
//! The Hub stores a large file as content-defined chunks (about 64 KiB
//! each, cut where a rolling hash says), packs runs of chunks into
//! "xorbs" of at most 64 MiB, and names the file by the Merkle hash of its
//! chunks (its `xetHash`). A client (`hf_xet`) asks a content server how to
//! rebuild a file from xorb byte ranges, then fetches those ranges. The
//! mirror holds every file whole under its sha256, so it can answer those
//! questions from the bytes alone: the chunk boundaries and the hashes are
//! a function of the bytes, and a xorb of uncompressed chunks is the file's
//! bytes with an 8-byte header before each chunk.
//!
//! This module makes the one record per file that serving needs
//! ([`XetRecord`]: the file's hash, each chunk's length, each xorb's hash
//! and chunk count) in one streaming pass ([`XetHasher`]), with Hugging
//! Face's own crates doing the chunking and hashing (`xet-data`'s
//! `Chunker`, `xet-core-structures`' `file_hash`/`xorb_hash`, both 1.8.0 of
//! huggingface/xet-core), so the hashes are the Hub's by construction.
//!
//! Invariant: a record's chunk lengths add up to the file's size, each
//! within the chunker's bounds, and its xorbs cover its chunks in order;
//! a record that does not hold this is refused when read
//! ([`XetRecord::decode`]), so the server can trust its arithmetic.

mod hasher;
mod record;

pub use hasher::XetHasher;
pub use record::{RecordError, XetRecord, Xorb};

/// The length of a chunk's header in a xorb: version, compressed length
/// (3 bytes), compression scheme, uncompressed length (3 bytes).
pub const CHUNK_HEADER_LEN: u64 = 8;

/// The 8-byte header that precedes a chunk of `len` bytes stored
/// uncompressed in a xorb, as `xet-core-structures` writes it.
pub fn chunk_header(len: u32) -> [u8; 8] {
    use xet_core_structures::xorb_object::{
        CompressionScheme, XorbChunkHeader, write_chunk_header,
    };
    let header = XorbChunkHeader::new(CompressionScheme::None, len, len);
    let mut out = [0u8; 8];
    let mut w = &mut out[..];
    // Writing 8 bytes into an 8-byte slice cannot fail.
    let _ = write_chunk_header(&mut w, &header);
    out
}

/// The largest chunk the chunker makes (twice its 64 KiB target).
pub fn max_chunk_len() -> u64 {
    *xet_core_structures::xorb_object::constants::MAX_CHUNK_SIZE as u64
}

/// The smallest chunk the chunker makes, but a file's last.
pub fn min_chunk_len() -> u64 {
    use xet_core_structures::xorb_object::constants::{MINIMUM_CHUNK_DIVISOR, TARGET_CHUNK_SIZE};
    (*TARGET_CHUNK_SIZE / *MINIMUM_CHUNK_DIVISOR) as u64
}

#[cfg(test)]
mod tests;
