//! What a filesystem says about itself: its free space (for the bundler's
//! check before downloading and the mirror's before importing) and its type
//! (a FAT folder holds no file over 4 GiB − 1). The one place `statvfs` and
//! `statfs` are called, through rustix, without `unsafe`.

use std::io;
use std::path::Path;

/// What `statvfs` says about the filesystem holding a path.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct FreeSpace {
    /// Bytes an unprivileged writer may still use.
    pub bytes: u64,
    /// The filesystem's id: two paths with the same id share their room.
    pub filesystem: u64,
}

/// Free space on the filesystem holding `path`.
pub fn free_space(path: &Path) -> io::Result<FreeSpace> {
    let s = rustix::fs::statvfs(path).map_err(io::Error::from)?;
    Ok(FreeSpace {
        bytes: s.f_bavail.saturating_mul(s.f_frsize),
        filesystem: s.f_fsid,
    })
}

/// `statfs`'s magic number of FAT (msdos and vfat).
pub const MSDOS_SUPER_MAGIC: i64 = 0x4d44;

/// The type (`f_type`, a magic number) of the filesystem holding `path`.
pub fn fs_type(path: &Path) -> io::Result<i64> {
    let s = rustix::fs::statfs(path).map_err(io::Error::from)?;
    #[allow(clippy::unnecessary_cast, clippy::useless_conversion)]
    Ok(s.f_type as i64)
}

/// Whether `path` is on a FAT filesystem.
pub fn is_fat(path: &Path) -> io::Result<bool> {
    Ok(fs_type(path)? == MSDOS_SUPER_MAGIC)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn reads_this_filesystem() {
        let d = tempfile::tempdir().unwrap();
        let a = free_space(d.path()).unwrap();
        assert!(a.bytes > 0);
        std::fs::create_dir(d.path().join("sub")).unwrap();
        assert_eq!(
            free_space(&d.path().join("sub")).unwrap().filesystem,
            a.filesystem
        );
        let e = free_space(Path::new("/no/such/dir")).unwrap_err();
        assert_eq!(e.kind(), io::ErrorKind::NotFound);
        assert!(!is_fat(d.path()).unwrap());
        assert!(fs_type(Path::new("/no/such/dir")).is_err());
    }
}
