//! Reading a bundle entry by entry, whatever its shape: a `.tar`, a
//! `.tar.zst` or a directory.
//!
//! The bundle is read as one stream and never unpacked to a scratch copy:
//! each entry is handed to a visitor with its name, kind and size, and a
//! reader for its bytes. Whether an entry is *allowed* is the verifier's
//! business (see [`crate::verify`]); this module only reports faithfully
//! what is there — symlinks, hard links, devices and directories included —
//! and notices when the stream itself is cut short.
//!
//! The format is told from the bytes, not the file name: zstd frames start
//! with a fixed magic number, and anything else is read as tar. So a named
//! pipe or a renamed file works too.

use std::fs::File;
use std::io::{self, BufReader, Read};
use std::path::{Path, PathBuf};

use llmgw_shared::shown::shown;
use thiserror::Error;

use crate::tar_headers::{ExtensionError, ExtensionKind, Extensions};

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

/// Why the bundle could not be read (as opposed to refused for its content).
#[derive(Debug, Error)]
pub enum ReadError {
    #[error("cannot open bundle {path}: {source}")]
    Open { path: PathBuf, source: io::Error },
    #[error(
        "reading bundle {path} {place}: {source}{}",
        if crate::unzstd::is_damaged(source) { "" } else {
            "; the bundle is damaged or was cut short (copy it again)"
        }
    )]
    Stream {
        path: PathBuf,
        place: String,
        source: io::Error,
    },
    #[error("bundle {path}: an entry name is not UTF-8: \"{}\"", shown(.name))]
    NotUtf8 { path: PathBuf, name: String },
    #[error(
        "bundle {path} is truncated: the tar ends after entry {} without its end-of-archive \
         marker; copy the bundle again",
        shown(.last)
    )]
    NoEndMarker { path: PathBuf, last: String },
    #[error("bundle {path} {place}: {source}; this is not a bundle llmgw wrote")]
    Header {
        path: PathBuf,
        place: String,
        source: ExtensionError,
    },
    #[error("bundle {path} is empty: expected manifest.json as its first entry")]
    Empty { path: PathBuf },
}

/// The shape of a bundle on disk.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum BundleFormat {
    Dir,
    Tar,
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
        read_dir_bundle(path, &mut visit)?;
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
        let dec = crate::unzstd::Unzstd::new(stream).map_err(|source| ReadError::Stream {
            path: path.to_path_buf(),
            place: "at its start (zstd)".into(),
            source,
        })?;
        read_tar(path, BufReader::with_capacity(CHUNK, dec), &mut visit)?;
        Ok(BundleFormat::TarZst)
    } else {
        read_tar(path, stream, &mut visit)?;
        Ok(BundleFormat::Tar)
    }
}

/// Counts the bytes the tar reader consumed, to tell an archive that ended
/// with its zero blocks from one cut off at an entry boundary.
struct Counting<R> {
    inner: R,
    count: u64,
}

