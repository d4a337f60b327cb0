//! Sizes as an operator writes them on a command line (`--volume-size`,
//! `--chunk-size`, `--cache-size`): bytes with an optional binary suffix,
//! or a named preset. Both sides read sizes, so the one parser is here.
//!
//! Invariant: a size is a whole number of bytes above zero with an
//! optional binary suffix (K, M, G, T = 2^10…2^40) or one of [`PRESETS`];
//! nothing else is accepted, and overflow is refused, never wrapped.

use thiserror::Error;

/// The largest file FAT32 holds: 4 GiB − 1.
pub const FAT_MAX_FILE: u64 = (4 << 30) - 1;

/// Named volume sizes. Discs keep a little room for the ISO 9660 or UDF
/// filesystem around the file (DVD±R holds 4 707 319 808 bytes, DVD±R DL
/// 8 543 666 176, BD-R 25 025 314 816 and BD-R DL 50 050 629 632).
pub const PRESETS: [(&str, u64); 5] = [
    ("fat32", FAT_MAX_FILE),
    ("dvd5", 4_700_000_000),
    ("dvd9", 8_500_000_000),
    ("bd25", 25_000_000_000),
    ("bd50", 50_000_000_000),
];

/// Parses `4G`, `700M`, `65536`, or a preset name.
pub fn parse(flag: &str, text: &str) -> Result<u64, SizeError> {
    let t = text.trim();
    let lower = t.to_ascii_lowercase();
    if let Some((_, n)) = PRESETS.iter().find(|(name, _)| *name == lower) {
        return Ok(*n);
    }
    let (digits, shift) = match lower.as_bytes().last() {
        Some(b'k') => (&lower[..lower.len() - 1], 10),
        Some(b'm') => (&lower[..lower.len() - 1], 20),
        Some(b'g') => (&lower[..lower.len() - 1], 30),
        Some(b't') => (&lower[..lower.len() - 1], 40),
        _ => (lower.as_str(), 0),
    };
    let bad = || SizeError::NotASize {
        flag: flag.to_string(),
        text: t.to_string(),
    };
    if digits.is_empty() || !digits.bytes().all(|c| c.is_ascii_digit()) {
        return Err(bad());
    }
    let n: u64 = digits.parse().map_err(|_| bad())?;
    let n = n.checked_mul(1u64 << shift).ok_or_else(bad)?;
    if n == 0 {
        return Err(SizeError::Zero {
            flag: flag.to_string(),
            text: t.to_string(),
        });
    }
    Ok(n)
}

/// A size flag's value refused.
#[derive(Debug, Clone, PartialEq, Eq, Error)]
pub enum SizeError {
    #[error(
        "{flag} {text:?}: expected bytes with an optional K, M, G or T suffix (powers of 1024), \
         or one of {}",
        PRESETS.map(|p| p.0).join(", ")
    )]
    /// Not a number of bytes, a suffixed one, or a preset name.
    NotASize {
        /// The flag (`--volume-size`, `--chunk-size`, `--cache-size`).
        flag: String,
        /// The value given.
        text: String,
    },
    #[error("{flag} {text:?}: must be above zero")]
    /// Zero bytes.
    Zero {
        /// The flag.
        flag: String,
        /// The value given.
        text: String,
    },
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn sizes_and_presets() {
        assert_eq!(parse("--volume-size", "65536"), Ok(65536));
        assert_eq!(parse("--volume-size", "64K"), Ok(65536));
        assert_eq!(parse("--volume-size", "2m"), Ok(2 << 20));
        assert_eq!(parse("--volume-size", "1G"), Ok(1 << 30));
        assert_eq!(parse("--volume-size", "FAT32"), Ok(FAT_MAX_FILE));
        assert_eq!(parse("--volume-size", "dvd5"), Ok(4_700_000_000));
        assert_eq!(parse("--volume-size", "bd50"), Ok(50_000_000_000));
        for bad in ["", "K", "1.5G", "-1", "12Q", "0", "99999999999999999999G"] {
            let e = parse("--volume-size", bad).unwrap_err().to_string();
            assert!(e.contains("--volume-size"), "{bad}: {e}");
        }
    }
}
