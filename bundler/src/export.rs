//! A held bundle written out again (`llmgw mirror export`): the manifest's
//! exact bytes and its signature, then every blob, in the layout `bundle
//! create` writes ([`crate::writer::layout`]), so the next enclave imports
//! it as the first one did: the same manifest sha256, the same signature,
//! channel and sequence, the same trust and rollback rules.
//!
//! Invariant: nothing is at `out` until the whole bundle is written and
//! `check` passed on it (a directory, `.tar` or `.tar.zst`, chosen by the
//! name as create chooses); every blob is copied (a directory shares no
//! file with the store) and hashed as it is copied — the store checked it at import, but a disk rots — so a damaged
//! blob stops the export naming it, and the partial file is removed.

use std::fs::File;
use std::io::{self, BufWriter, Read, Write};
use std::path::Path;

use sha2::Digest;

use crate::error::CreateError;
use crate::writer::layout::{Layout, What};
use llmgw_shared::Sha256;
use llmgw_shared::manifest::BLOB_DIR;

use crate::writer::{BeforePublish, Blob, Format, head_entries, publish, temp_name};

/// Writes the bundle whose manifest is `manifest` (its exact bytes) at
/// `out`, with `signature` when it has one and `blobs` from the paths
/// given (any order, duplicates allowed), tar headers dated `mtime`.
pub fn export(
    out: &Path,
    manifest: &[u8],
    signature: Option<&[u8]>,
    blobs: &[Blob],
    mtime: u64,
    check: BeforePublish<'_>,
) -> Result<(), CreateError> {
    let format = Format::of(out);
    let sizes: Vec<_> = blobs.iter().map(|b| (b.sha256.clone(), b.size)).collect();
    let layout =
        Layout::new(manifest, signature, &sizes, mtime).map_err(|e| CreateError::io(out, e))?;
    let tmp = temp_name(out);
    let written = match format {
        Format::Dir => write_dir(&tmp, head_entries(manifest, signature), &layout, blobs),
        Format::Tar | Format::TarZst => write_tar(&tmp, &layout, blobs, format == Format::TarZst),
    };
    let published = written.and_then(|()| publish(&tmp, out, check));
    if published.is_err() {
        let _ = if tmp.is_dir() {
            std::fs::remove_dir_all(&tmp)
        } else {
            std::fs::remove_file(&tmp)
        };
    }
    published
}

/// A directory bundle at `tmp`: the head entries, then each blob copied
/// (never hard-linked: an export shares no file with the store it came
/// from) and checked as it is copied.
fn write_dir(
    tmp: &Path,
    heads: Vec<(&str, &[u8])>,
    layout: &Layout,
    blobs: &[Blob],
) -> Result<(), CreateError> {
    let io = |e: io::Error| CreateError::io(tmp, e);
    let blob_dir = tmp.join(BLOB_DIR);
    std::fs::create_dir_all(&blob_dir).map_err(io)?;
    for (name, bytes) in heads {
        std::fs::write(tmp.join(name), bytes).map_err(io)?;
    }
    for (sha, size) in &layout.blobs {
        let blob = given(blobs, sha, tmp)?;
        let to = blob_dir.join(sha.as_str());
        let mut w = BufWriter::new(File::create(&to).map_err(|e| CreateError::io(&to, e))?);
        copy_checked(blob, *size, &mut w, &to)?;
        w.flush().map_err(|e| CreateError::io(&to, e))?;
    }
    Ok(())
}

/// The blob named `sha` among those given.
fn given<'b>(blobs: &'b [Blob], sha: &Sha256, tmp: &Path) -> Result<&'b Blob, CreateError> {
    blobs
        .iter()
        .find(|b| b.sha256 == *sha)
        .ok_or_else(|| CreateError::io(tmp, io::Error::other(format!("blob {sha} not given"))))
}

/// The tar at `tmp`, front to back, zstd-compressed when `zst`.
fn write_tar(tmp: &Path, layout: &Layout, blobs: &[Blob], zst: bool) -> Result<(), CreateError> {
    let io = |e: io::Error| CreateError::io(tmp, e);
    let file = File::create(tmp).map_err(io)?;
    let mut w: Box<dyn Write> = if zst {
        let enc = zstd::stream::write::Encoder::new(file, crate::writer::zst::DEFAULT_LEVEL)
            .map_err(io)?;
        Box::new(BufWriter::new(enc.auto_finish()))
    } else {
        Box::new(BufWriter::new(file))
    };
    for e in &layout.entries {
        w.write_all(&e.head).map_err(io)?;
        match e.what {
            What::Head(i) => w.write_all(&layout.heads[i]).map_err(io)?,
            What::Blob(i) => {
                let (sha, size) = &layout.blobs[i];
                let blob = given(blobs, sha, tmp)?;
                copy_checked(blob, *size, &mut w, tmp)?;
            }
            What::Trailer => {}
        }
        w.write_all(&vec![0u8; e.pad as usize]).map_err(io)?;
    }
    w.flush().map_err(io)?;
    drop(w);
    Ok(())
}

/// Copies `blob`'s bytes into `w`, hashing them: its sha256 and size must
/// be its name's.
fn copy_checked(blob: &Blob, size: u64, w: &mut dyn Write, tmp: &Path) -> Result<(), CreateError> {
    let mut f = File::open(&blob.path).map_err(|e| CreateError::io(&blob.path, e))?;
    let mut h = sha2::Sha256::new();
    let mut buf = vec![0u8; 1 << 20];
    let mut n = 0u64;
    loop {
        let got = f
            .read(&mut buf)
            .map_err(|e| CreateError::io(&blob.path, e))?;
        if got == 0 {
            break;
        }
        n += got as u64;
        if n > size {
            break;
        }
        h.update(&buf[..got]);
        w.write_all(&buf[..got])
            .map_err(|e| CreateError::io(tmp, e))?;
    }
    let damaged = |actual: String| CreateError::HeldBlobDamaged {
        path: blob.path.clone(),
        sha256: blob.sha256.to_string(),
        actual,
    };
    if n != size {
        return Err(damaged(format!("{n} bytes or more, not {size}")));
    }
    let actual = hex::encode(h.finalize());
    if actual != blob.sha256.as_str() {
        return Err(damaged(format!("its bytes hash to sha256 {actual}")));
    }
    Ok(())
}
