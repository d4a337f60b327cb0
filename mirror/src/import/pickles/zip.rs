//! A zip's pickles (`torch.save`'s format, under any name): an entry
//! named `.pkl` or `.pickle` in its central directory (zip64 included), or
//! any member whose first bytes are a pickle (stored, deflated, bzip2 or
//! zstd).
//!
//! Invariant: the last 64 KiB + 22 bytes (where the end record is), a
//! central directory of at most [`MAX_CENTRAL_DIRECTORY`], and of at most
//! [`MAX_MEMBERS`] members the local header and [`HEAD`] bytes of data
//! (decompressed from at most [`MAX_COMPRESSED_READ`]) are read,
//! [`MAX_MEMBER_READ`] in all; a zip too damaged to read counts as holding
//! no pickle.

use std::cell::Cell;

use super::{
    HEAD, MAX_COMPRESSED_READ, MAX_MEMBER_READ, MAX_MEMBERS, PickleSign, RangeReader, ReadRange,
    compressed, head_sign,
};

/// A central directory larger than this is not read (a `torch.save` zip
/// of ten thousand tensors has well under 2 MiB).
pub const MAX_CENTRAL_DIRECTORY: u64 = 64 << 20;

/// What a zip starts with: a local file header.
pub const LOCAL_HEADER: &[u8] = b"PK\x03\x04";

/// A member, as its central directory entry says.
struct Entry {
    name: String,
    flags: u64,
    method: u64,
    compressed: u64,
    size: u64,
    offset: u64,
}

/// The sign of the zip of `size` bytes read through `read`: a pickle's
/// name first, else a member's content.
pub fn sign(size: u64, read: &ReadRange<'_>) -> std::io::Result<Option<PickleSign>> {
    let Some((cd_offset, cd_size)) = central_directory(size, read)? else {
        return Ok(None);
    };
    let cd = read(cd_offset..cd_offset + cd_size)?;
    let entries = entries(&cd);
    if let Some(e) = entries.iter().find(|e| {
        let lower = e.name.to_ascii_lowercase();
        lower.ends_with(".pkl") || lower.ends_with(".pickle")
    }) {
        return Ok(Some(PickleSign::ZipEntry(e.name.clone())));
    }
    let budget = Cell::new(MAX_MEMBER_READ);
    for e in entries.iter().take(MAX_MEMBERS) {
        if budget.get() == 0 {
            break;
        }
        if let Some(s) = member(e, size, read, &budget)? {
            return Ok(Some(PickleSign::ZipMember(e.name.clone(), Box::new(s))));
        }
    }
    Ok(None)
}

/// The sign of one member's first bytes; `None` for a directory, an empty
/// or encrypted member, a method other than stored, deflate, bzip2 and
/// zstd, or a local header that does not read.
fn member(
    e: &Entry,
    size: u64,
    read: &ReadRange<'_>,
    budget: &Cell<u64>,
) -> std::io::Result<Option<PickleSign>> {
    if e.name.ends_with('/') || e.size == 0 || e.flags & 1 != 0 {
        return Ok(None);
    }
    let Some(local_end) = e.offset.checked_add(30).filter(|&end| end <= size) else {
        return Ok(None);
    };
    let local = read(e.offset..local_end)?;
    budget.set(budget.get().saturating_sub(30));
    let (Some(n), Some(x)) = (u16_at(&local, 26), u16_at(&local, 28)) else {
        return Ok(None);
    };
    if !local.starts_with(LOCAL_HEADER) {
        return Ok(None);
    }
    let start = local_end + n + x;
    let end = start
        .saturating_add(e.compressed.min(MAX_COMPRESSED_READ))
        .min(size);
    let limit = HEAD as usize;
    let (head, whole) = match e.method {
        0 => {
            let take = end.saturating_sub(start).min(HEAD).min(budget.get());
            let head = if take == 0 {
                Vec::new()
            } else {
                read(start..start + take)?
            };
            budget.set(budget.get() - take);
            (head, true)
        }
        8 => compressed::inflate(RangeReader::new(read, start..end, budget), limit),
        12 => compressed::head(
            compressed::Format::Bzip2,
            RangeReader::new(read, start..end, budget),
            limit,
        ),
        93 => compressed::head(
            compressed::Format::Zstd,
            RangeReader::new(read, start..end, budget),
            limit,
        ),
        _ => return Ok(None),
    };
    // Whole: the member is no longer than what was read of it.
    let whole = whole && head.len() as u64 == e.size;
    Ok(head_sign(&head, whole))
}

