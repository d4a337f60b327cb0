//! Writing the volumes of a planned packing: each an uncompressed tar of
//! the head entries (manifest, signature), then its pieces in placement
//! order, read from the verified files of the cache.
//!
//! Invariant: a volume file appears under its final name only when it is
//! whole, and every piece written into it hashed to the sha256 the
//! manifest records for it (the cache is read again while writing, so a
//! file changed since the chunks were hashed is caught, not carried).

use std::fs::{self, File};
use std::io::{self, BufWriter, Read, Seek, SeekFrom, Write};
use std::path::{Path, PathBuf};

use llmgw_shared::manifest::{Placement, blob_entry_name, chunk_entry_name, parity_entry_name};
use llmgw_shared::{HashReader, Sha256};
use sha2::Digest;

use super::plan::{Cut, Packing};
use crate::error::CreateError;
use crate::writer::{header, sync_parent, write_head};

const BUF: usize = 1 << 20;

/// The tar entry of piece `i` of `p`: the blob itself when it is whole.
pub fn piece_entry(p: &Placement, i: usize) -> String {
    if p.pieces.len() == 1 {
        blob_entry_name(&p.sha256)
    } else {
        chunk_entry_name(&p.sha256, i)
    }
}

/// Hashes every chunk of the blobs cut into several pieces, reading each
/// blob's file once, and gives the packing with every piece's sha256.
/// A whole blob is its own piece and keeps its own (verified) sha256.
pub fn hash_pieces(cut: Cut, path_of: &dyn Fn(&str) -> PathBuf) -> Result<Packing, CreateError> {
    let mut buf = vec![0u8; BUF];
    let mut chunks: Vec<Vec<Sha256>> = Vec::with_capacity(cut.blobs.len());
    for b in &cut.blobs {
        let mut digests = Vec::new();
        if b.pieces.len() > 1 {
            let path = path_of(&b.sha256);
            let mut f = File::open(&path).map_err(|e| CreateError::io(&path, e))?;
            for piece in &b.pieces {
                digests.push(
                    sha256_of_next(&mut f, piece.size, &mut buf)
                        .map_err(|e| CreateError::io(&path, e))?,
                );
            }
        }
        chunks.push(digests);
    }
    let placements = cut.placements(|k, b, i| match b.pieces.len() {
        1 => b.sha256.clone(),
        _ => chunks[k][i].clone(),
    });
    Ok(Packing {
        placements,
        volumes: cut.volumes,
    })
}

/// The sha256 of the next `n` bytes of `r`.
pub(super) fn sha256_of_next(r: &mut dyn Read, n: u64, buf: &mut [u8]) -> io::Result<Sha256> {
    let mut hashed = HashReader::new(r, sha2::Sha256::new());
    copy_exact(&mut hashed, n, buf, |_| Ok(()))?;
    Ok(Sha256::from_bytes(&hashed.into_hasher().finalize().into()))
}

/// Reads exactly `n` bytes from `r` into `sink`, in buffer-sized pieces.
pub(super) fn copy_exact(
    r: &mut dyn Read,
    mut n: u64,
    buf: &mut [u8],
    mut sink: impl FnMut(&[u8]) -> io::Result<()>,
) -> io::Result<()> {
    while n > 0 {
        let want = (buf.len() as u64).min(n) as usize;
        let got = r.read(&mut buf[..want])?;
        if got == 0 {
            return Err(io::Error::new(
                io::ErrorKind::UnexpectedEof,
                format!("the file ended {n} bytes early; it changed since it was verified"),
            ));
        }
        sink(&buf[..got])?;
        n -= got as u64;
    }
    Ok(())
}

/// What one volume file holds besides the head entries.
pub enum Body<'a> {
    /// Data volume: these pieces, in order.
    Data(&'a [(usize, usize)]),
    /// Parity volume `j` (0-based): its shard, from this file, and the
    /// shard's sha256.
    Parity {
        index: usize,
        shard: &'a Path,
        size: u64,
        sha256: &'a Sha256,
    },
}

/// One stretch of a planned volume's bytes.
pub enum Seg {
    /// Exactly these bytes: the head entries, a tar header, padding, the
    /// end-of-archive blocks.
    Bytes(Vec<u8>),
    /// `size` bytes of the file `from` at `offset`, which hash to `sha256`.
    Piece {
        name: String,
        from: PathBuf,
        offset: u64,
        size: u64,
        sha256: Sha256,
    },
}

