//! Writing the bundle: a directory, a `.tar` or a `.tar.zst`, chosen by the
//! `--out` name. `manifest.json` comes first, then its signature
//! `manifest.json.minisig` when signed ([`head_entries`]), then
//! `blobs/sha256/<hex>` in hex order, each content once, and nothing else.
//!
//! Same inputs give the same bytes: tar headers are GNU, mode 0644, uid and
//! gid 0, no user or group names, and one fixed mtime (`SOURCE_DATE_EPOCH`,
//! else 0); no directory entries (extractors create the folders); zstd at a
//! fixed level with a checksum.
//!
//! Everything is written under a temporary name in the output's own folder
//! and renamed into place at the end, so a failed or killed run never
//! leaves something that looks like a bundle.
//!
//! Blobs come from the cache, where they were verified when they entered
//! it (or hashed again when an earlier run's file was reused), so they are
//! copied, not hashed again. A plain `.tar` is laid out before the large
//! downloads start and each of them is written into its place as it streams
//! ([`TarInPlace`]); what the cache already held is copied in the kernel
//! (`copy_file_range`). A directory bundle hard-links the cache's read-only
//! files when both are on one filesystem (copies otherwise). A `.tar.zst`
//! is compressed in one stream at the end.
//!
//! Like `cp` and `tar`, the bundle's data is not fsynced: flushing a
//! multi-gigabyte bundle would double the time of a run, power loss before
//! the kernel wrote it back is rare, a rerun redoes it from the cache, and
//! import verifies every byte against the manifest hash whatever happened.
//! Run `sync` before unplugging the disk it was written to.

use std::fs::{self, File};
use std::io::{self, Read, Write};
use std::path::{Path, PathBuf};

use llmgw_shared::manifest::{BLOB_DIR, MANIFEST_NAME, SIGNATURE_NAME};

use crate::error::CreateError;

/// The zstd level: fast, and model weights hardly compress anyway.
pub(crate) const ZSTD_LEVEL: i32 = 3;

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
    pub sha256: String,
    pub size: u64,
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

/// Writes the bundle at `out`. `blobs` may come in any order and hold
/// duplicates; each content is written once, in hex order.
pub fn write_bundle(
    out: &Path,
    format: Format,
    manifest: &[u8],
    signature: Option<&[u8]>,
    blobs: &[Blob],
    mtime: u64,
) -> Result<(), CreateError> {
    let mut blobs: Vec<&Blob> = blobs.iter().collect();
    blobs.sort_by(|a, b| a.sha256.cmp(&b.sha256));
    blobs.dedup_by(|a, b| a.sha256 == b.sha256);
    let tmp = temp_name(out);
    let mut guard = TempGuard {
        path: tmp.clone(),
        done: false,
    };
    let io = |e| CreateError::io(&tmp, e);
    match format {
        Format::Dir => write_dir(&tmp, manifest, signature, &blobs).map_err(io)?,
        Format::Tar => {
            let mut f = File::create(&tmp).map_err(io)?;
            write_tar(&mut f, manifest, signature, &blobs, mtime, true).map_err(io)?;
        }
        Format::TarZst => {
            let f = File::create(&tmp).map_err(io)?;
            let mut enc = zstd::stream::write::Encoder::new(
                io::BufWriter::with_capacity(1 << 20, f),
                ZSTD_LEVEL,
            )
            .map_err(io)?;
            enc.include_checksum(true).map_err(io)?;
            write_tar(&mut enc, manifest, signature, &blobs, mtime, false).map_err(io)?;
            let w = enc.finish().map_err(io)?;
            w.into_inner().map_err(|e| io(e.into_error()))?;
        }
    }
    if out.exists() {
        return Err(CreateError::Usage(format!(
            "{} appeared while the bundle was being written; not replacing it",
            out.display()
        )));
    }
    fs::rename(&tmp, out).map_err(|e| CreateError::io(out, e))?;
    guard.done = true;
    sync_parent(out);
    Ok(())
}

