//! Free space, checked before the first large download: a run that fills the
//! disk half-way wastes hours and leaves the operator guessing, so it is
//! refused up front with the numbers.
//!
//! The cache needs room for what it does not hold yet; the output needs
//! room for the whole bundle. When both are on one filesystem, the sum.

use std::ffi::CString;
use std::io;
use std::os::unix::ffi::OsStrExt;
use std::path::Path;

use crate::error::CreateError;

/// Room the bundle's tar headers, manifest and zstd frames may take beyond
/// the content: 1 MiB plus 1%.
pub fn bundle_overhead(content: u64) -> u64 {
    (1 << 20) + content / 100
}

/// Free bytes for an unprivileged writer, and the filesystem's id.
pub fn free_space(path: &Path) -> io::Result<(u64, u64)> {
    let c = CString::new(path.as_os_str().as_bytes())
        .map_err(|_| io::Error::new(io::ErrorKind::InvalidInput, "path contains NUL"))?;
    let mut s: libc::statvfs = unsafe { std::mem::zeroed() };
    // SAFETY: `c` is a valid C string and `s` a properly sized out-parameter.
    let rc = unsafe { libc::statvfs(c.as_ptr(), &mut s) };
    if rc != 0 {
        return Err(io::Error::last_os_error());
    }
    #[allow(clippy::unnecessary_cast)]
    let free = (s.f_bavail as u64).saturating_mul(s.f_frsize as u64);
    #[allow(clippy::unnecessary_cast)]
    Ok((free, s.f_fsid as u64))
}

fn mib(n: u64) -> String {
    format!("{n} bytes ({:.1} MiB)", n as f64 / (1024.0 * 1024.0))
}

/// Refuses when `cache_need` bytes do not fit at `cache` or `out_need` at
/// `out_dir` (or their sum, on one filesystem).
pub fn check(
    cache: &Path,
    cache_need: u64,
    out_dir: &Path,
    out_need: u64,
) -> Result<(), CreateError> {
    let (cache_free, cache_fs) = free_space(cache).map_err(|e| CreateError::io(cache, e))?;
    let (out_free, out_fs) = free_space(out_dir).map_err(|e| CreateError::io(out_dir, e))?;
    if cache_fs == out_fs {
        let need = cache_need.saturating_add(out_need);
        if need > cache_free {
            return Err(CreateError::NoSpace(format!(
                "not enough free space: the cache {} and the output folder {} share a filesystem \
                 with {} free, and this bundle needs {} ({} to download into the cache, {} for \
                 the bundle); free some space or put --cache or --out elsewhere",
                cache.display(),
                out_dir.display(),
                mib(cache_free),
                mib(need),
                mib(cache_need),
                mib(out_need)
            )));
        }
        return Ok(());
    }
    let mut short = Vec::new();
    if cache_need > cache_free {
        short.push(format!(
            "the cache {} needs {} and has {} free",
            cache.display(),
            mib(cache_need),
            mib(cache_free)
        ));
    }
    if out_need > out_free {
        short.push(format!(
            "the output folder {} needs {} and has {} free",
            out_dir.display(),
            mib(out_need),
            mib(out_free)
        ));
    }
    if short.is_empty() {
        Ok(())
    } else {
        Err(CreateError::NoSpace(format!(
            "not enough free space: {}; free some space or put --cache or --out elsewhere",
            short.join("; ")
        )))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn reads_this_filesystem() {
        let d = tempfile::tempdir().unwrap();
        let (free, _) = free_space(d.path()).unwrap();
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
}