/// Everything a volume file holds, in order: the one description that both
/// writing a volume and checking one an earlier run wrote go by.
pub fn segments(
    manifest: &[u8],
    signature: Option<&[u8]>,
    mtime: u64,
    packing: &Packing,
    body: &Body<'_>,
    path_of: &dyn Fn(&str) -> PathBuf,
) -> io::Result<Vec<Seg>> {
    let mut head = Vec::new();
    write_head(&mut head, manifest, signature, mtime)?;
    let mut out = vec![Seg::Bytes(head)];
    let mut entry = |name: String, from: PathBuf, offset: u64, size: u64, sha256: Sha256| {
        out.push(Seg::Bytes(header(&name, size, mtime)?.as_bytes().to_vec()));
        out.push(Seg::Piece {
            name,
            from,
            offset,
            size,
            sha256,
        });
        let pad = ((512 - size % 512) % 512) as usize;
        if pad > 0 {
            out.push(Seg::Bytes(vec![0u8; pad]));
        }
        Ok::<(), io::Error>(())
    };
    match body {
        Body::Data(list) => {
            for &(p, i) in *list {
                let pl = &packing.placements[p];
                let piece = &pl.pieces[i];
                entry(
                    piece_entry(pl, i),
                    path_of(&pl.sha256),
                    piece.offset,
                    piece.size,
                    piece.sha256.clone(),
                )?;
            }
        }
        Body::Parity {
            index,
            shard,
            size,
            sha256,
        } => entry(
            parity_entry_name(*index),
            shard.to_path_buf(),
            0,
            *size,
            (*sha256).clone(),
        )?,
    }
    out.push(Seg::Bytes(vec![0u8; 1024]));
    Ok(out)
}

/// The length of the volume `segs` describe.
pub fn planned_len(segs: &[Seg]) -> u64 {
    segs.iter()
        .map(|s| match s {
            Seg::Bytes(b) => b.len() as u64,
            Seg::Piece { size, .. } => *size,
        })
        .sum()
}

/// Writes the volume `segs` describe to `dest`, through `temp` beside it
/// (renamed into place when whole). `replace`: `dest` is there and may be
/// replaced (an earlier run's copy, cut short); otherwise a `dest` that
/// appeared meanwhile is left alone and the write fails.
pub fn write_volume(
    dest: &Path,
    temp: File,
    tmp: &Path,
    segs: &[Seg],
    replace: bool,
) -> Result<(), CreateError> {
    let result = (|| {
        let to_tmp = |e| CreateError::io(tmp, e);
        temp.set_len(0).map_err(to_tmp)?;
        let mut w = BufWriter::with_capacity(BUF, &temp);
        let mut buf = vec![0u8; BUF];
        for seg in segs {
            match seg {
                Seg::Bytes(b) => w.write_all(b).map_err(to_tmp)?,
                Seg::Piece {
                    name,
                    from,
                    offset,
                    size,
                    sha256,
                } => {
                    let from_file = |e| CreateError::io(from, e);
                    let mut f = File::open(from).map_err(from_file)?;
                    f.seek(SeekFrom::Start(*offset)).map_err(from_file)?;
                    let mut hashed = HashReader::new(&mut f, sha2::Sha256::new());
                    copy_exact(&mut hashed, *size, &mut buf, |b| w.write_all(b))
                        .map_err(from_file)?;
                    let got = Sha256::from_bytes(&hashed.into_hasher().finalize().into());
                    if got != *sha256 {
                        return Err(CreateError::PieceChanged {
                            from: from.clone(),
                            entry: name.clone(),
                            got,
                            planned: Box::new(sha256.clone()),
                        });
                    }
                }
            }
        }
        w.into_inner().map_err(|e| to_tmp(e.into_error()))?;
        Ok(())
    })();
    if let Err(e) = result {
        let _ = fs::remove_file(tmp);
        return Err(e);
    }
    if dest.exists() && !replace {
        let _ = fs::remove_file(tmp);
        return Err(CreateError::VolumeAppeared {
            path: dest.to_path_buf(),
        });
    }
    fs::rename(tmp, dest).map_err(|e| CreateError::io(dest, e))?;
    sync_parent(dest);
    Ok(())
}
