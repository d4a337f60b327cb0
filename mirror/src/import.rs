//! `llmgw bundle import`: check a bundle completely, then add it to the
//! store all at once.
//!
//! Every blob is hashed once, while it streams from the bundle into a
//! private staging folder, `STORE/tmp/import-<manifest sha256>/` (same
//! filesystem as `blobs/`, never served). Only when every check of
//! [`crate::verify`] passed — manifest hash, signature, every blob — are
//! the staged blobs renamed into `blobs/`, each already synced to disk; then
//! the directories are synced, and the manifest is written to
//! `bundles/<sha>.json` last. A server reading the store starts from
//! `bundles/`, so it sees the whole bundle or none of it.
//!
//! Each blob is written on a writer thread while the next chunk is read and
//! hashed, and once its hash matched it is fsynced and given its staged
//! name by a background syncer, so the disk catches up while the next blob
//! streams; the import waits for the syncer before anything is renamed
//! into `blobs/`.
//!
//! Before the commit, the bundle's claims are checked against the bundles
//! held ([`crate::claims`]): no second version of a file, nothing added to
//! a signed release. The commit numbers the bundle in the store's import
//! order ([`crate::state`]) just before its manifest appears.
//!
//! A signed bundle ([`crate::series`]) is checked before anything is
//! staged: its signature against the keys trusted for bundles, its
//! sequence against its series (rollback, equivocation), its expiry against
//! the store's policy. The commit writes its signature as
//! `bundles/<sha>.json.minisig` and moves its series up, both before the
//! manifest appears, and takes both back if it fails.
//!
//! On a refusal the staging folder is removed and `blobs/`, `bundles/` and
//! `state/` are exactly as before; a commit that fails takes back the
//! blobs, folders and import number it added. A process killed before the
//! commit leaves only its staging folder, which is keyed by the manifest
//! hash: running the same import again finds the blobs it already verified
//! there (a staged blob gets its final name only after its hash matched and
//! its bytes were synced) and does not read them again. Killed during the
//! commit, it may leave verified blobs in `blobs/` that no manifest names:
//! they are never served (the server only serves what a held manifest
//! names), `mirror verify` and `mirror gc` name them, gc removes them, and
//! running the import again uses them.

use std::collections::HashMap;
use std::fs::File;
use std::io;
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex};

use llmgw_shared::have::NeedList;
use llmgw_shared::manifest::Manifest;
use thiserror::Error;

use crate::bundle_reader::BundleFormat;
use crate::claims::{self, ClaimError};
use crate::fsutil::{self, StoreLock};
use crate::progress::Progress;
use crate::series::{self, Policy, Series, SeriesError, SignedBy, Step};
use crate::state::{self, ImportOrder};
use crate::store::{Store, StoreError};
use crate::trust::{self, TrustError};
use crate::verify::{self, BlobSink, Outcome, Target, VerifyError};

