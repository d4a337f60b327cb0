//! The parity volumes' shards, computed from the data volumes' pieces in
//! the cache before the manifest is written (the manifest records each
//! shard's sha256).
//!
//! Invariant: shards are written to `.NAME.parity-J.partial` beside the
//! output and removed once their volumes are written (or the run fails);
//! a killed run's are overwritten by the next run with the same `--out`;
//! the code itself is [`llmgw_shared::parity`], the same the mirror
//! rebuilds with.

use std::fs::File;
use std::io::{BufWriter, Write};
use std::path::{Path, PathBuf};

use llmgw_shared::Sha256;
use llmgw_shared::parity::{self, Segment, ShardReader};
use sha2::Digest;

use super::plan::Packing;
use crate::error::CreateError;

/// The parity shards of a packing.
pub struct Shards {
    pub shard_size: u64,
    pub sha256: Vec<Sha256>,
    /// Temporary files holding them, in order.
    pub files: Vec<PathBuf>,
}

/// The segments of data volume `v` (0-based): its pieces, in order.
pub fn segments(packing: &Packing, v: usize, path_of: &dyn Fn(&str) -> PathBuf) -> Vec<Segment> {
    packing.volumes[v]
        .iter()
        .map(|&(p, i)| {
            let pl = &packing.placements[p];
            Segment {
                path: path_of(&pl.sha256),
                offset: pl.pieces[i].offset,
                len: pl.pieces[i].size,
            }
        })
        .collect()
}

/// Computes `k` parity shards over the data volumes of `packing`.
pub fn compute(
    out: &Path,
    packing: &Packing,
    k: usize,
    path_of: &dyn Fn(&str) -> PathBuf,
) -> Result<Shards, CreateError> {
    let count = packing.volumes.len();
    let max = (0..count).map(|v| packing.data_len(v)).max().unwrap_or(0);
    let shard_size = parity::shard_size(max);
    let files: Vec<PathBuf> = (0..k)
        .map(|j| {
            let name = out
                .file_name()
                .map(|n| n.to_string_lossy().into_owned())
                .unwrap_or_default();
            out.with_file_name(format!(".{name}.parity-{j}.partial"))
        })
        .collect();
    let result = (|| {
        let mut readers: Vec<ShardReader> = (0..count)
            .map(|v| ShardReader::new(segments(packing, v, path_of)))
            .collect();
        let mut outs = files
            .iter()
            .map(|f| File::create(f).map(|f| BufWriter::with_capacity(1 << 20, f)))
            .collect::<Result<Vec<_>, _>>()
            .map_err(|e| CreateError::io(out, e))?;
        let mut hashers: Vec<sha2::Sha256> = (0..k).map(|_| sha2::Sha256::new()).collect();
        let mut bufs: Vec<Vec<u8>> = vec![Vec::new(); count];
        for (_, len) in parity::stripes(shard_size) {
            for (r, b) in readers.iter_mut().zip(bufs.iter_mut()) {
                b.resize(len, 0);
                r.fill(b).map_err(|error| CreateError::Parity {
                    out: out.to_path_buf(),
                    error,
                })?;
            }
            let rec = parity::encode(&bufs, k)
                .map_err(|e| CreateError::io(out, std::io::Error::other(e)))?;
            for ((w, h), r) in outs.iter_mut().zip(hashers.iter_mut()).zip(&rec) {
                h.update(r);
                w.write_all(r).map_err(|e| CreateError::io(out, e))?;
            }
        }
        for w in outs {
            w.into_inner()
                .map_err(|e| CreateError::io(out, e.into_error()))?;
        }
        Ok(hashers
            .into_iter()
            .map(|h| Sha256::from_bytes(&h.finalize().into()))
            .collect::<Vec<_>>())
    })();
    match result {
        Ok(sha256) => Ok(Shards {
            shard_size,
            sha256,
            files,
        }),
        Err(e) => {
            for f in &files {
                let _ = std::fs::remove_file(f);
            }
            Err(e)
        }
    }
}
