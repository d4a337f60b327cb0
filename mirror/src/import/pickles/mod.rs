//! Whether a file loads with pickle, from its bytes, and which rule says
//! so: its name ends in a pickle extension; or its first bytes are a
//! pickle of any protocol, 0 to 5 (`PROTO` 2 to 5, or a walk of pickle's
//! opcodes: [`opcodes`]); or they are numpy's `.npy` header of an object
//! array ([`npy`]); or it is gzip, bzip2, xz or zstd and its decompressed
//! head is one of those or a tar holding one ([`compressed`]); or it is a
//! zip (as `torch.save` writes, under any name) naming a `.pkl` or
//! `.pickle` entry or holding any member whose first bytes are a pickle
//! ([`zip`]); or it is a tar (`torch.save`'s legacy format: `sys_info`,
//! `pickle`, `storages`, `tensors`) holding such a member ([`tar`]).
//!
//! Invariant: every read is bounded, whatever the file's size: [`HEAD`]
//! bytes of head; for a compressed file at most [`MAX_COMPRESSED_READ`]
//! bytes read and [`HEAD`] decompressed; for a zip its last 64 KiB + 22
//! bytes, a central directory of at most [`zip::MAX_CENTRAL_DIRECTORY`],
//! and of at most [`MAX_MEMBERS`] members each a local header and a
//! [`HEAD`] of data (decompressed from at most [`MAX_COMPRESSED_READ`]),
//! [`MAX_MEMBER_READ`] in all; for a tar at most [`MAX_MEMBERS`] headers
//! and a [`HEAD`] of each. A member or file past those bounds, or too
//! damaged to read, counts as no pickle found by content (its extension
//! still counts).

mod compressed;
mod npy;
mod opcodes;
mod tar;
mod zip;

use std::cell::Cell;
use std::io::Read;
use std::ops::Range;

/// The bytes of a file (or of a zip member) looked at for a pickle.
pub const HEAD: u64 = 4096;

/// At most this much of a compressed stream is read to decompress its
/// [`HEAD`] (a bzip2 block holds up to 900 kB; its first comes whole).
pub const MAX_COMPRESSED_READ: u64 = 2 << 20;

/// Zip or tar members whose content is looked at.
pub const MAX_MEMBERS: usize = 4096;

/// All the reads of a zip's members together.
pub const MAX_MEMBER_READ: u64 = 64 << 20;

/// The extensions of files that load with pickle.
pub const PICKLE_EXTENSIONS: [&str; 7] =
    [".bin", ".pt", ".pth", ".pkl", ".pickle", ".ckpt", ".joblib"];

/// Reads a range of a file (fewer bytes at its end).
pub type ReadRange<'a> = dyn Fn(Range<u64>) -> std::io::Result<Vec<u8>> + 'a;

/// Why a file counts as a pickle: the rule that matched.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum PickleSign {
    /// Its name ends in one of [`PICKLE_EXTENSIONS`].
    Extension(&'static str),
    /// It starts with pickle protocol `N`'s `PROTO` opcode (2 to 5).
    Protocol(u8),
    /// Its first bytes walk as pickle opcodes of protocol `N` at most,
    /// with no `PROTO` opcode (as protocols 0 and 1 write).
    Opcodes(u8),
    /// It is numpy's `.npy` of an object array: a pickle after the header.
    NumpyObject,
    /// It is compressed (`gzip`, `bzip2`, `xz`, `zstd`) and its
    /// decompressed head is a pickle.
    Compressed(&'static str, Box<PickleSign>),
    /// It is a zip naming this pickle entry (`.pkl`, `.pickle`).
    ZipEntry(String),
    /// It is a zip whose member (named) is a pickle.
    ZipMember(String, Box<PickleSign>),
    /// It is a tar whose member (named) is a pickle.
    TarMember(String, Box<PickleSign>),
}

impl PickleSign {
    /// What the file does, after "it ".
    fn predicate(&self) -> String {
        let shown = |n: &str| llmgw_shared::shown(n).to_string();
        match self {
            PickleSign::Extension(e) => format!("has the extension {e}"),
            PickleSign::Protocol(p) => format!("starts with pickle protocol {p}'s opcode"),
            PickleSign::Opcodes(p) => format!(
                "starts with a pickle of protocol {p}, found by walking its opcodes, with no \
                 PROTO opcode"
            ),
            PickleSign::NumpyObject => {
                "is a numpy .npy array of Python objects, dtype 'O', whose data is a pickle".into()
            }
            PickleSign::Compressed(f, inner) => {
                format!(
                    "is {f}-compressed, and decompressed it {}",
                    inner.predicate()
                )
            }
            PickleSign::ZipEntry(n) => format!("is a zip holding the pickle {}", shown(n)),
            PickleSign::ZipMember(n, inner) => {
                format!("is a zip whose member {} {}", shown(n), inner.predicate())
            }
            PickleSign::TarMember(n, inner) => {
                format!("is a tar whose member {} {}", shown(n), inner.predicate())
            }
        }
    }
}

impl std::fmt::Display for PickleSign {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            PickleSign::Extension(e) => write!(f, "its extension is {e}"),
            other => write!(f, "it {}", other.predicate()),
        }
    }
}

