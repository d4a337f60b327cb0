//! The decompressed head of a gzip, bzip2, xz or zstd stream, each by its
//! maintained decoder (flate2, bzip2 over libbz2-rs-sys, lzma-rust2, zstd).
//!
//! Invariant: at most `limit` bytes are decompressed, and the decoders'
//! memory is bounded (an xz dictionary of at most [`XZ_MEM_LIMIT_KIB`], a
//! zstd window of at most 2^[`ZSTD_WINDOW_LOG_MAX`]); the caller bounds
//! what is read. A stream that fails to decode yields what came before.

use std::io::{BufRead, BufReader, Read};

/// The decoder memory an xz block may ask for, in KiB (`xz -9`'s 64 MiB
/// dictionary and its overhead fit).
pub const XZ_MEM_LIMIT_KIB: u32 = 96 << 10;

/// The largest zstd window decoded (zstd's own default limit).
pub const ZSTD_WINDOW_LOG_MAX: u32 = 27;

/// How much is read from the source at a time.
const CHUNK: usize = 64 << 10;

/// A compression format, known by its magic bytes.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Format {
    Gzip,
    Bzip2,
    Xz,
    Zstd,
}

impl Format {
    /// The format `head` starts with, if any.
    pub fn of(head: &[u8]) -> Option<Format> {
        if head.starts_with(&[0x1f, 0x8b, 0x08]) {
            Some(Format::Gzip)
        } else if head.len() >= 10
            && head.starts_with(b"BZh")
            && (b'1'..=b'9').contains(&head[3])
            && head[4..10] == [0x31, 0x41, 0x59, 0x26, 0x53, 0x59]
        {
            Some(Format::Bzip2)
        } else if head.starts_with(&[0xfd, b'7', b'z', b'X', b'Z', 0x00]) {
            Some(Format::Xz)
        } else if head.starts_with(&[0x28, 0xb5, 0x2f, 0xfd]) {
            Some(Format::Zstd)
        } else {
            None
        }
    }

    /// Its name in a refusal.
    pub fn word(self) -> &'static str {
        match self {
            Format::Gzip => "gzip",
            Format::Bzip2 => "bzip2",
            Format::Xz => "xz",
            Format::Zstd => "zstd",
        }
    }
}

/// At most `limit` bytes of `src` decompressed as `format`, and whether
/// that is the whole stream.
pub fn head(format: Format, src: impl Read, limit: usize) -> (Vec<u8>, bool) {
    let src = BufReader::with_capacity(CHUNK, src);
    match format {
        Format::Gzip => fill(flate2::bufread::GzDecoder::new(src), limit),
        Format::Bzip2 => fill(bzip2::bufread::BzDecoder::new(src), limit),
        Format::Xz => fill(
            lzma_rust2::XzReader::new_mem_limit(src, true, XZ_MEM_LIMIT_KIB),
            limit,
        ),
        Format::Zstd => match zstd_decoder(src) {
            Ok(d) => fill(d, limit),
            Err(_) => (Vec::new(), false),
        },
    }
}

/// A raw deflate stream's head (a zip member of method 8).
pub fn inflate(src: impl Read, limit: usize) -> (Vec<u8>, bool) {
    let src = BufReader::with_capacity(CHUNK.min(limit * 2), src);
    fill(flate2::bufread::DeflateDecoder::new(src), limit)
}

fn zstd_decoder<R: BufRead>(src: R) -> std::io::Result<zstd::stream::read::Decoder<'static, R>> {
    let mut d = zstd::stream::read::Decoder::with_buffer(src)?;
    d.window_log_max(ZSTD_WINDOW_LOG_MAX)?;
    Ok(d)
}

/// Reads `r` until `limit` bytes, its end (the whole stream: `true`) or
/// an error.
fn fill(mut r: impl Read, limit: usize) -> (Vec<u8>, bool) {
    let mut out = vec![0u8; limit];
    let mut n = 0;
    while n < limit {
        match r.read(&mut out[n..]) {
            Ok(0) => {
                out.truncate(n);
                return (out, true);
            }
            Ok(k) => n += k,
            Err(e) if e.kind() == std::io::ErrorKind::Interrupted => {}
            Err(_) => break,
        }
    }
    out.truncate(n);
    // Exactly `limit` bytes: whole only if nothing follows.
    let whole = n == limit && matches!(r.read(&mut [0u8; 1]), Ok(0));
    (out, whole)
}
