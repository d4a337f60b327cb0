//! Where every carried byte goes across volumes, worked out from sizes
//! alone before any byte is read.
//!
//! Invariant: the packing is a pure function of (blobs sorted by sha256,
//! volume size, chunk size, room kept for the head entries). A blob no
//! larger than the chunk size is one piece; a larger one is cut at
//! chunk-size boundaries. Volumes are filled one after another, each
//! taking, in order, every remaining piece that still fits (first fit), so
//! a large chunk that does not fit leaves room for the small files after
//! it. Within a volume, pieces keep that order: placement order.

use llmgw_shared::Sha256;

use crate::error::PackError;
use llmgw_shared::manifest::{Piece, Placement};

/// A tar entry's header, and the two zero blocks that end a tar.
const BLOCK: u64 = 512;
const TRAILER: u64 = 1024;

/// The bytes a tar entry of `size` data bytes takes.
pub fn entry_cost(size: u64) -> u64 {
    BLOCK + size.div_ceil(BLOCK) * BLOCK
}

/// Where the pieces go, before any is hashed: per blob, its pieces'
/// places; per volume, its pieces as (blob index, piece index) in tar
/// order. [`Cut::placements`] makes the manifest's placements of it once
/// the pieces' digests are known.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Cut {
    pub blobs: Vec<CutBlob>,
    pub volumes: Vec<Vec<(usize, usize)>>,
}

/// A carried blob and where its pieces are.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct CutBlob {
    pub sha256: Sha256,
    pub size: u64,
    pub pieces: Vec<Slot>,
}

/// A piece's place: its stretch of the blob and its volume (1-based).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Slot {
    pub offset: u64,
    pub size: u64,
    pub volume: u32,
}

impl Cut {
    /// The manifest's placements, piece `i` of blob `b` (the `k`th)
    /// hashing to `digest(k, b, i)`.
    pub fn placements(&self, digest: impl Fn(usize, &CutBlob, usize) -> Sha256) -> Vec<Placement> {
        self.blobs
            .iter()
            .enumerate()
            .map(|(k, b)| Placement {
                sha256: b.sha256.clone(),
                size: b.size,
                pieces: b
                    .pieces
                    .iter()
                    .enumerate()
                    .map(|(i, s)| Piece {
                        offset: s.offset,
                        size: s.size,
                        sha256: digest(k, b, i),
                        volume: s.volume,
                    })
                    .collect(),
            })
            .collect()
    }

    /// The data of volume `v` (0-based): its pieces' sizes summed.
    #[cfg(test)]
    pub fn data_len(&self, v: usize) -> u64 {
        self.volumes[v]
            .iter()
            .map(|&(p, i)| self.blobs[p].pieces[i].size)
            .sum()
    }

    /// The tar file size of volume `v` with head entries of `head` bytes.
    #[cfg(test)]
    pub fn file_len(&self, v: usize, head: u64) -> u64 {
        head + self.volumes[v]
            .iter()
            .map(|&(p, i)| entry_cost(self.blobs[p].pieces[i].size))
            .sum::<u64>()
            + TRAILER
    }
}

/// The packing, every piece hashed: the manifest's placements and, per
/// volume, its pieces as (placement index, piece index) in tar order.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Packing {
    pub placements: Vec<Placement>,
    pub volumes: Vec<Vec<(usize, usize)>>,
}

impl Packing {
    /// The data of volume `v` (0-based): its pieces' sizes summed.
    pub fn data_len(&self, v: usize) -> u64 {
        self.volumes[v]
            .iter()
            .map(|&(p, i)| self.placements[p].pieces[i].size)
            .sum()
    }
}

/// Whether a blob of `size` bytes (`what`) can be packed at all: its
/// largest piece fits an empty volume beside the head entries.
pub fn check_fits(
    what: &str,
    size: u64,
    volume_size: u64,
    chunk_size: u64,
    head_room: u64,
) -> Result<(), PackError> {
    let capacity = capacity(volume_size, head_room)?;
    if size > 0 {
        check_piece(what, chunk_size.min(size), volume_size, capacity)?;
    }
    Ok(())
}

/// The bytes of pieces (with their tar headers) a volume holds beside the
/// head entries and the end of the tar.
fn capacity(volume_size: u64, head_room: u64) -> Result<u64, PackError> {
    (volume_size / BLOCK * BLOCK)
        .checked_sub(head_room + TRAILER)
        .filter(|c| *c > BLOCK)
        .ok_or(PackError::NoRoom {
            volume_size,
            head_room,
        })
}

/// A piece of `n` bytes of `what` fits an empty volume.
fn check_piece(what: &str, n: u64, volume_size: u64, capacity: u64) -> Result<(), PackError> {
    if entry_cost(n) > capacity {
        return Err(PackError::PieceTooLarge {
            what: what.to_string(),
            piece: n,
            volume_size,
            capacity,
        });
    }
    Ok(())
}

