//! Free space, checked before the first large download: a run that fills the
//! disk half-way wastes hours and leaves the operator guessing, so it is
//! refused up front with the numbers.
//!
//! The cache needs room for what it does not hold yet; the output needs
//! room for the whole bundle. When both are on one filesystem, the sum.

use std::io;
use std::path::Path;

use llmgw_shared::FreeSpace;

use crate::error::{CreateError, Short, Shortfall};

/// Room the bundle's tar headers, manifest and zstd frames may take beyond
/// the content: 1 MiB plus 1%.
pub fn bundle_overhead(content: u64) -> u64 {
    (1 << 20) + content / 100
}

/// Free bytes for an unprivileged writer, and the filesystem's id.
pub fn free_space(path: &Path) -> io::Result<FreeSpace> {
    llmgw_shared::free_space(path)
}

/// Refuses when `cache_need` bytes do not fit at `cache` or `out_need` at
/// `out_dir` (or their sum, on one filesystem).
pub fn check(
    cache: &Path,
    cache_need: u64,
    out_dir: &Path,
    out_need: u64,
) -> Result<(), CreateError> {
    let c = free_space(cache).map_err(|e| CreateError::io(cache, e))?;
    let o = free_space(out_dir).map_err(|e| CreateError::io(out_dir, e))?;
    if c.filesystem == o.filesystem {
        if cache_need.saturating_add(out_need) > c.bytes {
            return Err(CreateError::NoSpace(Shortfall::Shared {
                cache: cache.to_path_buf(),
                out_dir: out_dir.to_path_buf(),
                free: c.bytes,
                cache_need,
                out_need,
            }));
        }
        return Ok(());
    }
    let mut short = Vec::new();
    for (what, path, need, free) in [
        ("the cache", cache, cache_need, c.bytes),
        ("the output folder", out_dir, out_need, o.bytes),
    ] {
        if need > free {
            short.push(Short {
                what,
                path: path.to_path_buf(),
                need,
                free,
            });
        }
    }
    if short.is_empty() {
        Ok(())
    } else {
        Err(CreateError::NoSpace(Shortfall::Apart(short)))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn reads_this_filesystem() {
        let d = tempfile::tempdir().unwrap();
        let free = free_space(d.path()).unwrap().bytes;
        assert!(free > 0);
        assert!(check(d.path(), 1, d.path(), 1).is_ok());
        let err = check(d.path(), u64::MAX / 4, d.path(), 10)
            .unwrap_err()
            .to_string();
        assert!(err.contains("not enough free space"), "{err}");
        assert!(
            err.contains(&format!("{free}")) || err.contains("free"),
            "{err}"
        );
        assert!(free_space(Path::new("/no/such/dir")).is_err());
    }

    #[test]
    fn each_folder_short_is_named() {
        let s = Shortfall::Apart(vec![
            Short {
                what: "the cache",
                path: "/c".into(),
                need: 3 << 20,
                free: 1 << 20,
            },
            Short {
                what: "the output folder",
                path: "/o".into(),
                need: 2048,
                free: 0,
            },
        ]);
        assert_eq!(
            s.to_string(),
            "the cache /c needs 3145728 bytes (3.00 MiB) and has 1048576 bytes (1.00 MiB) free; \
             the output folder /o needs 2048 bytes (2.00 KiB) and has 0 bytes (0 B) free"
        );
    }
}