/// Why an import failed: the bundle refused ([`VerifyError`]), or the
/// store, the staging folder or the commit failed.
#[derive(Debug, Error)]
pub enum ImportError {
    #[error(transparent)]
    Verify(#[from] VerifyError),
    #[error(transparent)]
    Store(#[from] StoreError),
    #[error(transparent)]
    Trust(#[from] TrustError),
    #[error(
        "the bundle verified, but adding it to the store failed; the store was left as \
         before (blobs added by this run were removed)"
    )]
    Commit(#[source] StoreError),
    #[error(transparent)]
    Claim(#[from] ClaimError),
    #[error(transparent)]
    Series(#[from] SeriesError),
    /// A delta whose prerequisites the store lacks: refused before
    /// anything was staged.
    #[error("{}", crate::have::missing_message(.0))]
    Prerequisites(Box<NeedList>),
    /// Writing the staging folder failed; nothing was committed.
    #[error("{}", stage_message(path, source))]
    Stage {
        path: PathBuf,
        #[source]
        source: io::Error,
    },
    #[error(
        "not enough free space to import: {needed} bytes of blobs must be staged under {path}, \
         and its filesystem has {available} bytes free; free space (or run `llmgw mirror gc`) \
         and import again; the store is unchanged"
    )]
    NoSpace {
        path: PathBuf,
        needed: u64,
        available: u64,
    },
    /// A blob the manifest names is not a sha256 (the manifest's own check
    /// refuses that first: a guard).
    #[error("not a sha256: {sha256}")]
    NotSha256 { sha256: String },
    /// The staging's own bookkeeping broke: a bug, not the bundle's fault.
    #[error("staged blob {sha256} was not written")]
    NotWritten { sha256: String },
    #[error("write after finish")]
    WriteAfterFinish,
    #[error("the staging sync thread panicked")]
    SyncerPanicked,
    /// `bundle import` of volumes was given none.
    #[error("no volume given")]
    NoVolume,
    /// The volumes module's own failures, in its words.
    #[error("{0}")]
    Volumes(String),
    #[error(transparent)]
    VolumeState(#[from] crate::volumes::state::StateError),
}

fn stage_message(path: &Path, e: &io::Error) -> String {
    if fsutil::is_disk_full(e) {
        format!(
            "the disk filled up while writing {}; the import stopped and the store is \
             unchanged: free space on the store's filesystem and run the import again",
            path.display()
        )
    } else {
        format!(
            "writing {}; the import stopped and the store is unchanged",
            path.display()
        )
    }
}

/// How an import treats a signed series, and the time it runs at.
#[derive(Debug, Clone, Copy)]
pub struct ImportOptions {
    /// Accept a signed bundle older than its series' highest (held, never
    /// current).
    pub allow_rollback: bool,
    /// Now, in Unix seconds: expiry and future `created` are judged by it.
    pub now: u64,
}

impl Default for ImportOptions {
    fn default() -> Self {
        Self {
            allow_rollback: false,
            now: std::time::SystemTime::now()
                .duration_since(std::time::UNIX_EPOCH)
                .map(|d| d.as_secs())
                .unwrap_or(0),
        }
    }
}

/// What an import did, and what it proved.
#[derive(Debug, Clone)]
pub struct ImportReport {
    pub manifest_sha256: String,
    pub manifest: Manifest,
    pub format: BundleFormat,
    /// `(release, key id)` of each signed release.
    pub signatures: Vec<(String, String)>,
    pub blobs_hashed: usize,
    pub bytes_hashed: u64,
    /// Verified earlier: already in the store, or staged by a killed run.
    pub blobs_at_hand: usize,
    pub bytes_at_hand: u64,
    /// New files in `blobs/`.
    pub blobs_added: usize,
    pub bytes_added: u64,
    /// Bundles the store holds now.
    pub bundles_held: usize,
    /// Who signed the bundle (a key trusted for bundles), if anyone.
    pub signed_by: Option<SignedBy>,
    /// What it did to its series.
    pub step: Option<Step>,
    /// Warnings the operator must see (expiry, clock, rollback).
    pub notes: Vec<String>,
}

/// How an import ended.
#[derive(Debug, Clone)]
pub enum ImportOutcome {
    Imported(Box<ImportReport>),
    /// The bundle, and every blob it names, was already held: nothing done.
    AlreadyHeld {
        manifest_sha256: String,
        bundles_held: usize,
    },
}

/// Imports the bundle at `bundle` into `store`, if its manifest hashes to
/// `expected_sha256` and everything else checks out.
pub fn import(
    store: &Store,
    bundle: &Path,
    expected_sha256: &str,
    progress: &dyn Progress,
) -> Result<ImportOutcome, ImportError> {
    import_with(
        store,
        bundle,
        Some(expected_sha256),
        &ImportOptions::default(),
        progress,
    )
}

/// What the signature check decided, for the commit and the report.
#[derive(Default)]
pub(crate) struct SignedPlan {
    signature: Option<Vec<u8>>,
    signed_by: Option<SignedBy>,
    step: Option<Step>,
    /// The series as it is to be after the commit, when it moves.
    series: Option<Series>,
    notes: Vec<String>,
    /// The head was read before the full pass (not a pipe).
    looked_ahead: bool,
}

/// Checks a bundle's signature, series and times before anything is
/// staged. Returns the manifest sha256 the rest of the import holds the
/// bundle to. When the bundle has no readable manifest, or not the one
/// `expected` names, nothing is decided here: the full check refuses it
/// with its own words.
pub(crate) fn plan_signed(
    store: &Store,
    bundle: &Path,
    expected: Option<&str>,
    opts: &ImportOptions,
) -> Result<(String, SignedPlan), ImportError> {
    // A pipe can be read once: no look-ahead (a signed bundle is then
    // refused by the full pass; an unsigned one needs --sha256).
    let regular = std::fs::metadata(bundle).is_ok_and(|m| m.is_file() || m.is_dir());
    if !regular {
        let e = expected.ok_or(SeriesError::NoProof)?;
        return Ok((e.to_string(), SignedPlan::default()));
    }
    let head = series::read_head(bundle)?;
    let sha = head.manifest_sha256.clone();
    let manifest = match Manifest::from_json_bytes(&head.manifest_bytes) {
        Ok(m) if expected.is_none_or(|e| e == sha) => m,
        _ => {
            let e = expected.ok_or(SeriesError::NoProof)?;
            let plan = SignedPlan {
                looked_ahead: true,
                ..SignedPlan::default()
            };
            return Ok((e.to_string(), plan));
        }
    };
    let bundle_keys = trust::role_keys(store, trust::Role::Bundle)?;
    let signed_by = series::check_signature(&head, &manifest, &bundle_keys)?;
    let policy = Policy::load(store)?;
    match (&signed_by, expected) {
        (None, None) => return Err(SeriesError::NoProof.into()),
        (None, Some(_)) if policy.require_signature => return Err(SeriesError::Unsigned.into()),
        _ => {}
    }
    let mut plan = SignedPlan {
        looked_ahead: true,
        signature: signed_by.as_ref().and(head.signature),
        ..SignedPlan::default()
    };
    if store.bundle_ids()?.contains(&sha) {
        // Held already: importing it again repairs, and moves nothing.
        plan.signed_by = signed_by;
        return Ok((sha, plan));
    }
    plan.notes = series::check_times(&manifest, opts.now, &policy)?;
    // A repair bundle names nothing to serve: it never moves a series.
    if let Some(by) = signed_by.as_ref().filter(|_| !manifest.is_repair()) {
        let mut s = Series::load(store)?;
        let step = s.decide(by, &sha, opts.allow_rollback)?;
        match &step {
            Step::Advance => {
                s.advance(by, &sha);
                plan.series = Some(s);
            }
            Step::Same => {}
            Step::Rollback { held } => {
                tracing::warn!(
                    bundle = %sha, key = %by.key_id, channel = %by.channel,
                    sequence = by.sequence, held = held, "rollback allowed by --allow-rollback"
                );
                plan.notes.push(format!(
                    "rollback allowed (--allow-rollback): key {} channel {} is at sequence \
                     {held}; this bundle (sequence {}) is held, but nodes keep being served \
                     sequence {held}",
                    by.key_id,
                    llmgw_shared::shown::shown(&by.channel),
                    by.sequence
                ));
            }
        }
        plan.step = Some(step);
    }
    plan.signed_by = signed_by;
    Ok((sha, plan))
}

/// Imports the bundle at `bundle` into `store`. `expected_sha256` is the
/// manifest hash carried apart; without it the bundle must be signed by a
/// key the store trusts for bundles.
pub fn import_with(
    store: &Store,
    bundle: &Path,
    expected: Option<&str>,
    opts: &ImportOptions,
    progress: &dyn Progress,
) -> Result<ImportOutcome, ImportError> {
    store.create_dirs()?;
    let _lock = StoreLock::acquire(&store.lock_path(), "the import")?;
    let trusted = trust::keys(store)?;
    let (sha, plan) = plan_signed(store, bundle, expected, opts)?;
    let expected_sha256 = sha.as_str();
    let mut staging = Staging::new(store, expected_sha256);
    staging.signature_checked = plan.looked_ahead;
    let outcome = verify::check_bundle(bundle, expected_sha256, &trusted, &mut staging, progress)
        .and_then(|o| staging.settle().map(|()| o));
    match outcome {
        Err(e) => {
            staging.remove();
            Err(e)
        }
        Ok(Outcome::Stopped {
            manifest_sha256, ..
        }) => {
            staging.remove();
            Ok(ImportOutcome::AlreadyHeld {
                manifest_sha256,
                bundles_held: store.bundle_ids()?.len(),
            })
        }
        Ok(Outcome::Verified(v)) => {
            // Under the lock, so no other import slips in between.
            if let Err(e) = claims::check(store, &v.manifest_sha256, &v.manifest, &v.signed) {
                staging.remove();
                return Err(e.into());
            }
            let (blobs_added, bytes_added) = match commit(store, &staging, &v, &plan) {
                Ok(n) => n,
                Err(e) => {
                    staging.remove();
                    return Err(ImportError::Commit(e));
                }
            };
            staging.remove();
            Ok(ImportOutcome::Imported(Box::new(ImportReport {
                manifest_sha256: v.manifest_sha256,
                manifest: v.manifest,
                format: v.format,
                signatures: v.signatures,
                blobs_hashed: v.blobs_hashed,
                bytes_hashed: v.bytes_hashed,
                blobs_at_hand: v.blobs_at_hand,
                bytes_at_hand: v.bytes_at_hand,
                blobs_added,
                bytes_added,
                bundles_held: store.bundle_ids()?.len(),
                signed_by: plan.signed_by,
                step: plan.step,
                notes: plan.notes,
            })))
        }
    }
}

/// Step 4: renames the staged blobs into `blobs/`, syncs, numbers the
/// bundle in the import order (see [`crate::state`]), then publishes the
/// manifest. On failure takes back all of it: the blobs and folders it
/// added to `blobs/` and the import order as it was.
fn commit(
    store: &Store,
    staging: &Staging<'_>,
    v: &verify::Verified,
    plan: &SignedPlan,
) -> Result<(usize, u64), StoreError> {
    if staging.dir.exists() {
        fsutil::fsync_dir(&staging.dir)?;
    }
    let before = ImportOrder::load(store)?;
    let state_existed = state::path(store).exists();
    let state_dir_existed = store.state_dir().exists();
    let mut added: Vec<PathBuf> = Vec::new();
    let mut made_dirs: Vec<PathBuf> = Vec::new();
    let mut state_written = false;
    let series_before = Series::load(store)?;
    let series_existed = store.state_dir().join("series.json").exists();
    let mut series_written = false;
    let mut signature_added: Option<PathBuf> = None;
    let mut bytes = 0u64;
    let result = (|| {
        let mut dirs = std::collections::BTreeSet::new();
        for (sha, size) in v.manifest.blobs() {
            let staged = staging.staged_path(&sha);
            if store.has_blob(&sha, size) {
                let _ = std::fs::remove_file(&staged);
                continue;
            }
            let dest = store
                .blob_path(&sha)
                .ok_or_else(|| StoreError::io(&staged, std::io::ErrorKind::InvalidInput.into()))?;
            let parent = dest.parent().unwrap_or(store.root()).to_path_buf();
            if !parent.exists() {
                std::fs::create_dir_all(&parent).map_err(|e| StoreError::io(&parent, e))?;
                made_dirs.push(parent.clone());
            }
            let existed = dest.exists();
            std::fs::rename(&staged, &dest).map_err(|e| StoreError::io(&dest, e))?;
            if !existed {
                added.push(dest);
            }
            bytes += size;
            dirs.insert(parent);
        }
        for d in &dirs {
            fsutil::fsync_dir(d)?;
        }
        fsutil::fsync_dir(&store.blobs_dir())?;
        let dest = store.bundle_path(&v.manifest_sha256).ok_or_else(|| {
            StoreError::io(store.bundles_dir(), std::io::ErrorKind::InvalidInput.into())
        })?;
        // Numbered before it is visible, so no held bundle lacks a number.
        let mut order = before.clone();
        order.record(store, &v.manifest_sha256, dest.exists())?;
        if order != before {
            state_written = true;
            state::save(store, &order)?;
        }
        // The signature and the series, before the manifest too.
        if let Some(sig) = &plan.signature {
            let to = store
                .bundles_dir()
                .join(series::signature_file_name(&v.manifest_sha256));
            let existed = to.exists();
            let tmp = staging.dir.join("manifest.json.minisig");
            std::fs::create_dir_all(&staging.dir).map_err(|e| StoreError::io(&staging.dir, e))?;
            fsutil::write_durable(&tmp, sig)?;
            std::fs::rename(&tmp, &to).map_err(|e| StoreError::io(&to, e))?;
            if !existed {
                signature_added = Some(to);
            }
        }
        if let Some(s) = &plan.series {
            series_written = true;
            s.save(store)?;
        }
        // The manifest last: this is what makes the bundle visible.
        let tmp = staging.dir.join("manifest.json");
        std::fs::create_dir_all(&staging.dir).map_err(|e| StoreError::io(&staging.dir, e))?;
        fsutil::write_durable(&tmp, &v.manifest_bytes)?;
        std::fs::rename(&tmp, &dest).map_err(|e| StoreError::io(&dest, e))?;
        fsutil::fsync_dir(&store.bundles_dir())?;
        Ok(())
    })();
    match result {
        Ok(()) => Ok((added.len(), bytes)),
        Err(e) => {
            for p in added.iter().chain(&signature_added) {
                let _ = std::fs::remove_file(p);
            }
            if series_written {
                let _ = if series_existed {
                    series_before.save(store)
                } else {
                    std::fs::remove_file(store.state_dir().join("series.json"))
                        .map_err(|e| StoreError::io(store.state_dir(), e))
                };
            }
            for d in &made_dirs {
                let _ = std::fs::remove_dir(d);
            }
            if state_written {
                let _ = if state_existed {
                    state::save(store, &before)
                } else {
                    std::fs::remove_file(state::path(store))
                        .map_err(|e| StoreError::io(state::path(store), e))
                };
                if !state_dir_existed {
                    let _ = std::fs::remove_dir(store.state_dir());
                }
            }
            Err(e)
        }
    }
}

/// The import's private staging folder, and its view of what is at hand.
struct Staging<'a> {
    store: &'a Store,
    dir: PathBuf,
    expected: String,
    /// Blobs whose bytes are all written, waiting for their hash verdict.
    written: Arc<Mutex<HashMap<String, File>>>,
    /// Syncs verified blobs and gives them their final staged name, in the
    /// background, so the next blob streams while the disk catches up.
    syncer: Option<Syncer>,
    /// Whether the bundle's signature, if any, was checked up front.
    signature_checked: bool,
}

/// A background thread that fsyncs verified staged blobs, then renames
/// them from `<sha>.part` to `<sha>`.
struct Syncer {
    jobs: std::sync::mpsc::Sender<(File, PathBuf, PathBuf)>,
    thread: std::thread::JoinHandle<Result<(), ImportError>>,
}

impl Syncer {
    fn start() -> Self {
        let (jobs, rx) = std::sync::mpsc::channel::<(File, PathBuf, PathBuf)>();
        let thread = std::thread::spawn(move || {
            let mut result = Ok(());
            for (file, part, staged) in rx {
                if result.is_err() {
                    continue;
                }
                result = file
                    .sync_all()
                    .and_then(|()| std::fs::rename(&part, &staged))
                    .map_err(|source| ImportError::Stage { path: part, source });
            }
            result
        });
        Self { jobs, thread }
    }
}

impl<'a> Staging<'a> {
    fn new(store: &'a Store, expected_sha256: &str) -> Self {
        // The expected hash is only used once checked to be 64 hex digits
        // (otherwise no manifest can match it and nothing is staged).
        let safe = llmgw_shared::names::is_sha256_hex(expected_sha256);
        let dir = store.tmp_dir().join(format!(
            "import-{}",
            if safe { expected_sha256 } else { "invalid" }
        ));
        Self {
            store,
            dir,
            expected: expected_sha256.to_string(),
            signature_checked: true,
            written: Arc::default(),
            syncer: None,
        }
    }

    /// Waits until every verified blob is synced under its staged name,
    /// and reports the first failure.
    fn settle(&mut self) -> Result<(), ImportError> {
        if let Ok(mut w) = self.written.lock() {
            w.clear();
        }
        match self.syncer.take() {
            None => Ok(()),
            Some(Syncer { jobs, thread }) => {
                drop(jobs);
                thread.join().unwrap_or(Err(ImportError::SyncerPanicked))
            }
        }
    }

    fn staged_path(&self, sha: &str) -> PathBuf {
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

impl Target for Staging<'_> {
    type Error = ImportError;

    fn signature_checked(&self) -> bool {
        self.signature_checked
    }
    fn have(&self, sha256: &str, size: u64) -> bool {
        self.store.has_blob(sha256, size)
            || std::fs::metadata(self.staged_path(sha256)).is_ok_and(|m| m.len() == size)
    }

    fn read_have(&self, sha256: &str) -> Result<Vec<u8>, ImportError> {
        let staged = self.staged_path(sha256);
        let path = if staged.exists() {
            staged
        } else {
            self.store
                .blob_path(sha256)
                .ok_or_else(|| ImportError::NotSha256 {
                    sha256: sha256.to_string(),
                })?
        };
        std::fs::read(&path).map_err(|source| ImportError::Stage { path, source })
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
        crate::have::check_prerequisites(self.store, &self.expected, manifest, |sha, size| {
            self.have(sha, size)
        })
        .map_err(ImportError::Prerequisites)?;
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
}

/// Start writing dirty pages back this often, so the final fsync waits for
/// little and a big blob never piles up gigabytes of dirty memory.
const WRITEBACK_EVERY: u64 = 32 << 20;

impl StagedFile {
    fn start_writeback(file: &File) {
        use std::os::unix::io::AsRawFd;
        // SAFETY: a hint on a descriptor we own; it changes no data.
        unsafe {
            libc::sync_file_range(file.as_raw_fd(), 0, 0, libc::SYNC_FILE_RANGE_WRITE);
        }
    }
}

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
        self.unflushed += buf.len() as u64;
        if self.unflushed >= WRITEBACK_EVERY {
            Self::start_writeback(file);
            self.unflushed = 0;
        }
        Ok(())
    }

    fn finish(mut self: Box<Self>) -> Result<(), ImportError> {
        use std::os::unix::fs::PermissionsExt;
        let Some(file) = self.file.take() else {
            return Ok(());
        };
        // Read-only once written; the sync comes once the hash is known
        // to match (see Staging::keep).
        file.set_permissions(std::fs::Permissions::from_mode(0o444))
            .map_err(|source| ImportError::Stage {
                path: self.path.clone(),
                source,
            })?;
        Self::start_writeback(&file);
        if let Ok(mut w) = self.written.lock() {
            w.insert(self.sha256.clone(), file);
        }
        Ok(())
    }
}
