//! The import's private staging folder, `STORE/tmp/import-<manifest
//! sha256>/`: the [`Target`] the check streams verified blobs into.
//!
//! Invariant: a file named `<blob sha256>` in the folder is a whole blob
//! that hashed to its name and was synced before it got that name (it is
//! written as `<sha256>.part` and renamed by the syncer only after both),
//! so a later run of the same import trusts it without reading it again.
//! Nothing here is ever served, and the folder is removed when the import
//! returns (`Staging` is a guard), so no returned import leaves one.

use std::collections::HashMap;
use std::fs::File;
use std::path::PathBuf;
use std::sync::{Arc, Mutex};

use llmgw_shared::manifest::Manifest;
use llmgw_shared::{BundleId, Sha256};

use super::ImportError;
use super::layers::{Hashers, Layers};
use super::xet::{XetRecords, XetSink};
use crate::bundle::verify::{BlobSink, Target};
use crate::store::Store;
use crate::store::fsutil;

/// The import's private staging folder, and its view of what is at hand.
pub(super) struct Staging<'a> {
    store: &'a Store,
    pub(super) dir: PathBuf,
    expected: BundleId,
    /// Blobs whose bytes are all written, waiting for their hash verdict.
    written: Arc<Mutex<HashMap<String, File>>>,
    /// Syncs verified blobs and gives them their final staged name, in the
    /// background, so the next blob streams while the disk catches up.
    syncer: Option<Syncer>,
    /// Whether the bundle's signature, if any, was checked up front.
    pub(super) signature_checked: bool,
    /// The models' tar-layer digests, learned as the Hub files stream.
    pub(super) layers: Layers,
    /// The Xet records of its LFS Hub files, made as they stream.
    pub(super) xet: XetRecords,
}

/// A background thread that fsyncs verified staged blobs, then renames
/// them from `<sha>.part` to `<sha>`.
///
/// Its queue is bounded: each job holds an open file, so an unbounded queue
/// of a bundle with 100 000 small blobs ran out of file descriptors ("Too
/// many open files") whenever the disk synced slower than the check read.
/// When the queue is full, `keep` waits for the syncer instead.
struct Syncer {
    jobs: std::sync::mpsc::SyncSender<(File, PathBuf, PathBuf)>,
    thread: std::thread::JoinHandle<Result<(), ImportError>>,
}

/// The most verified blobs waiting for their fsync at once, each an open
/// file: far below the common open-files limit of 1 024 (and 256), and
/// enough to keep the disk busy while the next blobs stream.
const SYNC_QUEUE: usize = 64;

impl Syncer {
    fn start() -> Self {
        let (jobs, rx) = std::sync::mpsc::sync_channel::<(File, PathBuf, PathBuf)>(SYNC_QUEUE);
        let thread = std::thread::spawn(move || {
            let mut result = Ok(());
            for (file, part, staged) in rx {
                if result.is_err() {
                    continue;
                }
                result = crate::store::fsutil::sync_file(&file)
                    .and_then(|()| std::fs::rename(&part, &staged))
                    .map_err(|source| ImportError::Stage { path: part, source });
            }
            result
        });
        Self { jobs, thread }
    }
}

impl<'a> Staging<'a> {
    pub(super) fn new(store: &'a Store, expected_sha256: &BundleId) -> Self {
        // A digest by type: 64 hex digits, safe in a file name.
        let dir = store.tmp_dir().join(format!("import-{expected_sha256}"));
        Self {
            store,
            dir,
            expected: expected_sha256.clone(),
            signature_checked: true,
            written: Arc::default(),
            syncer: None,
            layers: Layers::default(),
            xet: XetRecords::default(),
        }
    }

    /// Waits until every verified blob is synced under its staged name,
    /// and reports the first failure.
    pub(super) fn settle(&mut self) -> Result<(), ImportError> {
        if let Ok(mut w) = self.written.lock() {
            w.clear();
        }
        self.xet.settle(&self.dir)?;
        match self.syncer.take() {
            None => Ok(()),
            Some(Syncer { jobs, thread }) => {
                drop(jobs);
                thread.join().unwrap_or(Err(ImportError::SyncerPanicked))
            }
        }
    }

    pub(super) fn staged_path(&self, sha: &str) -> PathBuf {
        self.dir.join(sha)
    }

    fn part_path(&self, sha: &str) -> PathBuf {
        self.dir.join(format!("{sha}.part"))
    }

    /// Removes the staging folder, if any.
    fn remove(&mut self) {
        let _ = self.settle();
        if self.dir.exists() {
            let _ = std::fs::remove_dir_all(&self.dir);
            let _ = fsutil::fsync_dir(&self.store.tmp_dir());
        }
    }
}

/// The staging folder goes with its import, whatever the import returned
/// (its blobs are in `blobs/` once committed): only an import killed before
/// it returns leaves one, for the next run of it to carry on from, and `mirror
/// gc` removes one no import holds.
impl Drop for Staging<'_> {
    fn drop(&mut self) {
        self.remove();
    }
}

/// The most read back from the store for a blob at hand: only signature
/// and checksum files are asked for.
const READ_HAVE_MAX: u64 = 64 << 20;

