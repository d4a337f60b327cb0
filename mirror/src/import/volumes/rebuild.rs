//! Rebuilding lost or damaged pieces of data volumes from parity at import,
//! stripe by stripe.
//!
//! Invariant: a rebuilt piece counts as verified only when its bytes hash
//! to the sha256 the manifest records for it, exactly as if it had come
//! from its volume; parity only ever adds pieces, never changes a verified
//! one. A data shard is lost only in the stripes its unverified pieces
//! cover, so a volume with one damaged chunk costs the parity of those
//! stripes only: a stripe is decoded when at most as many shards are lost
//! in it as parity shards are held. The code is [`llmgw_shared::parity`],
//! the bundler's own.

use std::collections::{BTreeMap, BTreeSet, HashMap};
use std::fs::File;
use std::os::unix::fs::FileExt;
use std::path::PathBuf;

use llmgw_shared::parity::{self, Segment, ShardReader};
use sha2::{Digest, Sha256};

use super::error::StageError;
use super::index::Slot;
use super::read::SlotTarget;
use super::stage::Stage;

/// An unverified piece of a data volume, being rebuilt.
struct Rebuilt {
    volume: usize,
    placement: usize,
    piece: usize,
    /// Where it starts in its volume's data.
    at: u64,
    size: u64,
    hasher: Sha256,
    /// A stripe it covers had more shards lost than parity held.
    beyond: bool,
}

impl Rebuilt {
    fn covers(&self, start: u64, end: u64) -> bool {
        self.at < end && start < self.at + self.size
    }
}

/// The data volumes (0-based) with a piece to rebuild in a stripe.
fn lost_in(lost: &[Rebuilt], start: u64, len: usize) -> BTreeSet<usize> {
    lost.iter()
        .filter(|r| r.covers(start, start + len as u64))
        .map(|r| r.volume)
        .collect()
}

/// Rebuilds every unverified piece of the data volumes whose stripes the
/// parity volumes held can decode; answers the data volumes made whole by
/// it (none when there is no parity, nothing lost, or too much lost — the
/// report then says what is still missing). In phases: find what is lost,
/// mark the stripes beyond repair, open the shards, decode stripe by
/// stripe, then check and keep each rebuilt piece.
pub fn rebuild(stage: &mut Stage<'_>) -> Result<Vec<u32>, StageError> {
    let Some(par) = stage.index.volumes.parity.clone() else {
        return Ok(Vec::new());
    };
    let mut lost = lost_pieces(stage);
    let held: Vec<usize> = (0..par.shards.len())
        .filter(|j| stage.have(Slot::Parity(*j)))
        .collect();
    if lost.is_empty() || held.is_empty() {
        return Ok(Vec::new());
    }
    let stripes: Vec<(u64, usize)> = parity::stripes(par.shard_size).collect();
    mark_beyond(&mut lost, &stripes, held.len());
    if lost.iter().all(|r| r.beyond) {
        return Ok(Vec::new());
    }
    let recovery: Vec<(usize, File)> = held
        .iter()
        .map(|&j| {
            let p = stage.parity_file(j);
            File::open(&p)
                .map(|f| (j, f))
                .map_err(|source| StageError::Read { path: p, source })
        })
        .collect::<Result<_, _>>()?;
    let files = open_outputs(stage, &lost)?;
    decode(
        stage,
        par.shards.len(),
        recovery,
        &stripes,
        &mut lost,
        &files,
    )?;
    keep(stage, lost, &files)
}

/// Each piece of a data volume not verified yet, where it sits.
fn lost_pieces(stage: &Stage<'_>) -> Vec<Rebuilt> {
    let index = stage.index;
    let mut lost = Vec::new();
    for v in 0..index.count() as usize {
        let mut at = 0;
        for &(p, i) in &index.per_volume[v] {
            let size = index.volumes.placements[p].pieces[i].size;
            let slot = Slot::Piece {
                placement: p,
                piece: i,
            };
            if !stage.have(slot) {
                lost.push(Rebuilt {
                    volume: v,
                    placement: p,
                    piece: i,
                    at,
                    size,
                    hasher: Sha256::new(),
                    beyond: false,
                });
            }
            at += size;
        }
    }
    lost
}

/// Marks the pieces covering a stripe that lost more shards than `held`
/// parity shards can decode.
fn mark_beyond(lost: &mut [Rebuilt], stripes: &[(u64, usize)], held: usize) {
    for &(start, len) in stripes {
        if lost_in(lost, start, len).len() > held {
            for r in lost
                .iter_mut()
                .filter(|r| r.covers(start, start + len as u64))
            {
                r.beyond = true;
            }
        }
    }
}

