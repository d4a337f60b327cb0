//! Whether a file loads with pickle, from its bytes: it starts with the
//! pickle `PROTO` opcode (0x80) and a protocol of 2 to 5, or it is a zip
//! (as `torch.save` writes) one of whose entries is a `.pkl`.
//!
//! Invariant: at most 16 bytes of head, the last 64 KiB + 22 bytes (where a
//! zip's end record is) and a central directory of at most
//! [`MAX_CENTRAL_DIRECTORY`] are read, whatever the file's size; a zip too
//! damaged to read counts as no pickle found by content (its extension
//! still counts).

use std::io::Read;
use std::ops::Range;

/// A central directory larger than this is not read (a `torch.save` zip
/// of ten thousand tensors has well under 2 MiB).
pub const MAX_CENTRAL_DIRECTORY: u64 = 64 << 20;

/// The extensions of files that load with pickle.
pub const PICKLE_EXTENSIONS: [&str; 6] = [".bin", ".pt", ".pth", ".pkl", ".ckpt", ".joblib"];

/// Why a file counts as a pickle.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum PickleSign {
    /// Its name ends in one of [`PICKLE_EXTENSIONS`].
    Extension(&'static str),
    /// It starts with pickle protocol `N`'s opcode.
    Protocol(u8),
    /// It is a zip holding this pickle entry.
    ZipEntry(String),
}

impl std::fmt::Display for PickleSign {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            PickleSign::Extension(e) => write!(f, "its extension is {e}"),
            PickleSign::Protocol(p) => write!(f, "it starts with pickle protocol {p}'s opcode"),
            PickleSign::ZipEntry(n) => {
                write!(
                    f,
                    "it is a zip holding the pickle {}",
                    llmgw_shared::shown(n)
                )
            }
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
pub fn by_content(
    size: u64,
    read: &dyn Fn(Range<u64>) -> std::io::Result<Vec<u8>>,
) -> std::io::Result<Option<PickleSign>> {
    let head = read(0..size.min(16))?;
    if head.len() >= 2 && head[0] == 0x80 && (2..=5).contains(&head[1]) {
        return Ok(Some(PickleSign::Protocol(head[1])));
    }
    if !head.starts_with(b"PK\x03\x04") {
        return Ok(None);
    }
    let Some((cd_offset, cd_size)) = central_directory(size, read)? else {
        return Ok(None);
    };
    let cd = read(cd_offset..cd_offset + cd_size)?;
    Ok(zip_names(&cd)
        .into_iter()
        .find(|n| n.to_ascii_lowercase().ends_with(".pkl"))
        .map(PickleSign::ZipEntry))
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
fn central_directory(
    size: u64,
    read: &dyn Fn(Range<u64>) -> std::io::Result<Vec<u8>>,
) -> std::io::Result<Option<(u64, u64)>> {
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

/// The entry names of a central directory (as far as it reads well).
fn zip_names(cd: &[u8]) -> Vec<String> {
    let mut names = Vec::new();
    let mut at = 0usize;
    while cd.get(at..at + 4) == Some(b"PK\x01\x02") {
        let (Some(n), Some(x), Some(c)) = (
            u16_at(cd, at + 28),
            u16_at(cd, at + 30),
            u16_at(cd, at + 32),
        ) else {
            break;
        };
        let (n, x, c) = (n as usize, x as usize, c as usize);
        let Some(name) = cd.get(at + 46..at + 46 + n) else {
            break;
        };
        names.push(String::from_utf8_lossy(name).into_owned());
        at += 46 + n + x + c;
    }
    names
}

/// Reads `range` of a file.
pub fn read_file_range(path: &std::path::Path, range: Range<u64>) -> std::io::Result<Vec<u8>> {
    use std::io::{Seek, SeekFrom};
    let mut f = std::fs::File::open(path)?;
    f.seek(SeekFrom::Start(range.start))?;
    let mut out = Vec::new();
    f.take(range.end - range.start).read_to_end(&mut out)?;
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn sniff(bytes: &[u8]) -> Option<PickleSign> {
        let read = |r: Range<u64>| Ok(bytes[r.start as usize..r.end as usize].to_vec());
        by_content(bytes.len() as u64, &read).unwrap()
    }

    #[test]
    fn protocols_zips_and_others() {
        assert_eq!(sniff(b"\x80\x02}q\x00."), Some(PickleSign::Protocol(2)));
        assert_eq!(sniff(b"\x80\x05\x95"), Some(PickleSign::Protocol(5)));
        assert_eq!(sniff(b"\x80\x09"), None);
        assert_eq!(sniff(b"GGUF\x03\x00\x00\x00"), None);
        assert_eq!(sniff(b""), None);
        // A stored zip with one entry, `archive/data.pkl`.
        let name = b"archive/data.pkl";
        let mut z = Vec::new();
        z.extend_from_slice(b"PK\x03\x04");
        z.extend_from_slice(&[0; 22]);
        z.extend_from_slice(&(name.len() as u16).to_le_bytes());
        z.extend_from_slice(&[0; 2]);
        z.extend_from_slice(name);
        let cd_at = z.len() as u32;
        let mut cd = b"PK\x01\x02".to_vec();
        cd.extend_from_slice(&[0; 24]);
        cd.extend_from_slice(&(name.len() as u16).to_le_bytes());
        cd.extend_from_slice(&[0; 16]);
        cd.extend_from_slice(name);
        z.extend_from_slice(&cd);
        z.extend_from_slice(b"PK\x05\x06");
        z.extend_from_slice(&[0; 8]);
        z.extend_from_slice(&(cd.len() as u32).to_le_bytes());
        z.extend_from_slice(&cd_at.to_le_bytes());
        z.extend_from_slice(&[0; 2]);
        assert_eq!(
            sniff(&z),
            Some(PickleSign::ZipEntry("archive/data.pkl".into()))
        );
        // A central directory pointing past the end: not read.
        let n = z.len();
        z[n - 6..n - 2].copy_from_slice(&u32::MAX.to_le_bytes());
        assert_eq!(sniff(&z), None);
        assert_eq!(
            by_extension("sub/Model.PTH"),
            Some(PickleSign::Extension(".pth"))
        );
        assert_eq!(by_extension("model.safetensors"), None);
    }
}
