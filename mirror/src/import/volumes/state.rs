//! `volumes.json`: what earlier runs of an import of volumes verified, kept
//! in its staging folder between runs.
//!
//! Invariant: a state file is taken only when it is at most
//! [`max_bytes`] long (a bound from the bundle's own piece count), parses,
//! names this bundle, and names only volumes, parity shards and chunks its
//! manifest has. Anything else is refused with the file's name, what is
//! wrong, and how to start over — never dropped silently, never trusted
//! past the manifest's bounds, never a panic.

use std::collections::{BTreeMap, BTreeSet};
use std::io::Read;
use std::path::Path;

use llmgw_shared::BundleId;
use serde::{Deserialize, Serialize};
use sha2::Sha256;
use sha2::digest::common::hazmat::{SerializableState, SerializedState};

use super::error::{StateError, StateProblem};
use super::index::VolumeIndex;

/// The state file's name in the staging folder.
pub use crate::store::layout::VOLUME_STATE as STATE_NAME;

/// What earlier runs verified.
#[derive(Debug, Clone, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct VolState {
    pub manifest_sha256: BundleId,
    /// Data volumes read whole.
    pub whole: BTreeSet<u32>,
    /// Parity volumes read whole (0-based).
    pub whole_parity: BTreeSet<usize>,
    /// Chunks verified and synced: (placement, piece).
    pub verified: BTreeSet<(usize, usize)>,
    /// Per chunked blob (placement) whose first chunks came in order: its
    /// hash over them, so a later run goes on hashing the chunks that come
    /// next instead of reading the whole blob again.
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub running: BTreeMap<usize, Resume>,
}

/// A blob's sha256 over its first `next` chunks, all of them verified.
#[derive(Debug, Clone, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Resume {
    pub next: usize,
    /// The hash state (sha2's serialized state), in hex.
    pub state: String,
}

impl Resume {
    pub fn of(next: usize, h: &Sha256) -> Self {
        Self {
            next,
            state: hex::encode(h.serialize()),
        }
    }

    /// The hash state, when it is one.
    pub fn hasher(&self) -> Option<Sha256> {
        let bytes = hex::decode(&self.state).ok()?;
        let state = SerializedState::<Sha256>::try_from(bytes.as_slice()).ok()?;
        Sha256::deserialize(&state).ok()
    }
}

/// The most bytes a state file of this bundle can take: every piece,
/// volume and parity shard named, with room to spare.
pub fn max_bytes(index: &VolumeIndex) -> u64 {
    let pieces: u64 = index
        .volumes
        .placements
        .iter()
        .map(|p| p.pieces.len() as u64)
        .sum();
    let volumes = u64::from(index.count()) + index.parity_count() as u64;
    let chunked = index
        .volumes
        .placements
        .iter()
        .filter(|p| p.pieces.len() > 1)
        .count() as u64;
    4096 + 48 * pieces + 24 * volumes + 320 * chunked
}

/// The state in the staging folder `dir` of bundle `sha`: a fresh one when
/// there is none yet.
pub fn load(dir: &Path, sha: &BundleId, index: &VolumeIndex) -> Result<VolState, StateError> {
    let path = dir.join(STATE_NAME);
    let refuse = |problem: StateProblem| StateError {
        path: path.clone(),
        dir: dir.to_path_buf(),
        problem,
    };
    let file = match std::fs::File::open(&path) {
        Ok(f) => f,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => {
            return Ok(VolState {
                manifest_sha256: sha.clone(),
                whole: BTreeSet::new(),
                whole_parity: BTreeSet::new(),
                verified: BTreeSet::new(),
                running: BTreeMap::new(),
            });
        }
        Err(e) => return Err(refuse(StateProblem::Open(e))),
    };
    let max = max_bytes(index);
    let mut bytes = Vec::new();
    file.take(max + 1)
        .read_to_end(&mut bytes)
        .map_err(|e| refuse(StateProblem::Read(e)))?;
    if bytes.len() as u64 > max {
        return Err(refuse(StateProblem::TooLarge { max }));
    }
    let state: VolState =
        serde_json::from_slice(&bytes).map_err(|e| refuse(StateProblem::Parse(e)))?;
    check(&state, sha, index).map_err(refuse)?;
    Ok(state)
}

/// Whether everything the state names is in this bundle's manifest.
fn check(s: &VolState, sha: &BundleId, index: &VolumeIndex) -> Result<(), StateProblem> {
    if s.manifest_sha256 != *sha {
        return Err(StateProblem::OtherBundle {
            recorded: s.manifest_sha256.to_string(),
            folder: sha.to_string(),
        });
    }
    if let Some(v) = s.whole.iter().find(|v| **v == 0 || **v > index.count()) {
        return Err(StateProblem::NoSuchVolume {
            volume: *v,
            count: index.count(),
        });
    }
    if let Some(j) = s.whole_parity.iter().find(|j| **j >= index.parity_count()) {
        return Err(StateProblem::NoSuchParity {
            shard: j + 1,
            count: index.parity_count(),
        });
    }
    let placements = &index.volumes.placements;
    for &(p, i) in &s.verified {
        let chunks = placements.get(p).map_or(0, |pl| pl.pieces.len());
        if chunks < 2 || i >= chunks {
            return Err(StateProblem::NoSuchChunk {
                placement: p,
                piece: i,
            });
        }
    }
    for (&p, r) in &s.running {
        let chunks = placements.get(p).map_or(0, |pl| pl.pieces.len());
        if chunks < 2 || r.next == 0 || r.next > chunks {
            return Err(StateProblem::RunningPast {
                placement: p,
                next: r.next,
            });
        }
        if let Some(i) = (0..r.next).find(|i| !s.verified.contains(&(p, *i))) {
            return Err(StateProblem::RunningUnverified {
                placement: p,
                piece: i,
            });
        }
        if r.hasher().is_none() {
            return Err(StateProblem::NotAHashState {
                placement: p,
                state: r.state.clone(),
            });
        }
    }
    Ok(())
}