/// The staging file of each placement with a piece to rebuild, open for
/// writing at its full size.
fn open_outputs(
    stage: &Stage<'_>,
    lost: &[Rebuilt],
) -> Result<HashMap<usize, (PathBuf, File)>, StageError> {
    let mut files = HashMap::new();
    for r in lost.iter().filter(|r| !r.beyond) {
        if files.contains_key(&r.placement) {
            continue;
        }
        let pl = &stage.index.volumes.placements[r.placement];
        let path = stage.part(&pl.sha256);
        let f = crate::store::fsutil::open_keeping(&path)
            .and_then(|f| f.set_len(pl.size).map(|()| f))
            .map_err(|e| StageError::write(&path, e))?;
        files.insert(r.placement, (path, f));
    }
    Ok(files)
}

/// Decodes every stripe where a piece still to rebuild is lost, writing
/// its bytes to `files` and hashing them.
fn decode(
    stage: &Stage<'_>,
    parity_shards: usize,
    recovery: Vec<(usize, File)>,
    stripes: &[(u64, usize)],
    lost: &mut [Rebuilt],
    files: &HashMap<usize, (PathBuf, File)>,
) -> Result<(), StageError> {
    let index = stage.index;
    let count = index.count() as usize;
    let segments = |v: usize| -> Vec<Segment> {
        index.per_volume[v]
            .iter()
            .map(|&(p, i)| Segment {
                path: stage.piece_source(p),
                offset: index.volumes.placements[p].pieces[i].offset,
                len: index.volumes.placements[p].pieces[i].size,
            })
            .collect()
    };
    let mut shards: Vec<ShardReader> = (0..count).map(|v| ShardReader::new(segments(v))).collect();
    let mut originals = BTreeMap::new();
    let mut rec = BTreeMap::new();
    for &(start, len) in stripes {
        let end = start + len as u64;
        // Only stripes where a piece still to rebuild is lost are read.
        if !lost.iter().any(|r| !r.beyond && r.covers(start, end)) {
            continue;
        }
        let gone = lost_in(lost, start, len);
        originals.clear();
        for (v, shard) in shards.iter_mut().enumerate() {
            if gone.contains(&v) {
                continue;
            }
            let mut b = vec![0u8; len];
            shard
                .read_at(start, &mut b)
                .map_err(StageError::ReadShards)?;
            originals.insert(v, b);
        }
        rec.clear();
        for (j, f) in recovery.iter().take(gone.len()) {
            let mut b = vec![0u8; len];
            f.read_exact_at(&mut b, start)
                .map_err(|source| StageError::ReadParity {
                    shard: j + 1,
                    source,
                })?;
            rec.insert(*j, b);
        }
        let back =
            parity::decode(count, parity_shards, &originals, &rec).map_err(StageError::Decode)?;
        for r in lost
            .iter_mut()
            .filter(|r| !r.beyond && r.covers(start, end))
        {
            let data = back.get(&r.volume).ok_or(StageError::NotDecoded {
                volume: r.volume + 1,
            })?;
            let (a, b) = (r.at.max(start), (r.at + r.size).min(end));
            let bytes = &data[(a - start) as usize..(b - start) as usize];
            r.hasher.update(bytes);
            let off = index.volumes.placements[r.placement].pieces[r.piece].offset + (a - r.at);
            if let Some((path, f)) = files.get(&r.placement) {
                f.write_all_at(bytes, off)
                    .map_err(|e| StageError::write(path, e))?;
            }
        }
    }
    Ok(())
}

/// Keeps each rebuilt piece whose bytes hash to the manifest's sha256;
/// answers the data volumes (1-based) made whole.
fn keep(
    stage: &mut Stage<'_>,
    lost: Vec<Rebuilt>,
    files: &HashMap<usize, (PathBuf, File)>,
) -> Result<Vec<u32>, StageError> {
    let index = stage.index;
    let touched: BTreeSet<usize> = lost.iter().map(|r| r.volume).collect();
    let mut short: BTreeSet<usize> = BTreeSet::new();
    for r in lost {
        if r.beyond {
            short.insert(r.volume);
            continue;
        }
        let v = r.volume + 1;
        let want = &index.volumes.placements[r.placement].pieces[r.piece].sha256;
        let got = hex::encode(r.hasher.finalize());
        if &got != want {
            return Err(StageError::RebuiltMismatch {
                volume: v,
                got,
                expected: want.to_string(),
            });
        }
        let f = files
            .get(&r.placement)
            .map(|(_, f)| f.try_clone())
            .transpose();
        let f = f.map_err(StageError::Reopen)?;
        stage.verified(
            Slot::Piece {
                placement: r.placement,
                piece: r.piece,
            },
            f,
        )?;
    }
    Ok(touched.difference(&short).map(|v| *v as u32 + 1).collect())
}
