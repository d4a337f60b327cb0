//! A bundle that is a tar stream (plain, or zstd-compressed before it
//! gets here), entry by entry.
//!
//! Invariant: extension headers (pax, GNU long names) are absorbed with
//! their size checked before they are read ([`crate::bundle::tar_headers`]), never
//! handed to the visitor; each entry's reader yields exactly its declared
//! bytes; and an archive that stops without its end-of-archive marker is
//! reported as truncated, not taken as complete.

use std::io::{self, Read};
use std::path::Path;

use llmgw_shared::shown;

use super::{EntryHead, EntryKind, Exact, ReadError};
use crate::bundle::tar_headers::{ExtensionKind, Extensions, Overrides};

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

pub(super) fn read_tar<R: Read, E: From<ReadError>>(
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
        // before they are read (see crate::bundle::tar_headers).
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
            let head = head_of(path, &entry, given)?;
            let size = head.size;
            last_end = entry.raw_file_position() + size.div_ceil(512) * 512;
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
    ended(path, last, consumed, last_end).map_err(E::from)
}

/// A (not extension) entry's head: its name (the extension headers' path
/// over the header's, UTF-8 or refused, a folder's without its trailing
/// `/`), what it is, and its size.
fn head_of<R: Read>(
    path: &Path,
    entry: &tar::Entry<'_, R>,
    given: Overrides,
) -> Result<EntryHead, ReadError> {
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
    let kind = kind_of(entry.header().entry_type(), link);
    let path_name = if kind == EntryKind::Dir {
        name.strip_suffix('/').unwrap_or(&name).to_string()
    } else {
        name
    };
    Ok(EntryHead {
        path: path_name,
        kind,
        size: entry.size(),
    })
}

/// What an entry of tar type `t` is; `link` reads its target.
fn kind_of(t: tar::EntryType, link: impl FnOnce() -> String) -> EntryKind {
    if t.is_file() {
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
    }
}

/// Whether the archive ended as a whole one does: some entry, then its
/// end-of-archive marker past the last entry's data (`last_end`).
fn ended(path: &Path, last: Option<String>, consumed: u64, last_end: u64) -> Result<(), ReadError> {
    match last {
        None => Err(ReadError::Empty {
            path: path.to_path_buf(),
        }),
        // The reader stops at the first zero block; having consumed no
        // more than the last entry means the stream simply ended there.
        Some(last) if consumed <= last_end => Err(ReadError::NoEndMarker {
            path: path.to_path_buf(),
            last,
        }),
        Some(_) => Ok(()),
    }
}
