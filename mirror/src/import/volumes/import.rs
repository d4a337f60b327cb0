//! `llmgw bundle import VOLUME…`: any subset of a bundle's volumes, in any
//! order, over as many runs as it takes; the bundle is published — by the
//! same atomic commit as a plain import — once every blob is there.
//!
//! Invariant: nothing of the bundle is visible in the store before every
//! blob it carries was verified whole; until then everything lives in its
//! staging folder ([`super::stage`]). Each run ends saying what is still
//! missing, and names every volume it could not take (another bundle's,
//! damaged, or one already taken in).

use super::total_len;
use std::collections::BTreeSet;
use std::path::{Path, PathBuf};

use llmgw_shared::manifest::Manifest;
use llmgw_shared::{BundleId, Sha256};
use serde::Serialize;

use super::index::{Slot, VolumeIndex, Which};
use super::read::{self, SlotTarget as _, VolumeError, VolumeRead};
use super::stage::{HEAD_NAME, Stage};
use crate::import::{self, ImportError, ImportOptions, ImportOutcome};
use crate::store::Store;
use crate::store::fsutil::{self, StoreLock};
use llmgw_shared::progress::Progress;

/// Verified bytes between two saves of the state.
const SAVE_EVERY: u64 = 1 << 30;

/// What one volume given to this run came to.
#[derive(Debug)]
pub struct Taken {
    pub path: PathBuf,
    pub result: Result<VolumeRead, VolumeError>,
}

/// A file of the bundle not yet whole in staging.
#[derive(Debug, Clone, Serialize)]
pub struct Incomplete {
    /// Its name in the manifest.
    pub name: String,
    /// What it must hash to.
    pub sha256: Sha256,
    /// The bytes still to come from the volumes.
    pub bytes_missing: u64,
}

/// Where a bundle's volumes stand after a run.
#[derive(Debug)]
pub struct Progressed {
    /// The bundle's identity: the sha256 of its `manifest.json`.
    pub manifest_sha256: BundleId,
    /// Its manifest, whose `volumes` say where every piece goes.
    pub manifest: Manifest,
    /// Data volumes in the set.
    pub count: u32,
    /// Parity volumes in the set.
    pub parity_count: usize,
    /// Each volume given to this run, and what came of it.
    pub taken: Vec<Taken>,
    /// Volumes offered again although already taken in.
    pub repeated: Vec<Which>,
    /// Data volumes whose every piece is verified.
    pub whole: BTreeSet<u32>,
    /// Parity volumes (numbered from 0) whose shard is staged.
    pub whole_parity: BTreeSet<usize>,
    /// Blobs not yet whole, and how much of each is missing.
    pub incomplete: Vec<Incomplete>,
    /// The bytes still missing over all of them.
    pub bytes_needed: u64,
    /// Data volumes rebuilt from parity in this run.
    pub rebuilt: Vec<u32>,
}

impl Progressed {
    fn lacking(&self) -> (Vec<u32>, Vec<usize>) {
        super::lacking(
            self.count,
            &self.whole,
            self.parity_count,
            &self.whole_parity,
        )
    }

    /// Data volumes (numbered from 1) not yet whole: what to bring next.
    pub fn missing(&self) -> Vec<u32> {
        self.lacking().0
    }

    /// Parity volumes (numbered from 0) not yet whole.
    pub fn missing_parity(&self) -> Vec<usize> {
        self.lacking().1
    }

    /// Whether a volume given was refused or came damaged.
    pub fn refused_any(&self) -> bool {
        self.taken
            .iter()
            .any(|t| t.result.as_ref().map_or(true, |r| !r.skipped && !r.whole()))
    }
}

/// How a run ended.
#[derive(Debug)]
pub enum VolumesOutcome {
    /// Every blob was there: the bundle was imported (or was held).
    Published {
        /// Where the volumes stood when the last blob was staged.
        progress: Box<Progressed>,
        /// What the import of the staged bundle did.
        outcome: ImportOutcome,
    },
    /// Accepted so far; more volumes are needed.
    Incomplete(Box<Progressed>),
}

