//! Writing the bundle: a directory, a `.tar` or a `.tar.zst`, chosen by the
//! `--out` name. `manifest.json` comes first, then its signature
//! `manifest.json.minisig` when signed ([`head_entries`]), then
//! `blobs/sha256/<hex>` in hex order, each content once, and nothing else.
//!
//! Same inputs give the same bytes: tar headers are GNU, mode 0644, uid and
//! gid 0, no user or group names, and one fixed mtime (`SOURCE_DATE_EPOCH`,
//! else 0); no directory entries (extractors create the folders); zstd
//! frames cut where the layout says, at the level asked for.
//!
//! Every downloaded byte is written once. A `.tar` or `.tar.zst` is written
//! front to back ([`stream`]) into `.NAME.partial` beside `--out`, straight
//! from the downloads, and that file is what a killed or failed run resumes
//! from ([`resume`]); it is renamed into place at the end, so nothing that
//! looks like a bundle exists before it is whole. A directory bundle
//! hard-links the cache's verified files (copies them when the cache is on
//! another filesystem), built under `.NAME.partial-PID`.
//!
//! Like `cp` and `tar`, the bundle's data is not fsynced: flushing a
//! multi-gigabyte bundle would double the time of a run, power loss before
//! the kernel wrote it back is rare, and import verifies every byte against
//! the manifest hash whatever happened. Run `sync` before unplugging the
//! disk it was written to.

pub mod layout;
pub mod resume;
pub mod salvage;
pub mod sink;
pub mod stream;
pub mod temp;
pub mod zst;

use std::fs::{self, File};
use std::io;
use std::path::{Path, PathBuf};

use std::io::Write;

use llmgw_shared::Sha256;
use llmgw_shared::manifest::{BLOB_DIR, MANIFEST_NAME, SIGNATURE_NAME};

pub use layout::header;

use crate::error::CreateError;

/// The zstd level `bundle sign` recompresses with.
pub(crate) const ZSTD_LEVEL: i32 = zst::DEFAULT_LEVEL;

/// The bundle's shape.
#[derive(Debug, Clone, Copy, PartialEq, Eq, serde::Serialize)]
#[serde(rename_all = "kebab-case")]
pub enum Format {
    Dir,
    Tar,
    TarZst,
}

impl Format {
    /// `.tar.zst` → tar + zstd; `.tar` → tar; anything else a directory.
    pub fn of(path: &Path) -> Self {
        let name = path
            .file_name()
            .map(|n| n.to_string_lossy().to_ascii_lowercase())
            .unwrap_or_default();
        if name.ends_with(".tar.zst") {
            Format::TarZst
        } else if name.ends_with(".tar") {
            Format::Tar
        } else {
            Format::Dir
        }
    }
}

/// One blob to write.
#[derive(Debug, Clone)]
pub struct Blob {
    /// Its name: the sha256 of its bytes.
    pub sha256: Sha256,
    /// Its length in bytes.
    pub size: u64,
    /// Where its bytes are.
    pub path: PathBuf,
}

/// The temporary name a bundle is written under, beside its final place:
/// `.NAME.partial-PID`.
pub fn temp_name(out: &Path) -> PathBuf {
    let name = out
        .file_name()
        .map(|n| n.to_string_lossy().into_owned())
        .unwrap_or_default();
    out.with_file_name(format!(".{name}.partial-{}", std::process::id()))
}

/// Removes temporary bundles an earlier, killed run left beside `out`.
pub fn remove_stale_temps(out: &Path) {
    let Some(dir) = out.parent().map(|p| {
        if p.as_os_str().is_empty() {
            Path::new(".")
        } else {
            p
        }
    }) else {
        return;
    };
    let name = out
        .file_name()
        .map(|n| n.to_string_lossy().into_owned())
        .unwrap_or_default();
    let prefix = format!(".{name}.partial-");
    let Ok(rd) = fs::read_dir(dir) else { return };
    for e in rd.flatten() {
        if e.file_name().to_string_lossy().starts_with(&prefix) {
            let p = e.path();
            let _ = if p.is_dir() {
                fs::remove_dir_all(&p)
            } else {
                fs::remove_file(&p)
            };
        }
    }
}

/// The entries every shape of bundle starts with: the manifest, then its
/// signature when the bundle is signed. The one place that decides them.
pub fn head_entries<'a>(
    manifest: &'a [u8],
    signature: Option<&'a [u8]>,
) -> Vec<(&'static str, &'a [u8])> {
    let mut out = vec![(MANIFEST_NAME, manifest)];
    if let Some(sig) = signature {
        out.push((SIGNATURE_NAME, sig));
    }
    out
}

/// Writes the [`head_entries`] of a tar: header, bytes, padding each.
pub(crate) fn write_head<W: Write + ?Sized>(
    w: &mut W,
    manifest: &[u8],
    signature: Option<&[u8]>,
    mtime: u64,
) -> io::Result<()> {
    let zeros = [0u8; 512];
    for (name, bytes) in head_entries(manifest, signature) {
        let n = bytes.len() as u64;
        w.write_all(header(name, n, mtime)?.as_bytes())?;
        w.write_all(bytes)?;
        w.write_all(&zeros[..((512 - n % 512) % 512) as usize])?;
    }
    Ok(())
}