impl<R: Read> Read for Counting<R> {
    fn read(&mut self, buf: &mut [u8]) -> io::Result<usize> {
        let n = self.inner.read(buf)?;
        self.count += n as u64;
        Ok(n)
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

fn read_tar<R: Read, E: From<ReadError>>(
    path: &Path,
    stream: R,
    visit: &mut dyn FnMut(&EntryHead, &mut dyn Read) -> Result<(), E>,
) -> Result<(), E> {
    let mut archive = tar::Archive::new(Counting {
        inner: stream,
        count: 0,
    });
    let stream_err = |place: String, source: io::Error| ReadError::Stream {
        path: path.to_path_buf(),
        place,
        source,
    };
    let mut last: Option<String> = None;
    let mut last_end = 0u64;
    let mut extensions = Extensions::default();
    {
        // Raw: extension headers come to us, so their size is checked
        // before they are read (see crate::tar_headers).
        let entries = archive
            .entries()
            .map_err(|e| stream_err("at its start".into(), e))?
            .raw(true);
        for entry in entries {
            let place = match &last {
                Some(l) => format!("after entry {}", shown(l)),
                None => "at its first entry".into(),
            };
            let mut entry = entry.map_err(|e| stream_err(place.clone(), e))?;
            let t = entry.header().entry_type();
            let header_err = |source| ReadError::Header {
                path: path.to_path_buf(),
                place: place.clone(),
                source,
            };
            if let Some(ext) = ExtensionKind::of(t) {
                let size = entry.size();
                last_end = entry.raw_file_position() + size.div_ceil(512) * 512;
                extensions
                    .absorb(ext, size, &mut entry)
                    .map_err(header_err)?;
                continue;
            }
            let given = extensions.take_for(entry.size()).map_err(header_err)?;
            let raw = given
                .path
                .unwrap_or_else(|| entry.path_bytes().into_owned());
            let name = std::str::from_utf8(&raw)
                .map_err(|_| ReadError::NotUtf8 {
                    path: path.to_path_buf(),
                    name: String::from_utf8_lossy(&raw).into_owned(),
                })?
                .to_string();
            let link = || {
                given
                    .link
                    .clone()
                    .or_else(|| entry.link_name_bytes().map(|b| b.into_owned()))
                    .map(|b| String::from_utf8_lossy(&b).into_owned())
                    .unwrap_or_default()
            };
            let kind = if t.is_file() {
                EntryKind::File
            } else if t.is_dir() {
                EntryKind::Dir
            } else if t.is_symlink() {
                EntryKind::Symlink { target: link() }
            } else if t.is_hard_link() {
                EntryKind::HardLink { target: link() }
            } else if t.is_character_special() {
                EntryKind::Other("character device".into())
            } else if t.is_block_special() {
                EntryKind::Other("block device".into())
            } else if t.is_fifo() {
                EntryKind::Other("fifo".into())
            } else if t.is_gnu_sparse() {
                EntryKind::Other("sparse file".into())
            } else if t.is_pax_global_extensions() {
                EntryKind::Other("pax global header".into())
            } else {
                EntryKind::Other(format!("tar entry of type {:?}", t.as_byte() as char))
            };
            let path_name = if kind == EntryKind::Dir {
                name.strip_suffix('/').unwrap_or(&name).to_string()
            } else {
                name
            };
            let size = entry.size();
            last_end = entry.raw_file_position() + size.div_ceil(512) * 512;
            let head = EntryHead {
                path: path_name,
                kind,
                size,
            };
            let mut exact = Exact {
                inner: &mut entry,
                entry: &head.path,
                size,
                remaining: size,
            };
            visit(&head, &mut exact)?;
            last = Some(head.path);
        }
    }
    extensions.finish().map_err(|source| ReadError::Header {
        path: path.to_path_buf(),
        place: "at its end".into(),
        source,
    })?;
    let consumed = archive.into_inner().count;
    match last {
        None => Err(ReadError::Empty {
            path: path.to_path_buf(),
        }
        .into()),
        // The reader stops at the first zero block; having consumed no
        // more than the last entry means the stream simply ended there.
        Some(last) if consumed <= last_end => Err(ReadError::NoEndMarker {
            path: path.to_path_buf(),
            last,
        }
        .into()),
        Some(_) => Ok(()),
    }
}

/// A directory bundle: `manifest.json` first, then everything else in
/// name order, depth first, without following symlinks.
fn read_dir_bundle<E: From<ReadError>>(
    root: &Path,
    visit: &mut dyn FnMut(&EntryHead, &mut dyn Read) -> Result<(), E>,
) -> Result<(), E> {
    let open_err = |p: &Path, source: io::Error| ReadError::Open {
        path: p.to_path_buf(),
        source,
    };
    let manifest = root.join(llmgw_shared::manifest::MANIFEST_NAME);
    match std::fs::symlink_metadata(&manifest) {
        Ok(_) => visit_path(root, &manifest, visit)?,
        Err(e) if e.kind() == io::ErrorKind::NotFound => {
            return Err(ReadError::Empty {
                path: root.to_path_buf(),
            }
            .into());
        }
        Err(e) => return Err(open_err(&manifest, e).into()),
    }
    // The signature, if any, is the second entry, as in a tar.
    let signature = root.join(llmgw_shared::manifest::SIGNATURE_NAME);
    if std::fs::symlink_metadata(&signature).is_ok() {
        visit_path(root, &signature, visit)?;
    }
    let walk = walkdir::WalkDir::new(root)
        .follow_links(false)
        .sort_by_file_name()
        .min_depth(1);
    for item in walk {
        let item = item.map_err(|e| {
            let p = e.path().unwrap_or(root).to_path_buf();
            open_err(&p, e.into())
        })?;
        if item.depth() == 1
            && (item.file_name() == llmgw_shared::manifest::MANIFEST_NAME
                || item.file_name() == llmgw_shared::manifest::SIGNATURE_NAME)
        {
            continue;
        }
        visit_path(root, item.path(), visit)?;
    }
    Ok(())
}

fn visit_path<E: From<ReadError>>(
    root: &Path,
    p: &Path,
    visit: &mut dyn FnMut(&EntryHead, &mut dyn Read) -> Result<(), E>,
) -> Result<(), E> {
    let open_err = |source: io::Error| ReadError::Open {
        path: p.to_path_buf(),
        source,
    };
    let rel = p.strip_prefix(root).unwrap_or(p);
    let name = rel
        .to_str()
        .ok_or_else(|| ReadError::NotUtf8 {
            path: root.to_path_buf(),
            name: rel.to_string_lossy().into_owned(),
        })?
        .to_string();
    let meta = std::fs::symlink_metadata(p).map_err(open_err)?;
    let ft = meta.file_type();
    let kind = if ft.is_file() {
        EntryKind::File
    } else if ft.is_dir() {
        EntryKind::Dir
    } else if ft.is_symlink() {
        let target = std::fs::read_link(p)
            .map(|t| t.to_string_lossy().into_owned())
            .unwrap_or_default();
        EntryKind::Symlink { target }
    } else {
        use std::os::unix::fs::FileTypeExt;
        EntryKind::Other(
            if ft.is_block_device() {
                "block device"
            } else if ft.is_char_device() {
                "character device"
            } else if ft.is_fifo() {
                "fifo"
            } else if ft.is_socket() {
                "socket"
            } else {
                "special file"
            }
            .into(),
        )
    };
    let size = if kind == EntryKind::File {
        meta.len()
    } else {
        0
    };
    let head = EntryHead {
        path: name,
        kind,
        size,
    };
    if head.kind == EntryKind::File {
        let file = File::open(p).map_err(open_err)?;
        let mut file = file;
        let mut exact = Exact {
            inner: &mut file,
            entry: &head.path,
            size,
            remaining: size,
        };
        visit(&head, &mut exact)
    } else {
        visit(&head, &mut io::empty())
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
                E(e.to_string())
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