/// Takes in the volumes at `paths` for the bundle `expected` (or, without
/// it, the bundle a trusted key signed).
pub fn import_volumes(
    store: &Store,
    paths: &[PathBuf],
    expected: Option<&BundleId>,
    opts: &ImportOptions,
    progress: &dyn Progress,
) -> Result<VolumesOutcome, ImportError> {
    store.create_dirs()?;
    let lock = StoreLock::acquire(&store.lock_path(), "the import")?;
    import::sweep_leftovers(store, &lock);
    let first = paths.first().ok_or(ImportError::NoVolume)?;
    // The signature (and series, expiry) is checked before anything is staged.
    let (digest, _plan) = import::plan_signed(store, first, expected, opts)?;
    let sha = digest.clone();
    let staging_dir = store.tmp_dir().join(format!("import-{sha}"));
    let head_path = staging_dir.join(HEAD_NAME);
    let (manifest, index) = match super::verify::manifest_of(paths, &sha) {
        Ok(m) => m,
        Err(e) => match super::verify::manifest_of(std::slice::from_ref(&head_path), &sha) {
            Ok(m) => m,
            Err(_) => return Err(ImportError::VolumeSet(e)),
        },
    };
    // A delta's prerequisites, before any volume is staged.
    crate::store::have::check_prerequisites(store, &sha, &manifest, |h, size| {
        store.has_blob(h, size)
    })
    .map_err(ImportError::Prerequisites)?;
    if !head_path.exists() {
        save_head(&staging_dir, &head_path, paths, &sha)?;
    }
    let mut stage = Stage::open(store, &sha, &index)?;
    check_space(&stage, paths)?;
    progress.begin(None, total_len(paths));
    let taken = take_volumes(&mut stage, paths, &sha, &index, progress)?;
    progress.finish();
    // What the volumes brought is synced, named and recorded first: parity
    // then sees every piece verified, and a rebuild cut short loses none.
    stage.save()?;
    let rebuilt = super::rebuild::rebuild(&mut stage)?;
    stage_whole_blobs(&mut stage, &index)?;
    stage.save()?;
    let report = progressed(&stage, &manifest, &sha, taken, rebuilt);
    let all_there = index
        .volumes
        .placements
        .iter()
        .enumerate()
        .all(|(p, _)| stage.blob_done(p));
    if !all_there {
        return Ok(VolumesOutcome::Incomplete(Box::new(report)));
    }
    // Nothing an earlier run staged is published on its word.
    let checked = super::recheck::blobs(stage.index, &stage.dir, &mut stage.state, &stage.earlier);
    if let Err(e) = checked {
        stage.save()?;
        return Err(e.into());
    }
    // The existing import publishes it: it finds every blob staged.
    drop(lock);
    let outcome = import::import_with(store, &head_path, Some(&digest), opts, progress)?;
    Ok(VolumesOutcome::Published {
        progress: Box::new(report),
        outcome,
    })
}

/// Reads each volume given into `stage`, saving the state as it goes;
/// answers what each came to. A failure of the staging itself stops the
/// run (what was verified saved first).
fn take_volumes(
    stage: &mut Stage<'_>,
    paths: &[PathBuf],
    sha: &str,
    index: &VolumeIndex,
    progress: &dyn Progress,
) -> Result<Vec<Taken>, ImportError> {
    let mut taken = Vec::new();
    for p in paths {
        let result = read::read_volume(p, sha, index, stage, progress);
        if let Ok(r) = &result
            && r.whole()
            && !r.skipped
        {
            match r.which {
                Some(Which::Data(v)) => {
                    stage.state.whole.insert(v);
                }
                Some(Which::Parity(j)) => {
                    stage.state.whole_parity.insert(j);
                }
                None => {}
            }
        }
        // The state is saved (what it names synced first) at least every
        // GiB verified and at the end of the run: a run killed between
        // saves reads those volumes again, nothing worse.
        let result = match result {
            Err(VolumeError::Stage(e)) => {
                stage.save()?;
                return Err(ImportError::VolumeStage(e));
            }
            r => r,
        };
        if stage.since_save >= SAVE_EVERY {
            stage.save()?;
        }
        taken.push(Taken {
            path: p.clone(),
            result,
        });
    }
    Ok(taken)
}

/// Stages each blob whose pieces are all verified: a chunked one hashed
/// whole, an empty one written as it is.
fn stage_whole_blobs(stage: &mut Stage<'_>, index: &VolumeIndex) -> Result<(), ImportError> {
    for (p, pl) in index.volumes.placements.iter().enumerate() {
        if pl.pieces.len() > 1
            && !stage.blob_done(p)
            && (0..pl.pieces.len()).all(|i| stage.state.verified.contains(&(p, i)))
            && let Err(e) = stage.finish_blob(p)
        {
            // What was set aside is recorded before the run stops.
            stage.save()?;
            return Err(e.into());
        }
        if pl.pieces.is_empty() && !stage.blob_done(p) {
            // An empty file: nothing to carry, staged as it is.
            let to = stage.staged(&pl.sha256);
            fsutil::write_durable(&to, b"")?;
        }
    }
    Ok(())
}

