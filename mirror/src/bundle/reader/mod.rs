//! Reading a bundle entry by entry, whatever its shape: a `.tar`, a
//! `.tar.zst` or a directory.
//!
//! The bundle is read as one stream and never unpacked to a scratch copy:
//! each entry is handed to a visitor with its name, kind and size, and a
//! reader for its bytes. Whether an entry is *allowed* is the verifier's
//! business (see [`crate::bundle::verify`]); this module only reports faithfully
//! what is there — symlinks, hard links, devices and directories included —
//! and notices when the stream itself is cut short.
//!
//! The format is told from the bytes, not the file name: zstd frames start
//! with a fixed magic number, and anything else is read as tar. So a named
//! pipe or a renamed file works too.
//!
//! Invariant: the visitor sees every entry in stream order, and each
//! entry's reader yields exactly its declared bytes or fails; the shapes
//! live apart (`tarball`, `dir`), the errors in `error`.

mod dir;
mod error;
mod tarball;

use std::fs::File;
use std::io::{self, BufReader, Read};
use std::path::Path;

use llmgw_shared::shown;

pub use error::ReadError;

/// What kind of thing an entry is. Only [`EntryKind::File`] can carry bytes.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum EntryKind {
    File,
    Dir,
    Symlink {
        target: String,
    },
    HardLink {
        target: String,
    },
    /// Devices, fifos, sockets, sparse files, global headers: anything else.
    Other(String),
}

impl EntryKind {
    /// How an operator would call it.
    pub fn describe(&self) -> String {
        match self {
            EntryKind::File => "regular file".into(),
            EntryKind::Dir => "directory".into(),
            EntryKind::Symlink { target } => format!("symbolic link to \"{}\"", shown(target)),
            EntryKind::HardLink { target } => format!("hard link to \"{}\"", shown(target)),
            EntryKind::Other(what) => what.clone(),
        }
    }
}

/// One entry's header: its name inside the bundle (without a trailing `/`
/// for directories), kind and size in bytes.
#[derive(Debug, Clone)]
pub struct EntryHead {
    pub path: String,
    pub kind: EntryKind,
    pub size: u64,
}

/// The shape of a bundle on disk; reported by its [`BundleFormat::name`].
#[derive(Debug, Clone, Copy, PartialEq, Eq, serde::Serialize)]
pub enum BundleFormat {
    #[serde(rename = "directory")]
    Dir,
    #[serde(rename = "tar")]
    Tar,
    #[serde(rename = "tar.zst")]
    TarZst,
}

impl BundleFormat {
    pub fn name(self) -> &'static str {
        match self {
            BundleFormat::Dir => "directory",
            BundleFormat::Tar => "tar",
            BundleFormat::TarZst => "tar.zst",
        }
    }
}

/// The first bytes of every zstd frame.
const ZSTD_MAGIC: [u8; 4] = [0x28, 0xB5, 0x2F, 0xFD];

/// Reads a buffer this large at a time: big enough that a syscall per
/// chunk costs nothing, small enough for any machine.
pub const CHUNK: usize = 1 << 20;

/// Calls `visit` for each entry of the bundle at `path`, in order, until it
/// returns an error or the bundle ends. The reader passed to `visit` yields
/// exactly the entry's bytes, and fails (rather than ending early) if the
/// bundle is cut short inside the entry. A visitor may leave bytes unread;
/// they are skipped.
pub fn for_each_entry<E>(
    path: &Path,
    mut visit: impl FnMut(&EntryHead, &mut dyn Read) -> Result<(), E>,
) -> Result<BundleFormat, E>
where
    E: From<ReadError>,
{
    let meta = std::fs::metadata(path).map_err(|source| ReadError::Open {
        path: path.to_path_buf(),
        source,
    })?;
    if meta.is_dir() {
        dir::read_dir_bundle(path, &mut visit)?;
        return Ok(BundleFormat::Dir);
    }
    let file = File::open(path).map_err(|source| ReadError::Open {
        path: path.to_path_buf(),
        source,
    })?;
    let mut file = BufReader::with_capacity(CHUNK, file);
    // Peek at the magic without seeking, so pipes work too.
    let mut magic = Vec::with_capacity(4);
    (&mut file)
        .take(4)
        .read_to_end(&mut magic)
        .map_err(|source| ReadError::Stream {
            path: path.to_path_buf(),
            place: "at its start".into(),
            source,
        })?;
    let is_zstd = magic == ZSTD_MAGIC;
    let stream = io::Cursor::new(magic).chain(file);
    if is_zstd {
        let dec =
            crate::bundle::unzstd::Unzstd::new(stream).map_err(|source| ReadError::Stream {
                path: path.to_path_buf(),
                place: "at its start (zstd)".into(),
                source,
            })?;
        tarball::read_tar(path, BufReader::with_capacity(CHUNK, dec), &mut visit)?;
        Ok(BundleFormat::TarZst)
    } else {
        tarball::read_tar(path, stream, &mut visit)?;
        Ok(BundleFormat::Tar)
    }
}