/// A central directory's entries (as far as it reads well), with the
/// zip64 extra field's sizes and offset where the entry defers to it.
fn entries(cd: &[u8]) -> Vec<Entry> {
    let mut out = Vec::new();
    let mut at = 0usize;
    while cd.get(at..at + 4) == Some(b"PK\x01\x02") {
        let field = |o: usize| u16_at(cd, at + o);
        let (Some(n), Some(x), Some(c)) = (field(28), field(30), field(32)) else {
            break;
        };
        let (n, x, c) = (n as usize, x as usize, c as usize);
        let (Some(flags), Some(method)) = (field(8), field(10)) else {
            break;
        };
        let (Some(compressed), Some(size), Some(offset)) = (
            u32_at(cd, at + 20),
            u32_at(cd, at + 24),
            u32_at(cd, at + 42),
        ) else {
            break;
        };
        let Some(name) = cd.get(at + 46..at + 46 + n) else {
            break;
        };
        let extra = cd.get(at + 46 + n..at + 46 + n + x).unwrap_or_default();
        let mut e = Entry {
            name: String::from_utf8_lossy(name).into_owned(),
            flags,
            method,
            compressed,
            size,
            offset,
        };
        zip64(&mut e, extra);
        out.push(e);
        at += 46 + n + x + c;
    }
    out
}

/// The zip64 extra field (0x0001) of an entry: its 8-byte values, in
/// order, for each of size, compressed size and offset that is 0xFFFFFFFF.
fn zip64(e: &mut Entry, extra: &[u8]) {
    let mut at = 0usize;
    while let (Some(id), Some(len)) = (u16_at(extra, at), u16_at(extra, at + 2)) {
        let len = len as usize;
        if id == 1 {
            let mut v = at + 4;
            for field in [&mut e.size, &mut e.compressed, &mut e.offset] {
                if *field == 0xFFFF_FFFF {
                    match u64_at(extra, v).filter(|_| v + 8 <= at + 4 + len) {
                        Some(value) => *field = value,
                        None => return,
                    }
                    v += 8;
                }
            }
            return;
        }
        at += 4 + len;
    }
}

fn u16_at(b: &[u8], at: usize) -> Option<u64> {
    b.get(at..at + 2)
        .map(|s| u64::from(u16::from_le_bytes([s[0], s[1]])))
}

fn u32_at(b: &[u8], at: usize) -> Option<u64> {
    b.get(at..at + 4)
        .map(|s| u64::from(u32::from_le_bytes([s[0], s[1], s[2], s[3]])))
}

fn u64_at(b: &[u8], at: usize) -> Option<u64> {
    let s = b.get(at..at + 8)?;
    let mut a = [0u8; 8];
    a.copy_from_slice(s);
    Some(u64::from_le_bytes(a))
}

/// Where the central directory is and its size, from the end record (and
/// the zip64 one when the end record says so); `None` when there is none
/// or it points outside the file or past the bound.
fn central_directory(size: u64, read: &ReadRange<'_>) -> std::io::Result<Option<(u64, u64)>> {
    let tail_len = size.min(65_557);
    let tail_start = size - tail_len;
    let tail = read(tail_start..size)?;
    let Some(eocd) = (0..tail.len().saturating_sub(21))
        .rev()
        .find(|&i| tail[i..].starts_with(b"PK\x05\x06"))
    else {
        return Ok(None);
    };
    let (mut cd_size, mut cd_offset) = match (u32_at(&tail, eocd + 12), u32_at(&tail, eocd + 16)) {
        (Some(s), Some(o)) => (s, o),
        _ => return Ok(None),
    };
    if cd_size == 0xFFFF_FFFF || cd_offset == 0xFFFF_FFFF {
        // The zip64 locator sits right before the end record.
        let Some(loc) = eocd.checked_sub(20) else {
            return Ok(None);
        };
        if !tail[loc..].starts_with(b"PK\x06\x07") {
            return Ok(None);
        }
        let Some(rec_at) = u64_at(&tail, loc + 8).filter(|r| r + 56 <= size) else {
            return Ok(None);
        };
        let rec = read(rec_at..rec_at + 56)?;
        if !rec.starts_with(b"PK\x06\x06") {
            return Ok(None);
        }
        match (u64_at(&rec, 40), u64_at(&rec, 48)) {
            (Some(s), Some(o)) => (cd_size, cd_offset) = (s, o),
            _ => return Ok(None),
        }
    }
    let fits = cd_size <= MAX_CENTRAL_DIRECTORY
        && cd_offset
            .checked_add(cd_size)
            .is_some_and(|end| end <= size);
    Ok(fits.then_some((cd_offset, cd_size)))
}