/// Keeps the manifest and signature of the first volume of the bundle
/// as a small tar, the bundle the final publish reads.
fn save_head(dir: &Path, to: &Path, paths: &[PathBuf], sha: &BundleId) -> Result<(), ImportError> {
    for p in paths {
        let Ok(head) = crate::store::series::read_head(p) else {
            continue;
        };
        if head.manifest_sha256 != *sha {
            continue;
        }
        std::fs::create_dir_all(dir).map_err(|e| crate::store::StoreError::io(dir, e))?;
        let mut b = tar::Builder::new(Vec::new());
        let mut entries = vec![(llmgw_shared::manifest::MANIFEST_NAME, head.manifest_bytes)];
        if let Some(sig) = head.signature {
            entries.push((llmgw_shared::manifest::SIGNATURE_NAME, sig));
        }
        for (name, bytes) in entries {
            let mut h = tar::Header::new_gnu();
            h.set_size(bytes.len() as u64);
            h.set_mode(0o644);
            h.set_cksum();
            b.append_data(&mut h, name, &bytes[..])
                .map_err(|e| crate::store::StoreError::io(to, e))?;
        }
        let bytes = b
            .into_inner()
            .map_err(|e| crate::store::StoreError::io(to, e))?;
        let tmp = dir.join(format!("{HEAD_NAME}.tmp"));
        fsutil::write_durable(&tmp, &bytes)?;
        std::fs::rename(&tmp, to).map_err(|e| crate::store::StoreError::io(to, e))?;
        return Ok(());
    }
    Ok(())
}

/// Refuses a run whose volumes cannot be staged: the bytes still missing
/// (at most what the volumes given hold) must fit in the store's tmp/.
fn check_space(stage: &Stage<'_>, paths: &[PathBuf]) -> Result<(), ImportError> {
    let missing: u64 = missing_bytes(stage);
    let given: u64 = paths
        .iter()
        .filter_map(|p| std::fs::metadata(p).ok())
        .map(|m| m.len())
        .sum();
    let needed = missing.min(given);
    let tmp = stage.store.tmp_dir();
    let available = fsutil::free_bytes(&tmp)?;
    if needed > available {
        return Err(ImportError::NoSpace {
            path: tmp,
            needed,
            available,
        });
    }
    Ok(())
}

fn missing_bytes(stage: &Stage<'_>) -> u64 {
    let placements = &stage.index.volumes.placements;
    placements
        .iter()
        .enumerate()
        .filter(|(p, _)| !stage.blob_done(*p))
        .map(|(p, pl)| {
            pl.pieces
                .iter()
                .enumerate()
                .filter(|(i, _)| !stage.state.verified.contains(&(p, *i)))
                .map(|(_, x)| x.size)
                .sum::<u64>()
        })
        .sum()
}

fn progressed(
    stage: &Stage<'_>,
    manifest: &Manifest,
    sha: &BundleId,
    taken: Vec<Taken>,
    rebuilt: Vec<u32>,
) -> Progressed {
    let index: &VolumeIndex = stage.index;
    let names = crate::bundle::verify::blob_names(manifest);
    let whole: BTreeSet<u32> = (1..=index.count())
        .filter(|v| stage.volume_done(*v))
        .collect();
    let whole_parity: BTreeSet<usize> = (0..index.parity_count())
        .filter(|j| stage.have(Slot::Parity(*j)))
        .collect();
    let mut incomplete = Vec::new();
    for (p, pl) in index.volumes.placements.iter().enumerate() {
        if stage.blob_done(p) {
            continue;
        }
        let bytes_missing = pl
            .pieces
            .iter()
            .enumerate()
            .filter(|(i, _)| !stage.state.verified.contains(&(p, *i)))
            .map(|(_, x)| x.size)
            .sum();
        incomplete.push(Incomplete {
            name: names.get(&pl.sha256).cloned().unwrap_or_default(),
            sha256: pl.sha256.clone(),
            bytes_missing,
        });
    }
    Progressed {
        manifest_sha256: sha.clone(),
        manifest: manifest.clone(),
        count: index.count(),
        parity_count: index.parity_count(),
        taken,
        repeated: stage.repeated.clone(),
        whole,
        whole_parity,
        bytes_needed: incomplete.iter().map(|i| i.bytes_missing).sum(),
        incomplete,
        rebuilt,
    }
}
