//! `.NAME.partial`, the file a `.tar` or `.tar.zst` bundle is written into
//! beside `--out`, under a name the next run finds: a run killed or failed
//! half-way leaves it, and the next run with the same `--out` checks what it
//! holds and carries on after it ([`super::resume`]).
//!
//! The invariant: one run at a time writes it (an exclusive `flock`, which
//! the kernel drops when the process dies, even by `kill -9`), and it is
//! renamed to `--out` only when the whole bundle is in it.

use std::fs::{self, File, OpenOptions};
use std::path::{Path, PathBuf};
use std::sync::Arc;

use llmgw_shared::manifest::MAX_MANIFEST_BYTES;

use super::layout::Layout;
use super::resume::{self, Found};
use super::sink::Sink;
use crate::error::CreateError;

/// `.NAME.partial` beside `out`.
pub fn resume_name(out: &Path) -> PathBuf {
    let name = out
        .file_name()
        .map(|n| n.to_string_lossy().into_owned())
        .unwrap_or_default();
    out.with_file_name(format!(".{name}.partial"))
}

/// `.NAME.partial` beside `dest`, opened (created) and locked for this run:
/// the bundle's and each volume's (`crate::volumes`) file while written.
pub fn open_locked(dest: &Path) -> Result<(File, PathBuf), CreateError> {
    let path = resume_name(dest);
    let file = OpenOptions::new()
        .read(true)
        .write(true)
        .create(true)
        .truncate(false)
        .open(&path)
        .map_err(|e| CreateError::io(&path, e))?;
    // flock(2), dropped by the kernel when the process ends, even by kill -9.
    match file.try_lock() {
        Ok(()) => Ok((file, path)),
        Err(std::fs::TryLockError::WouldBlock) => Err(CreateError::Busy { path }),
        Err(std::fs::TryLockError::Error(e)) => Err(CreateError::io(&path, e)),
    }
}

pub struct TempBundle {
    pub path: PathBuf,
    file: File,
    zst: bool,
}

impl TempBundle {
    /// Opens (creating) the file and takes its lock.
    pub fn open(out: &Path, zst: bool) -> Result<Self, CreateError> {
        let (file, path) = open_locked(out)?;
        Ok(Self { path, file, zst })
    }

    pub fn len(&self) -> u64 {
        self.file.metadata().map_or(0, |m| m.len())
    }

    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// The manifest an earlier run started the file with.
    pub fn old_manifest(&self) -> Option<Vec<u8>> {
        if self.is_empty() {
            return None;
        }
        resume::manifest(&self.file, self.zst, MAX_MANIFEST_BYTES)
    }

    /// Copies the whole blobs of the file that `wanted` names into
    /// `cache` ([`super::salvage`]), before it is emptied for another
    /// request.
    pub fn salvage(
        &self,
        wanted: &std::collections::BTreeMap<llmgw_shared::Sha256, u64>,
        cache: &crate::cache::Cache,
    ) -> Result<super::salvage::Salvaged, CreateError> {
        super::salvage::salvage(&self.file, self.zst, wanted, cache)
            .map_err(|e| CreateError::io(cache.root(), e))
    }

    /// Empties the file (it belongs to another request).
    pub fn discard(&self) -> Result<(), CreateError> {
        self.file
            .set_len(0)
            .map_err(|e| CreateError::io(&self.path, e))
    }

    /// What of `layout` the file already holds, checked.
    pub fn scan(&self, layout: &Layout) -> Result<Found, CreateError> {
        if self.is_empty() {
            return Ok(Found {
                pos: 0,
                file_len: 0,
                have: (0..layout.blobs.len())
                    .map(|_| resume::Have::None)
                    .collect(),
            });
        }
        resume::scan(&self.file, self.zst, layout).map_err(|e| CreateError::io(&self.path, e))
    }

    /// A sink carrying on at `found`; `zstd` is (level, threads) for a `.tar.zst`.
    pub fn sink(
        &self,
        layout: Arc<Layout>,
        found: &Found,
        zstd: Option<(i32, usize)>,
    ) -> Result<Sink, CreateError> {
        let f = self
            .file
            .try_clone()
            .map_err(|e| CreateError::io(&self.path, e))?;
        Sink::new(f, layout, found.pos, found.file_len, zstd)
            .map_err(|e| CreateError::io(&self.path, e))
    }

    /// Checks the finished file ([`super::publish`]), then renames it to
    /// `out`.
    pub fn finish(self, out: &Path, check: super::BeforePublish<'_>) -> Result<(), CreateError> {
        super::publish(&self.path, out, check)
    }

    /// After a failure: keeps the file when it holds more than `min` bytes
    /// (something beyond the manifest), else removes it. Answers whether
    /// it was kept.
    pub fn keep_if_longer(self, min: u64) -> bool {
        if self.len() > min {
            return true;
        }
        let _ = fs::remove_file(&self.path);
        false
    }
}
