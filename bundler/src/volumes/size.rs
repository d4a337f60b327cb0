//! `--volume-size`, `--chunk-size` and `--parity` as an operator writes
//! them, and what the output filesystem allows.
//!
//! Invariant: a size is a whole number of bytes with an optional binary
//! suffix (K, M, G, T = 2^10…2^40) or one of the named presets; nothing
//! else is accepted. FAT is told by the filesystem's magic number
//! (`statfs`), never by a guess from the path.

use std::io;
use std::path::Path;

pub use llmgw_shared::size::{FAT_MAX_FILE, parse};

/// The chunk size when none is given: 1 GiB.
pub const DEFAULT_CHUNK: u64 = 1 << 30;

/// Whether `dir` is on a FAT filesystem (no file over 4 GiB − 1, no hard
/// links).
pub fn is_fat(dir: &Path) -> io::Result<bool> {
    llmgw_shared::is_fat(dir)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn tmp_is_not_fat() {
        assert!(!is_fat(&std::env::temp_dir()).unwrap());
    }
}