/// The extension sign of `path`, if any.
pub fn by_extension(path: &str) -> Option<PickleSign> {
    let lower = path.to_ascii_lowercase();
    PICKLE_EXTENSIONS
        .iter()
        .find(|e| lower.ends_with(*e))
        .map(|e| PickleSign::Extension(e))
}

/// The content sign of a file of `size` bytes, read through `read`.
pub fn by_content(size: u64, read: &ReadRange<'_>) -> std::io::Result<Option<PickleSign>> {
    let head = read(0..size.min(HEAD))?;
    let whole = head.len() as u64 >= size;
    if let Some(p) = declared_protocol(&head) {
        return Ok(Some(PickleSign::Protocol(p)));
    }
    if head.starts_with(zip::LOCAL_HEADER) {
        return zip::sign(size, read);
    }
    if tar::is_tar(&head) {
        return tar::sign(size, read);
    }
    if let Some(format) = compressed::Format::of(&head) {
        let budget = Cell::new(MAX_COMPRESSED_READ);
        let src = RangeReader::new(read, 0..size, &budget);
        let (plain, whole) = compressed::head(format, src, HEAD as usize);
        let inner = match head_sign(&plain, whole) {
            Some(s) => Some(s),
            None if tar::is_tar(&plain) => {
                let slice = |r: Range<u64>| Ok(slice_of(&plain, r));
                tar::sign(plain.len() as u64, &slice)?
            }
            None => None,
        };
        return Ok(inner.map(|s| PickleSign::Compressed(format.word(), Box::new(s))));
    }
    Ok(head_sign(&head, whole))
}

/// The sign of the first bytes of a file or member, by themselves: a
/// `PROTO` opcode, a `.npy` object header, or a walk of pickle opcodes.
/// `whole`: `head` is all there is.
fn head_sign(head: &[u8], whole: bool) -> Option<PickleSign> {
    if let Some(p) = declared_protocol(head) {
        return Some(PickleSign::Protocol(p));
    }
    if npy::object_dtype(head) {
        return Some(PickleSign::NumpyObject);
    }
    opcodes::protocol(head, whole).map(PickleSign::Opcodes)
}

/// The protocol of a `PROTO` opcode at the start (2 to 5).
fn declared_protocol(head: &[u8]) -> Option<u8> {
    match head {
        [0x80, p @ 2..=5, ..] => Some(*p),
        _ => None,
    }
}

/// `range` of `bytes`, as far as they go.
fn slice_of(bytes: &[u8], range: Range<u64>) -> Vec<u8> {
    let len = bytes.len() as u64;
    let (start, end) = (range.start.min(len), range.end.min(len));
    bytes
        .get(start as usize..end as usize)
        .unwrap_or_default()
        .to_vec()
}

/// A part of a file as a reader, through a [`ReadRange`], taking at most
/// `budget` bytes (shared by the readers of one file).
struct RangeReader<'a> {
    read: &'a ReadRange<'a>,
    at: u64,
    end: u64,
    budget: &'a Cell<u64>,
}

impl<'a> RangeReader<'a> {
    fn new(read: &'a ReadRange<'a>, range: Range<u64>, budget: &'a Cell<u64>) -> Self {
        Self {
            read,
            at: range.start,
            end: range.end,
            budget,
        }
    }
}

impl Read for RangeReader<'_> {
    fn read(&mut self, buf: &mut [u8]) -> std::io::Result<usize> {
        let want = (buf.len() as u64)
            .min(self.end.saturating_sub(self.at))
            .min(self.budget.get());
        if want == 0 {
            return Ok(0);
        }
        let got = (self.read)(self.at..self.at + want)?;
        let n = got.len().min(want as usize);
        buf[..n].copy_from_slice(&got[..n]);
        self.at += n as u64;
        self.budget.set(self.budget.get() - n as u64);
        Ok(n)
    }
}

/// Reads `range` of a file.
pub fn read_file_range(path: &std::path::Path, range: Range<u64>) -> std::io::Result<Vec<u8>> {
    use std::io::{Seek, SeekFrom};
    let mut f = std::fs::File::open(path)?;
    f.seek(SeekFrom::Start(range.start))?;
    let mut out = Vec::new();
    f.take(range.end.saturating_sub(range.start))
        .read_to_end(&mut out)?;
    Ok(out)
}

#[cfg(test)]
mod tests;