impl Target for Staging<'_> {
    type Error = ImportError;

    fn signature_checked(&self) -> bool {
        self.signature_checked
    }
    fn have(&self, sha256: &Sha256, size: u64) -> bool {
        self.store.has_blob(sha256, size)
            || std::fs::metadata(self.staged_path(sha256)).is_ok_and(|m| m.len() == size)
    }

    fn read_have(&self, sha256: &Sha256) -> Result<Vec<u8>, ImportError> {
        let staged = self.staged_path(sha256);
        if !staged.exists() {
            // Held by the store (its folder, or its bucket): a signature
            // or checksum file, small.
            return Ok(self.store.read_small_blob(sha256, READ_HAVE_MAX)?);
        }
        std::fs::read(&staged).map_err(|source| ImportError::Stage {
            path: staged,
            source,
        })
    }

    fn on_manifest(&mut self, manifest: &Manifest, to_read: u64) -> Result<bool, ImportError> {
        // Held means the manifest file is there and intact: a damaged one
        // is replaced by running the import again.
        let held = self.store.read_bundle(&self.expected).is_ok();
        if held
            && manifest
                .blobs()
                .iter()
                .all(|(sha, size)| self.store.has_blob(sha, *size))
        {
            return Ok(false);
        }
        // A delta: every prerequisite at hand, before anything is staged.
        crate::store::have::check_prerequisites(
            self.store,
            &self.expected,
            manifest,
            |sha, size| self.have(sha, size),
        )
        .map_err(ImportError::Prerequisites)?;
        self.layers = Layers::of(manifest);
        self.xet = XetRecords::of(manifest);
        let tmp = self.store.tmp_dir();
        let available = fsutil::free_bytes(&tmp)?;
        if to_read > available {
            return Err(ImportError::NoSpace {
                path: tmp,
                needed: to_read,
                available,
            });
        }
        Ok(true)
    }

    fn begin(
        &mut self,
        sha256: &str,
    ) -> Result<Option<Box<dyn BlobSink<ImportError>>>, ImportError> {
        if !self.dir.exists() {
            std::fs::create_dir_all(&self.dir).map_err(|source| ImportError::Stage {
                path: self.dir.clone(),
                source,
            })?;
        }
        let path = self.part_path(sha256);
        let file = File::create(&path).map_err(|source| ImportError::Stage {
            path: path.clone(),
            source,
        })?;
        Ok(Some(Box::new(StagedFile {
            file: Some(file),
            path,
            sha256: sha256.to_string(),
            unflushed: 0,
            written: self.written.clone(),
            layers: self.layers.hashers(sha256),
            xet: self.xet.hasher(sha256),
        })))
    }

    fn keep(&mut self, sha256: &str) -> Result<(), ImportError> {
        // The bytes hashed right. Only once they are synced does the blob
        // get its staged name (the syncer does both), so a staged blob
        // under its hash is always whole and verified, even after a crash.
        let file = self
            .written
            .lock()
            .ok()
            .and_then(|mut w| w.remove(sha256))
            .ok_or_else(|| ImportError::NotWritten {
                sha256: sha256.to_string(),
            })?;
        self.layers.keep(sha256);
        self.xet.keep(&self.dir, sha256)?;
        let job = (file, self.part_path(sha256), self.staged_path(sha256));
        let syncer = self.syncer.get_or_insert_with(Syncer::start);
        if syncer.jobs.send(job).is_err() {
            // The syncer stopped on an error; settle() reports it.
            return self.settle();
        }
        Ok(())
    }

    fn discard(&mut self, sha256: &str) {
        if let Ok(mut w) = self.written.lock() {
            w.remove(sha256);
        }
        let _ = std::fs::remove_file(self.part_path(sha256));
    }
}

/// A blob being written into staging.
struct StagedFile {
    file: Option<File>,
    path: PathBuf,
    sha256: String,
    /// Bytes written since writeback was last started.
    unflushed: u64,
    written: Arc<Mutex<HashMap<String, File>>>,
    /// A Hub file's tar-layer hashers, fed the same bytes.
    layers: Option<Hashers>,
    /// A large Hub file's Xet chunker, fed the same bytes.
    xet: Option<XetSink>,
}

/// Start writing dirty pages back this often, so the final fsync waits for
/// little and a big blob never piles up gigabytes of dirty memory.
const WRITEBACK_EVERY: u64 = 32 << 20;

impl BlobSink<ImportError> for StagedFile {
    fn write(&mut self, buf: &[u8]) -> Result<(), ImportError> {
        use std::io::Write;
        let Some(file) = self.file.as_mut() else {
            return Err(ImportError::WriteAfterFinish);
        };
        file.write_all(buf).map_err(|source| ImportError::Stage {
            path: self.path.clone(),
            source,
        })?;
        if let Some(h) = self.layers.as_mut() {
            h.update(buf);
        }
        if let Some(x) = self.xet.as_mut() {
            x.update(buf);
        }
        self.unflushed += buf.len() as u64;
        if self.unflushed >= WRITEBACK_EVERY {
            fsutil::start_writeback(file);
            self.unflushed = 0;
        }
        Ok(())
    }

    fn finish(mut self: Box<Self>) -> Result<(), ImportError> {
        use std::os::unix::fs::PermissionsExt;
        let Some(file) = self.file.take() else {
            return Ok(());
        };
        if let Some(h) = self.layers.take() {
            h.finish();
        }
        if let Some(x) = self.xet.take() {
            x.finish();
        }
        // Read-only once written; the sync comes once the hash is known
        // to match (see Staging::keep).
        file.set_permissions(std::fs::Permissions::from_mode(0o444))
            .map_err(|source| ImportError::Stage {
                path: self.path.clone(),
                source,
            })?;
        fsutil::start_writeback(&file);
        if let Ok(mut w) = self.written.lock() {
            w.insert(self.sha256.clone(), file);
        }
        Ok(())
    }
}