/// Yields exactly `remaining` bytes of an entry, and an error if the
/// source ends first: a short entry is a truncated bundle, never a short
/// file.
struct Exact<'a, R: ?Sized> {
    inner: &'a mut R,
    entry: &'a str,
    size: u64,
    remaining: u64,
}

impl<R: Read + ?Sized> Read for Exact<'_, R> {
    fn read(&mut self, buf: &mut [u8]) -> io::Result<usize> {
        if self.remaining == 0 || buf.is_empty() {
            return Ok(0);
        }
        let want = buf
            .len()
            .min(self.remaining.min(usize::MAX as u64) as usize);
        let n = self.inner.read(&mut buf[..want])?;
        if n == 0 {
            return Err(io::Error::new(
                io::ErrorKind::UnexpectedEof,
                format!(
                    "the bundle ends inside {} after {} of its {} bytes (truncated)",
                    shown(self.entry),
                    self.size - self.remaining,
                    self.size
                ),
            ));
        }
        self.remaining -= n as u64;
        Ok(n)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn tar_bytes(entries: &[(&str, &[u8])]) -> Vec<u8> {
        let mut b = tar::Builder::new(Vec::new());
        for (name, data) in entries {
            let mut h = tar::Header::new_gnu();
            h.set_size(data.len() as u64);
            h.set_mode(0o644);
            h.set_cksum();
            b.append_data(&mut h, name, *data).unwrap();
        }
        b.into_inner().unwrap()
    }

    fn collect(path: &Path) -> Result<Vec<(String, Vec<u8>)>, String> {
        #[derive(Debug)]
        struct E(String);
        impl From<ReadError> for E {
            fn from(e: ReadError) -> Self {
                E(llmgw_shared::chain(&e))
            }
        }
        let mut out = Vec::new();
        for_each_entry(path, |h, r| {
            let mut v = Vec::new();
            r.read_to_end(&mut v).map_err(|e| E(e.to_string()))?;
            out.push((h.path.clone(), v));
            Ok::<(), E>(())
        })
        .map_err(|E(e)| e)?;
        Ok(out)
    }

    #[test]
    fn tar_and_zstd_read_the_same() {
        let dir = tempfile::tempdir().unwrap();
        let bytes = tar_bytes(&[("manifest.json", b"{}"), ("blobs/sha256/x", b"hello")]);
        let t = dir.path().join("b.tar");
        std::fs::write(&t, &bytes).unwrap();
        let z = dir.path().join("b.tar.zst");
        std::fs::write(&z, zstd::encode_all(&bytes[..], 3).unwrap()).unwrap();
        let a = collect(&t).unwrap();
        assert_eq!(a, collect(&z).unwrap());
        assert_eq!(a[1], ("blobs/sha256/x".to_string(), b"hello".to_vec()));
    }

    #[test]
    fn cut_short_is_named() {
        let dir = tempfile::tempdir().unwrap();
        let data = vec![7u8; 5000];
        let bytes = tar_bytes(&[("manifest.json", b"{}"), ("blobs/sha256/x", &data)]);
        let t = dir.path().join("b.tar");
        // Inside the second entry's data.
        std::fs::write(&t, &bytes[..512 * 4]).unwrap();
        let err = collect(&t).unwrap_err();
        assert!(err.contains("ends inside blobs/sha256/x"), "{err}");
        // At an entry boundary: no end-of-archive marker.
        std::fs::write(&t, &bytes[..1024]).unwrap();
        let err = collect(&t).unwrap_err();
        assert!(err.contains("end-of-archive marker"), "{err}");
        // Inside a compressed stream.
        let z = dir.path().join("b.tar.zst");
        let comp = zstd::encode_all(&bytes[..], 3).unwrap();
        std::fs::write(&z, &comp[..comp.len() / 2]).unwrap();
        assert!(collect(&z).is_err());
        std::fs::write(&t, b"").unwrap();
        assert!(collect(&t).unwrap_err().contains("is empty"));
    }

    #[test]
    fn directories_list_manifest_first_and_report_links() {
        let dir = tempfile::tempdir().unwrap();
        let root = dir.path();
        std::fs::create_dir_all(root.join("blobs/sha256")).unwrap();
        std::fs::write(root.join("manifest.json"), b"{}").unwrap();
        std::fs::write(root.join("blobs/sha256/aa"), b"x").unwrap();
        std::os::unix::fs::symlink("/etc/passwd", root.join("blobs/sha256/bb")).unwrap();
        let mut seen = Vec::new();
        for_each_entry(root, |h, _| {
            seen.push((h.path.clone(), h.kind.clone()));
            Ok::<(), ReadError>(())
        })
        .unwrap();
        assert_eq!(seen[0].0, "manifest.json");
        assert_eq!(seen[1], ("blobs".into(), EntryKind::Dir));
        assert_eq!(seen[3], ("blobs/sha256/aa".into(), EntryKind::File));
        assert!(matches!(seen[4].1, EntryKind::Symlink { .. }));
    }
}