/// Packs `blobs` (sha256, size; sorted, distinct) into volumes of at most
/// `volume_size` bytes, keeping `head_room` bytes of each for the head
/// entries. Fails, saying why, when a piece cannot fit an empty volume.
pub fn pack(
    blobs: &[(Sha256, u64)],
    volume_size: u64,
    chunk_size: u64,
    head_room: u64,
) -> Result<Cut, PackError> {
    let capacity = capacity(volume_size, head_room)?;
    let mut cut = Vec::with_capacity(blobs.len());
    let mut todo: Vec<(usize, usize, u64)> = Vec::new();
    for (sha, size) in blobs {
        let p = cut.len();
        let mut pieces = Vec::new();
        let mut offset = 0;
        while offset < *size {
            let n = chunk_size.min(size - offset);
            check_piece(&format!("blob {sha}"), n, volume_size, capacity)?;
            todo.push((p, pieces.len(), entry_cost(n)));
            pieces.push(Slot {
                offset,
                size: n,
                volume: 0,
            });
            offset += n;
        }
        cut.push(CutBlob {
            sha256: sha.clone(),
            size: *size,
            pieces,
        });
    }
    let mut volumes: Vec<Vec<(usize, usize)>> = Vec::new();
    while !todo.is_empty() {
        let v = volumes.len() as u32 + 1;
        let mut free = capacity;
        let mut here = Vec::new();
        todo.retain(|&(p, i, cost)| {
            if cost <= free {
                free -= cost;
                here.push((p, i));
                cut[p].pieces[i].volume = v;
                false
            } else {
                true
            }
        });
        volumes.push(here);
    }
    if volumes.is_empty() {
        // Only empty blobs (or none): one volume with the manifest.
        volumes.push(Vec::new());
    }
    if u32::try_from(volumes.len()).is_err() {
        return Err(PackError::TooMany);
    }
    Ok(Cut {
        blobs: cut,
        volumes,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn blobs(sizes: &[u64]) -> Vec<(Sha256, u64)> {
        sizes
            .iter()
            .enumerate()
            .map(|(i, s)| (format!("{i:064x}").parse().unwrap(), *s))
            .collect()
    }

    #[test]
    fn chunks_cover_blobs_and_fill_volumes_first_fit() {
        // Capacity 8192 − 1024 − 1024 = 6144 bytes of entries.
        let b = blobs(&[10_000, 100, 0, 3000]);
        let p = pack(&b, 8192, 4096, 1024).unwrap();
        let big = &p.blobs[0];
        assert_eq!(
            big.pieces
                .iter()
                .map(|x| (x.offset, x.size))
                .collect::<Vec<_>>(),
            vec![(0, 4096), (4096, 4096), (8192, 1808)]
        );
        assert!(p.blobs[2].pieces.is_empty(), "an empty blob has no piece");
        // Volume 1: chunk 0 (4608), then chunk 1 does not fit, the
        // 1808-byte chunk does not either (2560 > 1536), the 100-byte blob does.
        assert_eq!(p.volumes[0], vec![(0, 0), (1, 0)]);
        assert_eq!(p.volumes[1], vec![(0, 1)]);
        assert_eq!(p.volumes[2], vec![(0, 2), (3, 0)]);
        for (v, list) in p.volumes.iter().enumerate() {
            assert!(p.file_len(v, 1024) <= 8192);
            for &(pl, i) in list {
                assert_eq!(p.blobs[pl].pieces[i].volume as usize, v + 1);
            }
        }
        assert_eq!(p.data_len(2), 1808 + 3000);
        // The same input, the same packing.
        assert_eq!(pack(&b, 8192, 4096, 1024).unwrap(), p);
    }

    #[test]
    fn a_5_gib_blob_on_fat32_volumes() {
        // Sizes only: the packing never reads a byte.
        let fat = crate::volumes::size::FAT_MAX_FILE;
        let b = blobs(&[5 << 30, 3 << 30, 1000]);
        let p = pack(&b, fat, 1 << 30, 64 << 10).unwrap();
        assert_eq!(p.blobs[0].pieces.len(), 5);
        assert_eq!(p.blobs[1].pieces.len(), 3);
        assert_eq!(p.volumes.len(), 3, "{:?}", p.volumes);
        for v in 0..p.volumes.len() {
            assert!(
                p.file_len(v, 64 << 10) <= fat,
                "volume {v} over FAT32's limit"
            );
        }
        let spread: std::collections::BTreeSet<u32> =
            p.blobs[0].pieces.iter().map(|x| x.volume).collect();
        assert!(spread.len() > 1, "the 5 GiB blob spans volumes");
    }

    #[test]
    fn a_piece_larger_than_a_volume_is_refused_with_the_numbers() {
        let e = pack(&blobs(&[10_000]), 8192, 8192, 1024)
            .unwrap_err()
            .to_string();
        assert!(e.contains("--chunk-size"), "{e}");
        let e = pack(&blobs(&[1]), 2048, 8192, 1024)
            .unwrap_err()
            .to_string();
        assert!(e.contains("--volume-size"), "{e}");
    }
}
