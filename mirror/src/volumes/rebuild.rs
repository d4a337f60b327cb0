//! Rebuilding lost or damaged data volumes from parity at import.
//!
//! Invariant: a rebuilt piece counts as verified only when its bytes hash
//! to the sha256 the manifest records for it, exactly as if it had come
//! from its volume; parity only ever adds pieces, never changes a verified
//! one. The code is [`llmgw_shared::parity`], the bundler's own.

use std::collections::{BTreeMap, HashMap};
use std::fs::{File, OpenOptions};
use std::os::unix::fs::FileExt;

use llmgw_shared::parity::{self, Segment, ShardReader};
use sha2::{Digest, Sha256};

use super::index::Slot;
use super::read::SlotTarget;
use super::stage::Stage;

/// A piece of a lost volume being rebuilt.
struct Rebuilt {
    placement: usize,
    piece: usize,
    /// Where it starts in its volume's data.
    at: u64,
    size: u64,
    hasher: Sha256,
    skip: bool,
}

/// Rebuilds every data volume not verified whole, when the parity volumes
/// held are enough; answers the volumes rebuilt (none when there is no
/// parity, nothing lost, or too much lost — the report says which).
pub fn rebuild(stage: &mut Stage<'_>) -> Result<Vec<u32>, String> {
    let index = stage.index;
    let Some(par) = index.volumes.parity.clone() else {
        return Ok(Vec::new());
    };
    let count = index.count() as usize;
    let lost: Vec<u32> = (1..=index.count())
        .filter(|v| !stage.volume_done(*v))
        .collect();
    let held: Vec<usize> = (0..par.shards.len())
        .filter(|j| stage.have(Slot::Parity(*j)))
        .take(lost.len())
        .collect();
    if lost.is_empty() || held.len() < lost.len() {
        return Ok(Vec::new());
    }
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
    let mut present: Vec<(usize, ShardReader)> = (0..count)
        .filter(|v| !lost.contains(&(*v as u32 + 1)))
        .map(|v| (v, ShardReader::new(segments(v))))
        .collect();
    let mut recovery: Vec<(usize, File)> = held
        .iter()
        .map(|&j| {
            let p = stage.parity_file(j);
            File::open(&p)
                .map(|f| (j, f))
                .map_err(|e| format!("{}: {e}", p.display()))
        })
        .collect::<Result<_, _>>()?;
    let mut pieces: BTreeMap<u32, Vec<Rebuilt>> = BTreeMap::new();
    let mut files: HashMap<usize, File> = HashMap::new();
    for &v in &lost {
        let mut at = 0;
        let mut list = Vec::new();
        for &(p, i) in &index.per_volume[v as usize - 1] {
            let size = index.volumes.placements[p].pieces[i].size;
            let skip = stage.have(Slot::Piece {
                placement: p,
                piece: i,
            });
            if !skip && !files.contains_key(&p) {
                let pl = &index.volumes.placements[p];
                let path = stage.part(&pl.sha256);
                let f = OpenOptions::new()
                    .read(true)
                    .write(true)
                    .create(true)
                    .truncate(false)
                    .open(&path)
                    .and_then(|f| f.set_len(pl.size).map(|()| f))
                    .map_err(|e| format!("{}: {e}", path.display()))?;
                files.insert(p, f);
            }
            list.push(Rebuilt {
                placement: p,
                piece: i,
                at,
                size,
                hasher: Sha256::new(),
                skip,
            });
            at += size;
        }
        pieces.insert(v, list);
    }
    let mut originals = BTreeMap::new();
    let mut rec = BTreeMap::new();
    for (start, len) in parity::stripes(par.shard_size) {
        originals.clear();
        for (v, r) in present.iter_mut() {
            let mut b = vec![0u8; len];
            r.fill(&mut b).map_err(|e| e.to_string())?;
            originals.insert(*v, b);
        }
        rec.clear();
        for (j, f) in &recovery {
            let mut b = vec![0u8; len];
            f.read_exact_at(&mut b, start)
                .map_err(|e| format!("parity shard {}: {e}", j + 1))?;
            rec.insert(*j, b);
        }
        let back = parity::decode(count, par.shards.len(), &originals, &rec)?;
        for (&v, list) in pieces.iter_mut() {
            let data = back
                .get(&(v as usize - 1))
                .ok_or_else(|| format!("the parity code did not give back volume {v}"))?;
            let end = start + len as u64;
            for r in list.iter_mut().filter(|r| !r.skip) {
                let (a, b) = (r.at.max(start), (r.at + r.size).min(end));
                if a >= b {
                    continue;
                }
                let bytes = &data[(a - start) as usize..(b - start) as usize];
                r.hasher.update(bytes);
                let pl = &index.volumes.placements[r.placement];
                let off = pl.pieces[r.piece].offset + (a - r.at);
                if let Some(f) = files.get(&r.placement) {
                    f.write_all_at(bytes, off).map_err(|e| e.to_string())?;
                }
            }
        }
    }
    drop(recovery.drain(..));
    let mut done = Vec::new();
    for (v, list) in pieces {
        for r in list.into_iter().filter(|r| !r.skip) {
            let want = &index.volumes.placements[r.placement].pieces[r.piece].sha256;
            let got = hex::encode(r.hasher.finalize());
            if &got != want {
                return Err(format!(
                    "volume {v} rebuilt from parity does not hash right (a piece gives sha256 \
                     {got}, expected {want}): a parity volume or a staged piece is damaged; \
                     bring volume {v} itself"
                ));
            }
            let f = files.get(&r.placement).map(|f| f.try_clone()).transpose();
            let f = f.map_err(|e| e.to_string())?;
            stage.verified(
                Slot::Piece {
                    placement: r.placement,
                    piece: r.piece,
                },
                f,
            )?;
        }
        done.push(v);
    }
    Ok(done)
}