/// A plain `.tar` laid out before its blobs arrive. Every blob's sha256 and
/// size is known once the small files known only by their git sha1 are
/// fetched, and with them the whole layout: the manifest first, then each
/// blob's header and data in hex order. Downloads then write straight into
/// their place while they stream (see `fetch`), so the bundle needs no
/// second pass over the bytes. The same bytes as [`write_bundle`] writes.
#[derive(Clone)]
pub struct TarInPlace {
    inner: std::sync::Arc<InPlace>,
}

struct InPlace {
    tmp: PathBuf,
    /// sha256 -> (offset of the data, size).
    regions: std::collections::BTreeMap<String, (u64, u64)>,
    filled: std::sync::Mutex<std::collections::BTreeSet<String>>,
    done: std::sync::atomic::AtomicBool,
}

impl Drop for InPlace {
    fn drop(&mut self) {
        if !self.done.load(std::sync::atomic::Ordering::SeqCst) {
            let _ = fs::remove_file(&self.tmp);
        }
    }
}

impl TarInPlace {
    /// Writes the manifest and every header under the temporary name of
    /// `out`; the data regions stay holes until filled.
    pub fn create(
        out: &Path,
        manifest: &[u8],
        signature: Option<&[u8]>,
        blobs: &std::collections::BTreeMap<String, u64>,
        mtime: u64,
    ) -> io::Result<Self> {
        use std::os::unix::fs::FileExt;
        let tmp = temp_name(out);
        let f = fs::OpenOptions::new()
            .write(true)
            .create(true)
            .truncate(true)
            .open(&tmp)?;
        let inner = InPlace {
            tmp,
            regions: Default::default(),
            filled: Default::default(),
            done: false.into(),
        };
        let mut inner = inner;
        let pad = |n: u64| (512 - (n % 512)) % 512;
        let mut head = Vec::new();
        write_head(&mut head, manifest, signature, mtime)?;
        f.write_all_at(&head, 0)?;
        let mut off = head.len() as u64;
        for (sha, size) in blobs {
            let name = format!("{BLOB_DIR}/{sha}");
            f.write_all_at(header(&name, *size, mtime)?.as_bytes(), off)?;
            inner.regions.insert(sha.clone(), (off + 512, *size));
            off += 512 + size + pad(*size);
        }
        // The padding and the two zero blocks at the end are holes: zeros.
        f.set_len(off + 1024)?;
        Ok(Self {
            inner: std::sync::Arc::new(inner),
        })
    }

    pub fn path(&self) -> &Path {
        &self.inner.tmp
    }

    fn region(&self, sha: &str) -> io::Result<(u64, u64)> {
        self.inner
            .regions
            .get(sha)
            .copied()
            .ok_or_else(|| io::Error::other(format!("blob {sha} has no place in the tar")))
    }

    /// A handle positioned at the blob's data, for a download to write into,
    /// and that position.
    pub fn open_at(&self, sha: &str) -> io::Result<(File, u64)> {
        let (off, _) = self.region(sha)?;
        let mut f = fs::OpenOptions::new().write(true).open(&self.inner.tmp)?;
        io::Seek::seek(&mut f, io::SeekFrom::Start(off))?;
        Ok((f, off))
    }

    /// Records that a blob's bytes are in place and verified.
    pub fn mark(&self, sha: &str) {
        if let Ok(mut f) = self.inner.filled.lock() {
            f.insert(sha.to_string());
        }
    }

    /// Copies a verified file (from the cache) into its place, in the kernel.
    pub fn copy_in(&self, sha: &str, from: &Path) -> io::Result<()> {
        let (_, size) = self.region(sha)?;
        let (mut dst, _) = self.open_at(sha)?;
        let mut src = File::open(from)?;
        let n = io::copy(&mut (&mut src).take(size), &mut dst)?;
        if n != size {
            return Err(io::Error::other(format!(
                "cache file {} is {n} bytes, not the {size} verified; remove it and run again",
                from.display()
            )));
        }
        self.mark(sha);
        Ok(())
    }

