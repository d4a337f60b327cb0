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
use std::path::{Path, PathBuf};

use llmgw_shared::shown_message;
use serde::{Deserialize, Serialize};
use sha2::Sha256;
use sha2::digest::common::hazmat::{SerializableState, SerializedState};
use thiserror::Error;

use super::index::VolumeIndex;

/// The state file's name in the staging folder.
pub const STATE_NAME: &str = "volumes.json";

/// What earlier runs verified.
#[derive(Debug, Clone, Default, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct VolState {
    pub manifest_sha256: String,
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

/// A state file that cannot be taken.
#[derive(Debug, Error)]
#[error(
    "{}: {reason}; this file records what earlier runs of an import of volumes verified, and \
     only `llmgw bundle import` writes it: remove the folder {} and import the volumes again",
    path.display(),
    dir.display()
)]
pub struct StateError {
    pub path: PathBuf,
    pub dir: PathBuf,
    pub reason: String,
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
pub fn load(dir: &Path, sha: &str, index: &VolumeIndex) -> Result<VolState, StateError> {
    let path = dir.join(STATE_NAME);
    let refuse = |reason: String| StateError {
        path: path.clone(),
        dir: dir.to_path_buf(),
        reason,
    };
    let file = match std::fs::File::open(&path) {
        Ok(f) => f,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => {
            return Ok(VolState {
                manifest_sha256: sha.to_string(),
                ..VolState::default()
            });
        }
        Err(e) => return Err(refuse(format!("cannot be opened ({e})"))),
    };
    let max = max_bytes(index);
    let mut bytes = Vec::new();
    file.take(max + 1)
        .read_to_end(&mut bytes)
        .map_err(|e| refuse(format!("cannot be read ({e})")))?;
    if bytes.len() as u64 > max {
        return Err(refuse(format!(
            "it is over {max} bytes, more than a state of this bundle ever takes"
        )));
    }
    let state: VolState = serde_json::from_slice(&bytes).map_err(|e| {
        refuse(format!(
            "it is not a state of an import of volumes ({})",
            shown_message(&e.to_string())
        ))
    })?;
    check(&state, sha, index).map_err(refuse)?;
    Ok(state)
}

/// Whether everything the state names is in this bundle's manifest.
fn check(s: &VolState, sha: &str, index: &VolumeIndex) -> Result<(), String> {
    if s.manifest_sha256 != sha {
        return Err(format!(
            "it records bundle {}, but its folder is bundle {sha}'s",
            shown_message(&s.manifest_sha256)
        ));
    }
    if let Some(v) = s.whole.iter().find(|v| **v == 0 || **v > index.count()) {
        return Err(format!(
            "it names data volume {v}; the bundle has volumes 1 to {}",
            index.count()
        ));
    }
    if let Some(j) = s.whole_parity.iter().find(|j| **j >= index.parity_count()) {
        return Err(format!(
            "it names parity volume {}; the bundle has {}",
            j + 1,
            index.parity_count()
        ));
    }
    let placements = &index.volumes.placements;
    for &(p, i) in &s.verified {
        let chunks = placements.get(p).map_or(0, |pl| pl.pieces.len());
        if chunks < 2 || i >= chunks {
            return Err(format!(
                "it names chunk {i} of file {p}, which the manifest does not cut that way"
            ));
        }
    }
    for (&p, r) in &s.running {
        let chunks = placements.get(p).map_or(0, |pl| pl.pieces.len());
        if chunks < 2 || r.next == 0 || r.next > chunks {
            return Err(format!(
                "it carries a hash of file {p} up to chunk {}, which the manifest does not cut \
                 that way",
                r.next
            ));
        }
        if let Some(i) = (0..r.next).find(|i| !s.verified.contains(&(p, *i))) {
            return Err(format!(
                "it carries a hash of file {p} over chunk {i}, which it does not list as verified"
            ));
        }
        if r.hasher().is_none() {
            return Err(format!(
                "its hash of file {p} is not a sha256 state ({})",
                shown_message(&r.state)
            ));
        }
    }
    Ok(())
}
