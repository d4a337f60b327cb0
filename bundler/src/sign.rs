//! `llmgw bundle sign BUNDLE --key site.key`: signs a bundle made earlier.
//!
//! Invariant: the manifest's bytes, and so the bundle's identity, never
//! change; only `manifest.json.minisig` is added (or replaced) — as the
//! second tar entry, or a file beside the manifest in a directory bundle.
//! A new tar is written under a temporary name beside the old one and
//! renamed over it at the end, so a failed run leaves the bundle as it was.
//! Only a manifest with a `sequence` is signed: a series without one cannot
//! be protected against rollback.

use std::fs::{self, File};
use std::io::{self, Read, Write};
use std::path::{Path, PathBuf};

use llmgw_shared::SecretKey;
use llmgw_shared::manifest::{MANIFEST_NAME, MAX_MANIFEST_BYTES, Manifest, SIGNATURE_NAME};

use crate::error::{BundleFileError, CreateError};
use crate::series::sign_manifest;
use crate::writer::{self, Format};

/// A signature entry larger than this is not a minisign signature.
const MAX_SIGNATURE_BYTES: u64 = 64 * 1024;

/// What `bundle sign` did.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Signed {
    pub manifest_sha256: llmgw_shared::BundleId,
    pub key_id: String,
    pub channel: String,
    pub sequence: u64,
    /// The bundle held a signature already, which was replaced.
    pub replaced: bool,
}

/// Signs the bundle at `bundle` with `key`.
pub fn sign_bundle(bundle: &Path, key: &SecretKey) -> Result<Signed, CreateError> {
    let format = if bundle.is_dir() {
        Format::Dir
    } else {
        Format::of(bundle)
    };
    if format == Format::Dir && !bundle.is_dir() {
        return Err(BundleFileError::NotABundle {
            path: bundle.to_path_buf(),
        }
        .into());
    }
    let (bytes, replaced) = match format {
        Format::Dir => {
            let path = bundle.join(MANIFEST_NAME);
            let f = File::open(&path).map_err(|e| CreateError::io(&path, e))?;
            let bytes = read_entry(f, MAX_MANIFEST_BYTES, &path)?;
            (bytes, bundle.join(SIGNATURE_NAME).exists())
        }
        Format::Tar => {
            let f = File::open(bundle).map_err(|e| CreateError::io(bundle, e))?;
            head(f, bundle).map(|h| (h.manifest, h.had_signature))?
        }
        Format::TarZst => {
            let f = File::open(bundle).map_err(|e| CreateError::io(bundle, e))?;
            let dec =
                zstd::stream::read::Decoder::new(f).map_err(|e| CreateError::io(bundle, e))?;
            head(dec, bundle).map(|h| (h.manifest, h.had_signature))?
        }
    };
    let manifest = Manifest::from_json_bytes(&bytes).map_err(|e| BundleFileError::Manifest {
        path: bundle.to_path_buf(),
        error: Box::new(e),
    })?;
    let manifest_sha256 = llmgw_shared::BundleId::of(&bytes);
    check_sha256_file(bundle, &manifest_sha256)?;
    let Some(sequence) = manifest.sequence else {
        return Err(BundleFileError::NoSequence {
            path: bundle.to_path_buf(),
        }
        .into());
    };
    let sig = sign_manifest(key, &manifest, &bytes)?;
    match format {
        Format::Dir => {
            let dest = bundle.join(SIGNATURE_NAME);
            let tmp = writer::temp_name(&dest);
            fs::write(&tmp, &sig)
                .and_then(|()| fs::rename(&tmp, &dest))
                .map_err(|e| {
                    let _ = fs::remove_file(&tmp);
                    CreateError::io(&dest, e)
                })?;
        }
        Format::Tar | Format::TarZst => rewrite_tar(bundle, format, &sig)?,
    }
    Ok(Signed {
        manifest_sha256,
        key_id: key.key_id(),
        channel: manifest.channel().to_string(),
        sequence,
        replaced,
    })
}

/// Refuses a bundle whose manifest is not the one `BUNDLE.sha256` (written
/// by `bundle create`) names: what is signed must be what was made.
fn check_sha256_file(bundle: &Path, sha: &str) -> Result<(), CreateError> {
    let mut name = bundle.as_os_str().to_os_string();
    name.push(".sha256");
    let path = PathBuf::from(name);
    let Ok(f) = File::open(&path) else {
        return Ok(());
    };
    let text = read_entry(f, 4096, &path)?;
    let text = String::from_utf8_lossy(&text);
    let recorded = text.split_whitespace().next().unwrap_or("");
    if !recorded.eq_ignore_ascii_case(sha) {
        return Err(BundleFileError::Changed {
            path: bundle.to_path_buf(),
            sha256: sha.to_string(),
            sums: path,
            recorded: recorded.to_string(),
        }
        .into());
    }
    Ok(())
}

