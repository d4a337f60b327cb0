//! What an earlier run staged is hashed again before it is published.
//!
//! Runs of a volume import may be days apart (two couriers), and the
//! staging folder, `STORE/tmp/import-<sha>/`, is an ordinary folder in
//! between: bit rot or a stray process may change a byte there. So a run
//! never takes an earlier run's word for bytes on disk: before anything is
//! published, every blob staged whole by an earlier run, and every chunk an
//! earlier run verified of a blob completed now, is read and hashed again
//! (one read; the runs are days apart).
//!
//! Invariant: a staged blob or chunk that no longer hashes to its digest is
//! set aside — its file removed or its chunk forgotten, with the volume it
//! came in no longer counted whole, saved in `volumes.json` — and the run
//! refuses to publish with [`StageError::ChangedSinceChecked`], naming the
//! file, that it changed since it was checked, and the volume to read again.

use std::collections::BTreeSet;
use std::path::Path;

use super::error::StageError;
use super::index::VolumeIndex;
use super::rehash::{hash_file, hash_range};
use super::state::VolState;

/// What was verified before this run began: the pieces `volumes.json`
/// names, and the blobs already staged under their name.
#[derive(Debug, Clone, Default)]
pub struct Earlier {
    /// (placement, piece) verified by an earlier run.
    pub pieces: BTreeSet<(usize, usize)>,
    /// Placements staged whole (`<sha>` in staging) by an earlier run.
    pub blobs: BTreeSet<usize>,
}

impl Earlier {
    /// Whether any piece of `placement` was verified by an earlier run.
    pub fn has_piece_of(&self, placement: usize) -> bool {
        self.pieces
            .range((placement, 0)..=(placement, usize::MAX))
            .next()
            .is_some()
    }
}

/// Hashes again every chunk of `placement` an earlier run verified, in its
/// `.part`; a chunk that no longer matches is forgotten (and its volume is
/// no longer whole) and named in the error. `Ok` when all still match.
pub fn chunks(
    index: &VolumeIndex,
    dir: &Path,
    state: &mut VolState,
    earlier: &Earlier,
    placement: usize,
) -> Result<(), StageError> {
    let p = &index.volumes.placements[placement];
    let part = dir.join(format!("{}.part", p.sha256));
    let mut changed = Vec::new();
    for (i, piece) in p.pieces.iter().enumerate() {
        if !earlier.pieces.contains(&(placement, i)) {
            continue;
        }
        let got = hash_range(&part, piece.offset, piece.size).unwrap_or_default();
        if got != piece.sha256.as_str() {
            state.verified.remove(&(placement, i));
            state.whole.remove(&piece.volume);
            changed.push((i, piece.volume, piece.sha256.to_string(), got));
        }
    }
    let Some((i, _, expected, got)) = changed.first().cloned() else {
        return Ok(());
    };
    Err(StageError::ChangedSinceChecked {
        path: part,
        what: format!("chunk {} of blob {}", i + 1, p.sha256),
        expected,
        got: if got.is_empty() {
            "unreadable".into()
        } else {
            got
        },
        volumes: volumes(changed.iter().map(|c| c.1)),
    })
}

/// Hashes again every blob an earlier run staged whole; the first that no
/// longer matches is removed from staging, its pieces forgotten and its
/// volumes no longer whole, and named in the error.
pub fn blobs(
    index: &VolumeIndex,
    dir: &Path,
    state: &mut VolState,
    earlier: &Earlier,
) -> Result<(), StageError> {
    for &placement in &earlier.blobs {
        let p = &index.volumes.placements[placement];
        let staged = dir.join(p.sha256.as_str());
        if !staged.exists() {
            // Published by an earlier import: the store checked it then.
            continue;
        }
        let got = hash_file(&staged).unwrap_or_default();
        if got == p.sha256.as_str() {
            continue;
        }
        let _ = std::fs::remove_file(&staged);
        for (i, piece) in p.pieces.iter().enumerate() {
            state.verified.remove(&(placement, i));
            state.whole.remove(&piece.volume);
        }
        return Err(StageError::ChangedSinceChecked {
            path: staged,
            what: format!("blob {}", p.sha256),
            expected: p.sha256.to_string(),
            got: if got.is_empty() {
                "unreadable".into()
            } else {
                got
            },
            volumes: volumes(p.pieces.iter().map(|x| x.volume)),
        });
    }
    Ok(())
}

/// `3`, or `2 and 3`.
fn volumes(v: impl Iterator<Item = u32>) -> String {
    let v: BTreeSet<u32> = v.collect();
    let v: Vec<String> = v.iter().map(u32::to_string).collect();
    match v.split_last() {
        Some((last, rest)) if !rest.is_empty() => format!("{} and {last}", rest.join(", ")),
        _ => v.join(""),
    }
}
