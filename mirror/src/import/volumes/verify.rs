//! `llmgw bundle verify VOLUME…`: each volume checked on its own, with no
//! store (right after burning a disc, or before carrying a USB disk).
//!
//! Invariant: nothing is written. A volume passes when its manifest is the
//! bundle's (the sha256 given), and every entry is the piece the manifest
//! places there, of its size, hashing to its recorded sha256. Whole blobs
//! cut into chunks are hashed whole again only at import, where the chunks
//! meet.

use super::total_len;
use std::collections::BTreeSet;
use std::fs::File;
use std::path::{Path, PathBuf};

use llmgw_shared::BundleId;
use llmgw_shared::manifest::Manifest;

use super::error::{SetError, StageError, Tried};
use super::index::{Slot, VolumeIndex, Which};
use super::read::{self, SlotTarget, VolumeError, VolumeRead};
use llmgw_shared::progress::Progress;

/// One volume's verdict.
#[derive(Debug)]
pub struct VolumeCheck {
    pub path: PathBuf,
    /// What it read, or why it is not a volume of this bundle.
    pub result: Result<VolumeRead, VolumeError>,
    /// It was given twice (the second is not read).
    pub duplicate: bool,
}

/// Every volume given, and what the set adds up to.
#[derive(Debug)]
pub struct SetCheck {
    /// The bundle's identity, as given and as the manifest hashed to.
    pub manifest_sha256: BundleId,
    /// Its manifest, read from the first volume that carried it.
    pub manifest: Manifest,
    /// One verdict per path given, in the order given.
    pub volumes: Vec<VolumeCheck>,
    /// Data volumes in the set.
    pub count: u32,
    /// Parity volumes in the set.
    pub parity_count: usize,
    /// Data volumes (numbered from 1) given whole: every piece passed.
    pub whole: BTreeSet<u32>,
    /// Parity volumes (numbered from 0) given whole.
    pub whole_parity: BTreeSet<usize>,
}

impl SetCheck {
    /// Data volumes not given whole.
    pub fn missing(&self) -> Vec<u32> {
        super::lacking(
            self.count,
            &self.whole,
            self.parity_count,
            &self.whole_parity,
        )
        .0
    }

    /// Whether every given volume passed.
    pub fn all_passed(&self) -> bool {
        self.volumes
            .iter()
            .all(|v| v.duplicate || v.result.as_ref().is_ok_and(VolumeRead::whole))
    }

    /// Whether the volumes given are enough to import the bundle.
    pub fn importable(&self) -> bool {
        self.missing().len() <= self.whole_parity.len()
    }
}

/// Hashes and forgets; skips a volume already read whole.
struct HashOnly {
    whole: BTreeSet<Which>,
}

impl SlotTarget for HashOnly {
    fn start(&mut self, which: Which) -> bool {
        !self.whole.contains(&which)
    }
    fn begin(&mut self, _: Slot) -> Result<Option<(File, u64)>, StageError> {
        Ok(None)
    }
    fn have(&self, _: Slot) -> bool {
        false
    }
    fn verified(&mut self, _: Slot, _: Option<File>) -> Result<(), StageError> {
        Ok(())
    }
}

/// Reads the manifest of the first volume that has the expected one.
pub fn manifest_of(
    paths: &[PathBuf],
    expected: &BundleId,
) -> Result<(Manifest, VolumeIndex), SetError> {
    let mut tried = Vec::new();
    for p in paths {
        match crate::store::series::read_head(p) {
            Ok(h) if h.manifest_sha256 == *expected => {
                let m = Manifest::from_json_bytes(&h.manifest_bytes).map_err(|source| {
                    SetError::Manifest {
                        path: p.clone(),
                        source,
                    }
                })?;
                let Some(index) = VolumeIndex::of(&m) else {
                    return Err(SetError::NotASet {
                        expected: expected.to_string(),
                        path: p.clone(),
                    });
                };
                return Ok((m, index));
            }
            Ok(h) => tried.push(Tried::Other {
                path: p.clone(),
                sha256: h.manifest_sha256.to_string(),
            }),
            Err(error) => tried.push(Tried::Unreadable {
                path: p.clone(),
                error,
            }),
        }
    }
    Err(SetError::NoManifest {
        expected: expected.to_string(),
        tried,
    })
}