    /// Renames the finished tar to `out`, once every blob is in place.
    pub fn finish(&self, out: &Path) -> Result<(), CreateError> {
        let filled = self
            .inner
            .filled
            .lock()
            .map(|f| f.clone())
            .unwrap_or_default();
        if let Some(missing) = self.inner.regions.keys().find(|k| !filled.contains(*k)) {
            return Err(CreateError::io(
                &self.inner.tmp,
                io::Error::other(format!("blob {missing} was never written into the tar")),
            ));
        }
        if out.exists() {
            return Err(CreateError::Usage(format!(
                "{} appeared while the bundle was being written; not replacing it",
                out.display()
            )));
        }
        fs::rename(&self.inner.tmp, out).map_err(|e| CreateError::io(out, e))?;
        self.inner
            .done
            .store(true, std::sync::atomic::Ordering::SeqCst);
        sync_parent(out);
        Ok(())
    }
}

fn sync_parent(path: &Path) {
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
        let to = blob_dir.join(&b.sha256);
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

/// A deterministic GNU tar header for a regular file.
fn header(path: &str, size: u64, mtime: u64) -> io::Result<tar::Header> {
    let mut h = tar::Header::new_gnu();
    h.set_path(path)?;
    h.set_entry_type(tar::EntryType::Regular);
    h.set_size(size);
    h.set_mode(0o644);
    h.set_uid(0);
    h.set_gid(0);
    h.set_mtime(mtime);
    h.set_cksum();
    Ok(h)
}

/// Writes the tar stream. With `kernel_copy`, `w` is a plain file and blob
/// bytes are copied by the kernel.
fn write_tar<W: Write + AsFileMaybe>(
    w: &mut W,
    manifest: &[u8],
    signature: Option<&[u8]>,
    blobs: &[&Blob],
    mtime: u64,
    kernel_copy: bool,
) -> io::Result<()> {
    let zeros = [0u8; 1024];
    let pad = |n: u64| ((512 - (n % 512)) % 512) as usize;
    write_head(w, manifest, signature, mtime)?;
    let mut buf = if kernel_copy {
        Vec::new()
    } else {
        vec![0u8; 1 << 20]
    };
    for b in blobs {
        let name = format!("{BLOB_DIR}/{}", b.sha256);
        w.write_all(header(&name, b.size, mtime)?.as_bytes())?;
        let mut src = File::open(&b.path)?;
        if src.metadata()?.len() != b.size {
            return Err(size_changed(b, src.metadata()?.len()));
        }
        let n = match (kernel_copy, w.as_file()) {
            (true, Some(f)) => io::copy(&mut (&mut src).take(b.size), f)?,
            _ => {
                let mut n = 0u64;
                let mut src = (&mut src).take(b.size);
                loop {
                    let k = src.read(&mut buf)?;
                    if k == 0 {
                        break;
                    }
                    w.write_all(&buf[..k])?;
                    n += k as u64;
                }
                n
            }
        };
        if n != b.size {
            return Err(size_changed(b, n));
        }
        w.write_all(&zeros[..pad(b.size)])?;
    }
    // The end of the archive: two zero blocks.
    w.write_all(&zeros)?;
    w.flush()
}

/// Lets the tar writer reach the file under a writer for in-kernel copies.
trait AsFileMaybe {
    fn as_file(&mut self) -> Option<&mut File>;
}

impl AsFileMaybe for File {
    fn as_file(&mut self) -> Option<&mut File> {
        Some(self)
    }
}

impl<W: Write> AsFileMaybe for zstd::stream::write::Encoder<'_, W> {
    fn as_file(&mut self) -> Option<&mut File> {
        None
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use llmgw_shared::digest::sha256_hex;

    fn blobs(dir: &Path) -> Vec<Blob> {
        let mut out = Vec::new();
        for body in [&b"second"[..], b"first", b"second", &vec![7u8; 70_000]] {
            let sha = sha256_hex(body);
            let p = dir.join(&sha);
            fs::write(&p, body).unwrap();
            out.push(Blob {
                sha256: sha,
                size: body.len() as u64,
                path: p,
            });
        }
        out
    }

    fn entries(bytes: &[u8]) -> Vec<(String, Vec<u8>, u64, u32)> {
        let mut a = tar::Archive::new(bytes);
        a.entries()
            .unwrap()
            .map(|e| {
                let mut e = e.unwrap();
                let name = e.path().unwrap().to_string_lossy().into_owned();
                let (mtime, mode) = (e.header().mtime().unwrap(), e.header().mode().unwrap());
                let mut v = Vec::new();
                e.read_to_end(&mut v).unwrap();
                (name, v, mtime, mode)
            })
            .collect()
    }

    #[test]
    fn formats_from_names() {
        assert_eq!(Format::of(Path::new("a/b.tar.zst")), Format::TarZst);
        assert_eq!(Format::of(Path::new("b.TAR")), Format::Tar);
        assert_eq!(Format::of(Path::new("bundle")), Format::Dir);
    }

    #[test]
    fn tar_is_ordered_deduplicated_and_reproducible() {
        let d = tempfile::tempdir().unwrap();
        let bl = blobs(d.path());
        let out = d.path().join("b.tar");
        write_bundle(&out, Format::Tar, b"{}\n", None, &bl, 1234).unwrap();
        let bytes = fs::read(&out).unwrap();
        let es = entries(&bytes);
        assert_eq!(es.len(), 4);
        assert_eq!(es[0].0, "manifest.json");
        assert_eq!(es[0].1, b"{}\n");
        let names: Vec<&str> = es[1..].iter().map(|e| e.0.as_str()).collect();
        let mut sorted = names.clone();
        sorted.sort();
        assert_eq!(names, sorted);
        for e in &es[1..] {
            assert_eq!(e.0, format!("blobs/sha256/{}", sha256_hex(&e.1)));
            assert_eq!((e.2, e.3), (1234, 0o644));
        }
        let out2 = d.path().join("c.tar");
        write_bundle(&out2, Format::Tar, b"{}\n", None, &bl, 1234).unwrap();
        assert_eq!(bytes, fs::read(&out2).unwrap());
        // No temporary left.
        assert_eq!(
            fs::read_dir(d.path())
                .unwrap()
                .flatten()
                .filter(|e| e.file_name().to_string_lossy().starts_with('.'))
                .count(),
            0
        );
    }

    #[test]
    fn zst_and_dir() {
        let d = tempfile::tempdir().unwrap();
        let bl = blobs(d.path());
        let out = d.path().join("b.tar.zst");
        write_bundle(&out, Format::TarZst, b"{}\n", None, &bl, 0).unwrap();
        let raw = zstd::decode_all(fs::File::open(&out).unwrap()).unwrap();
        let es = entries(&raw);
        assert_eq!(es[0].0, "manifest.json");
        assert_eq!(es.len(), 4);
        let out2 = d.path().join("c.tar.zst");
        write_bundle(&out2, Format::TarZst, b"{}\n", None, &bl, 0).unwrap();
        assert_eq!(fs::read(&out).unwrap(), fs::read(&out2).unwrap());

        let dir = d.path().join("bundle");
        write_bundle(&dir, Format::Dir, b"{}\n", None, &bl, 0).unwrap();
        assert_eq!(fs::read(dir.join("manifest.json")).unwrap(), b"{}\n");
        assert_eq!(fs::read_dir(dir.join("blobs/sha256")).unwrap().count(), 3);
    }

    #[test]
    fn a_failed_write_leaves_nothing() {
        let d = tempfile::tempdir().unwrap();
        let mut bl = blobs(d.path());
        bl[0].size += 1; // the cache file is not what was verified
        let out = d.path().join("b.tar");
        let err = write_bundle(&out, Format::Tar, b"{}\n", None, &bl, 0).unwrap_err();
        assert!(err.to_string().contains("not the 7 verified"), "{err}");
        assert!(!out.exists());
        assert!(!temp_name(&out).exists());
    }
}
