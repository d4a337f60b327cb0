//! A bundle that is a directory, walked as if it were a tar.
//!
//! Invariant: the entries come in the order a tar of the bundle has them —
//! `manifest.json` first, the signature (if any) second, then everything
//! else in name order, depth first — and links are reported as links,
//! never followed.

use std::fs::File;
use std::io::{self, Read};
use std::path::Path;

use super::{EntryHead, EntryKind, Exact, ReadError};

/// A directory bundle: `manifest.json` first, then everything else in
/// name order, depth first, without following symlinks.
pub(super) fn read_dir_bundle<E: From<ReadError>>(
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