/// Checks each volume at `paths` against the bundle `expected`.
pub fn verify_volumes(
    paths: &[PathBuf],
    expected: &BundleId,
    progress: &dyn Progress,
) -> Result<SetCheck, SetError> {
    let (manifest, index) = manifest_of(paths, expected)?;
    let mut target = HashOnly {
        whole: BTreeSet::new(),
    };
    progress.begin(None, total_len(paths));
    let mut out = SetCheck {
        manifest_sha256: expected.clone(),
        manifest,
        volumes: Vec::new(),
        count: index.count(),
        parity_count: index.parity_count(),
        whole: BTreeSet::new(),
        whole_parity: BTreeSet::new(),
    };
    for p in paths {
        let result = read::read_volume(p, expected, &index, &mut target, progress);
        let duplicate = matches!(&result, Ok(r) if r.skipped);
        if let Ok(r) = &result
            && r.whole()
            && !r.skipped
        {
            target.whole.extend(r.which);
            match r.which {
                Some(Which::Data(v)) => {
                    out.whole.insert(v);
                }
                Some(Which::Parity(j)) => {
                    out.whole_parity.insert(j);
                }
                None => {}
            }
        }
        out.volumes.push(VolumeCheck {
            path: p.clone(),
            result,
            duplicate,
        });
    }
    progress.finish();
    Ok(out)
}

/// A line per volume for the operator.
pub fn describe(index_count: u32, c: &VolumeCheck, names: &dyn Fn(Slot) -> String) -> String {
    describe_read(index_count, &c.path, &c.result, c.duplicate, names)
}

/// A line for one volume read.
pub fn describe_read(
    index_count: u32,
    path: &Path,
    result: &Result<VolumeRead, VolumeError>,
    duplicate: bool,
    names: &dyn Fn(Slot) -> String,
) -> String {
    let path = path.display();
    match result {
        Err(e) => format!("{path}: REFUSED: {}", llmgw_shared::chain(e)),
        Ok(r) if duplicate => format!(
            "{path}: {} given twice: read once",
            r.which.map_or("the volume".into(), |w| w.label())
        ),
        Ok(r) => {
            let what = match r.which {
                Some(Which::Data(v)) => format!("volume {v} of {index_count}"),
                Some(w) => w.label(),
                None => "an unidentified volume".into(),
            };
            if r.whole() {
                return format!(
                    "{path}: {what}: ok ({} entries hashed and matched)",
                    r.ok.len()
                );
            }
            let mut parts = Vec::new();
            for (s, why) in &r.damaged {
                parts.push(format!("damaged {}: {why}", names(*s)));
            }
            if !r.missing.is_empty() {
                parts.push(format!(
                    "{} entries missing ({}{})",
                    r.missing.len(),
                    r.missing
                        .iter()
                        .take(3)
                        .map(|s| names(*s))
                        .collect::<Vec<_>>()
                        .join(", "),
                    if r.missing.len() > 3 { ", …" } else { "" }
                ));
            }
            if let Some(b) = &r.broken {
                parts.push(format!("stopped: {b}"));
            }
            format!("{path}: {what}: DAMAGED: {}", parts.join("; "))
        }
    }
}

/// Whether the paths are volumes of a set: several files, or one regular
/// file whose manifest has `volumes` (a pipe is never peeked at: it can be
/// read once).
pub fn is_volume_set(paths: &[PathBuf]) -> bool {
    paths.len() > 1
        || paths.first().is_some_and(|p| {
            std::fs::metadata(p).is_ok_and(|m| m.is_file())
                && crate::store::series::read_head(Path::new(p))
                    .ok()
                    .and_then(|h| Manifest::from_json_bytes(&h.manifest_bytes).ok())
                    .is_some_and(|m| m.volumes.is_some())
        })
}
