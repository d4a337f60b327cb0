//! A tar's pickles: any regular member whose first bytes are a pickle, as
//! in `torch.save`'s legacy format (`_use_new_zipfile_serialization=False`
//! in a tar: members `sys_info`, `pickle`, `storages` and `tensors`, each
//! a pickle or starting with one).
//!
//! Invariant: at most [`MAX_MEMBERS`] 512-byte headers and [`HEAD`] bytes
//! of each regular member are read; a header whose checksum does not add
//! up ends the walk (as the end of the archive would).

use super::{HEAD, MAX_MEMBERS, PickleSign, ReadRange, head_sign};

const BLOCK: u64 = 512;

/// Whether `head` starts with a ustar (POSIX or GNU) header whose checksum
/// adds up.
pub fn is_tar(head: &[u8]) -> bool {
    head.get(257..262) == Some(b"ustar".as_slice()) && checksum_ok(head)
}

fn checksum_ok(header: &[u8]) -> bool {
    let Some(h) = header.get(..BLOCK as usize) else {
        return false;
    };
    let Some(stored) = octal(&h[148..156]) else {
        return false;
    };
    let sum: u64 = h
        .iter()
        .enumerate()
        .map(|(i, &b)| {
            if (148..156).contains(&i) {
                32
            } else {
                u64::from(b)
            }
        })
        .sum();
    sum == stored
}

/// An octal field (NULs and spaces around it), or a base-256 one.
fn octal(field: &[u8]) -> Option<u64> {
    if field.first().is_some_and(|b| b & 0x80 != 0) {
        return field[1..]
            .iter()
            .try_fold(u64::from(field[0] & 0x7f), |v, &b| {
                v.checked_mul(256).map(|v| v + u64::from(b))
            });
    }
    let text = std::str::from_utf8(field).ok()?;
    let digits = text.trim_matches(|c| c == '\0' || c == ' ');
    if digits.is_empty() {
        return Some(0);
    }
    u64::from_str_radix(digits, 8).ok()
}

/// A header's member name (ustar's prefix and name).
fn name(h: &[u8]) -> String {
    let field = |r: std::ops::Range<usize>| {
        let f = &h[r];
        let end = f.iter().position(|&b| b == 0).unwrap_or(f.len());
        String::from_utf8_lossy(&f[..end]).into_owned()
    };
    let (prefix, name) = (field(345..500), field(0..100));
    if prefix.is_empty() {
        name
    } else {
        format!("{prefix}/{name}")
    }
}

/// The sign of the tar of `size` bytes read through `read`: its first
/// regular member whose head is a pickle.
pub fn sign(size: u64, read: &ReadRange<'_>) -> std::io::Result<Option<PickleSign>> {
    let mut at = 0u64;
    for _ in 0..MAX_MEMBERS {
        let Some(end) = at.checked_add(BLOCK).filter(|&e| e <= size) else {
            break;
        };
        let h = read(at..end)?;
        if h.len() < BLOCK as usize || !checksum_ok(&h) {
            break;
        }
        let Some(member_size) = octal(&h[124..136]) else {
            break;
        };
        let data = at + BLOCK;
        if matches!(h[156], b'0' | 0 | b'7') && member_size > 0 {
            let take = member_size.min(HEAD).min(size.saturating_sub(data));
            let head = read(data..data + take)?;
            let whole = head.len() as u64 == member_size;
            if let Some(s) = head_sign(&head, whole) {
                return Ok(Some(PickleSign::TarMember(name(&h), Box::new(s))));
            }
        }
        let Some(next) = member_size
            .checked_next_multiple_of(BLOCK)
            .and_then(|padded| data.checked_add(padded))
        else {
            break;
        };
        at = next;
    }
    Ok(None)
}