/// Removes the temporary output unless the bundle was renamed into place.
struct TempGuard {
    path: PathBuf,
    done: bool,
}

impl Drop for TempGuard {
    fn drop(&mut self) {
        if !self.done {
            let _ = if self.path.is_dir() {
                fs::remove_dir_all(&self.path)
            } else {
                fs::remove_file(&self.path)
            };
        }
    }
}

/// The check a finished bundle passes before it is renamed to `--out`
/// (`None`: none), given its temporary path.
pub type BeforePublish<'a> = Option<&'a (dyn Fn(&Path) -> Result<(), CheckError> + Send + Sync)>;

/// Why a finished bundle was refused by the check before publishing.
pub type CheckError = Box<dyn std::error::Error + Send + Sync>;

/// Runs `check` on the finished bundle at `tmp`, then renames it to `out`.
/// A bundle the check refuses is moved aside to `OUT.refused` (an older
/// one there replaced), never to `out`, and the refusal names where.
pub fn publish(tmp: &Path, out: &Path, check: BeforePublish<'_>) -> Result<(), CreateError> {
    if let Some(check) = check
        && let Err(e) = check(tmp)
    {
        let mut kept = out.as_os_str().to_owned();
        kept.push(".refused");
        let kept = PathBuf::from(kept);
        let _ = if kept.is_dir() {
            fs::remove_dir_all(&kept)
        } else {
            fs::remove_file(&kept)
        };
        fs::rename(tmp, &kept).map_err(|e| CreateError::io(&kept, e))?;
        return Err(CreateError::RefusedAsWritten { kept, source: e });
    }
    rename_into_place(tmp, out)
}

/// Writes a directory bundle at `out`. `blobs` may come in any order and
/// hold duplicates; each content is written once.
pub fn write_dir_bundle(
    out: &Path,
    manifest: &[u8],
    signature: Option<&[u8]>,
    blobs: &[Blob],
    check: BeforePublish<'_>,
) -> Result<(), CreateError> {
    let mut blobs: Vec<&Blob> = blobs.iter().collect();
    blobs.sort_by(|a, b| a.sha256.cmp(&b.sha256));
    blobs.dedup_by(|a, b| a.sha256 == b.sha256);
    let tmp = temp_name(out);
    let mut guard = TempGuard {
        path: tmp.clone(),
        done: false,
    };
    write_dir(&tmp, manifest, signature, &blobs).map_err(|e| CreateError::io(&tmp, e))?;
    let published = publish(&tmp, out, check);
    // Published, or moved aside: either way nothing is left to remove.
    guard.done = published.is_ok() || !tmp.exists();
    published?;
    Ok(())
}

/// Renames a finished bundle to `out`, refusing to replace anything there.
pub fn rename_into_place(tmp: &Path, out: &Path) -> Result<(), CreateError> {
    if out.exists() {
        return Err(crate::error::OutError::Appeared {
            out: out.to_path_buf(),
        }
        .into());
    }
    fs::rename(tmp, out).map_err(|e| CreateError::io(out, e))?;
    sync_parent(out);
    Ok(())
}

pub(crate) fn sync_parent(path: &Path) {
    if let Some(p) = path.parent() {
        let p = if p.as_os_str().is_empty() {
            Path::new(".")
        } else {
            p
        };
        if let Ok(d) = File::open(p) {
            let _ = d.sync_all();
        }
    }
}

fn write_dir(
    tmp: &Path,
    manifest: &[u8],
    signature: Option<&[u8]>,
    blobs: &[&Blob],
) -> io::Result<()> {
    let blob_dir = tmp.join(BLOB_DIR);
    fs::create_dir_all(&blob_dir)?;
    for (name, bytes) in head_entries(manifest, signature) {
        fs::write(tmp.join(name), bytes)?;
    }
    for b in blobs {
        let to = blob_dir.join(b.sha256.as_str());
        let n = fs::metadata(&b.path)?.len();
        if n != b.size {
            return Err(size_changed(b, n));
        }
        // The cache's file is verified and read-only: share it.
        if fs::hard_link(&b.path, &to).is_ok() {
            continue;
        }
        let n = fs::copy(&b.path, &to)?;
        if n != b.size {
            return Err(size_changed(b, n));
        }
        let mut p = fs::metadata(&to)?.permissions();
        std::os::unix::fs::PermissionsExt::set_mode(&mut p, 0o444);
        fs::set_permissions(&to, p)?;
    }
    Ok(())
}

fn size_changed(b: &Blob, n: u64) -> io::Error {
    io::Error::other(format!(
        "cache file {} is {n} bytes, not the {} verified; remove it and run again",
        b.path.display(),
        b.size
    ))
}

#[cfg(test)]
mod tests;