fn read_entry(r: impl Read, max: u64, what: &Path) -> Result<Vec<u8>, CreateError> {
    let mut out = Vec::new();
    r.take(max + 1)
        .read_to_end(&mut out)
        .map_err(|e| CreateError::io(what, e))?;
    if out.len() as u64 > max {
        return Err(BundleFileError::TooLarge {
            path: what.to_path_buf(),
            max,
        }
        .into());
    }
    Ok(out)
}

/// The start of a bundle tar: its manifest, whether a signature follows,
/// the manifest header's mtime, and the first blob's header block, read
/// while looking for the signature.
struct Head {
    manifest: Vec<u8>,
    had_signature: bool,
    mtime: u64,
    next: Option<[u8; 512]>,
}

fn pad(n: u64) -> u64 {
    (512 - n % 512) % 512
}

/// Reads the manifest entry and, if one follows, the signature entry.
fn head(mut r: impl Read, bundle: &Path) -> Result<Head, CreateError> {
    let path = || bundle.to_path_buf();
    let io = |e| CreateError::io(bundle, e);
    let mut block = [0u8; 512];
    r.read_exact(&mut block).map_err(io)?;
    let h = tar::Header::from_byte_slice(&block);
    if h.path_bytes().as_ref() != MANIFEST_NAME.as_bytes() {
        return Err(BundleFileError::FirstEntry { path: path() }.into());
    }
    let size = h.entry_size().map_err(io)?;
    if size > MAX_MANIFEST_BYTES {
        return Err(BundleFileError::ManifestSize { path: path(), size }.into());
    }
    let mtime = h.mtime().unwrap_or(0);
    let mut manifest = vec![0u8; size as usize];
    r.read_exact(&mut manifest).map_err(io)?;
    io::copy(&mut (&mut r).take(pad(size)), &mut io::sink()).map_err(io)?;

    r.read_exact(&mut block).map_err(io)?;
    let next = tar::Header::from_byte_slice(&block);
    if next.path_bytes().as_ref() != SIGNATURE_NAME.as_bytes() {
        return Ok(Head {
            manifest,
            had_signature: false,
            mtime,
            next: Some(block),
        });
    }
    let size = next.entry_size().map_err(io)?;
    if size > MAX_SIGNATURE_BYTES {
        return Err(BundleFileError::SignatureSize { path: path(), size }.into());
    }
    io::copy(&mut (&mut r).take(size + pad(size)), &mut io::sink()).map_err(io)?;
    Ok(Head {
        manifest,
        had_signature: true,
        mtime,
        next: None,
    })
}

/// Writes the tar again with the signature as its second entry (replacing
/// one that was there), then renames it over the old one.
fn rewrite_tar(bundle: &Path, format: Format, sig: &[u8]) -> Result<(), CreateError> {
    let tmp = writer::temp_name(bundle);
    let io_tmp = |e| CreateError::io(&tmp, e);
    let result = (|| -> Result<(), CreateError> {
        let src = File::open(bundle).map_err(|e| CreateError::io(bundle, e))?;
        let mut dst = File::create(&tmp).map_err(io_tmp)?;
        if format == Format::Tar {
            let mut src = src;
            let h = head(&mut src, bundle)?;
            write_start(&mut dst, &h, sig).map_err(io_tmp)?;
            // File to file: the kernel copies the blobs (copy_file_range).
            io::copy(&mut src, &mut dst).map_err(io_tmp)?;
            dst.sync_all().map_err(io_tmp)?;
        } else {
            let mut dec =
                zstd::stream::read::Decoder::new(src).map_err(|e| CreateError::io(bundle, e))?;
            let h = head(&mut dec, bundle)?;
            let mut enc = zstd::stream::write::Encoder::new(
                io::BufWriter::with_capacity(1 << 20, dst),
                writer::ZSTD_LEVEL,
            )
            .map_err(io_tmp)?;
            enc.include_checksum(true).map_err(io_tmp)?;
            write_start(&mut enc, &h, sig).map_err(io_tmp)?;
            io::copy(&mut dec, &mut enc).map_err(|e| CreateError::io(bundle, e))?;
            let w = enc.finish().map_err(io_tmp)?;
            let f = w.into_inner().map_err(|e| io_tmp(e.into_error()))?;
            f.sync_all().map_err(io_tmp)?;
        }
        fs::rename(&tmp, bundle).map_err(|e| CreateError::io(bundle, e))
    })();
    if result.is_err() {
        let _ = fs::remove_file(&tmp);
    }
    result
}

/// The manifest and signature entries, then the blob header `head` read.
fn write_start(w: &mut impl Write, h: &Head, sig: &[u8]) -> io::Result<()> {
    writer::write_head(w, &h.manifest, Some(sig), h.mtime)?;
    if let Some(block) = &h.next {
        w.write_all(block)?;
    }
    Ok(())
}
