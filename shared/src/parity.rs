//! The parity of a volume set, as both sides compute it: the data shard of
//! a volume is its pieces' bytes concatenated and zero-padded to the
//! shard size; shards are coded in stripes of
//! [`PARITY_STRIPE`] bytes, each stripe one
//! Reed–Solomon code (GF(2^16), `reed-solomon-simd`) over the same bytes of
//! every data shard.
//!
//! Invariant: the bundler's encoding and the mirror's rebuild go through
//! these functions only, so they cannot disagree about where a stripe
//! starts, how a shard is padded, or which shard has which index.

use std::collections::BTreeMap;
use std::fs::File;
use std::io::{self, Read, Seek, SeekFrom};
use std::path::PathBuf;

use crate::manifest::PARITY_STRIPE;

/// A run of a shard's bytes: `len` bytes of `path` from `offset`.
#[derive(Debug, Clone)]
pub struct Segment {
    /// The file the bytes are in (a blob, or a blob being assembled).
    pub path: PathBuf,
    /// Where the run starts in the file.
    pub offset: u64,
    /// How many bytes it has.
    pub len: u64,
}

/// A segment's file could not be opened or read: the message names the
/// file, the cause says why.
#[derive(Debug, thiserror::Error)]
#[error("{}", path.display())]
pub struct SegmentError {
    /// The file of the segment.
    pub path: PathBuf,
    /// Why it could not be read.
    #[source]
    pub source: io::Error,
}

impl SegmentError {
    fn of(seg: &Segment) -> impl FnOnce(io::Error) -> Self + '_ {
        move |source| Self {
            path: seg.path.clone(),
            source,
        }
    }
}

/// Reads a shard: front to back, stripe by stripe ([`ShardReader::fill`]),
/// or any stripe on its own ([`ShardReader::read_at`]) — the segments'
/// bytes in order, then zeros. At most one file is open at a time.
pub struct ShardReader {
    segs: Vec<Segment>,
    /// Where each segment starts in the shard.
    starts: Vec<u64>,
    idx: usize,
    done_in_seg: u64,
    file: Option<File>,
    /// The segment whose file [`ShardReader::read_at`] has open.
    at_file: Option<(usize, File)>,
}

impl ShardReader {
    /// A reader of the shard made of `segs`, in order.
    pub fn new(segs: Vec<Segment>) -> Self {
        let starts = segs
            .iter()
            .scan(0u64, |at, s| {
                let start = *at;
                *at += s.len;
                Some(start)
            })
            .collect();
        Self {
            segs,
            starts,
            idx: 0,
            done_in_seg: 0,
            file: None,
            at_file: None,
        }
    }

    /// Fills `buf` with the shard's bytes from `start` on (zeros past its
    /// data), wherever the sequential reading stands.
    pub fn read_at(&mut self, start: u64, buf: &mut [u8]) -> Result<(), SegmentError> {
        use std::os::unix::fs::FileExt;
        buf.fill(0);
        let end = start + buf.len() as u64;
        // The first segment that ends after `start`.
        let first = self
            .starts
            .partition_point(|s| *s <= start)
            .saturating_sub(1);
        for k in first..self.segs.len() {
            let (seg, at) = (&self.segs[k], self.starts[k]);
            if at >= end {
                break;
            }
            let (a, b) = (at.max(start), (at + seg.len).min(end));
            if a >= b {
                continue;
            }
            let f = match &self.at_file {
                Some((i, f)) if *i == k => f,
                _ => {
                    let f = File::open(&seg.path).map_err(SegmentError::of(seg))?;
                    &self.at_file.insert((k, f)).1
                }
            };
            f.read_exact_at(
                &mut buf[(a - start) as usize..(b - start) as usize],
                seg.offset + (a - at),
            )
            .map_err(SegmentError::of(seg))?;
        }
        Ok(())
    }

    /// Fills `buf` with the next bytes of the shard (zeros past its data).
    pub fn fill(&mut self, buf: &mut [u8]) -> Result<(), SegmentError> {
        let mut at = 0;
        while at < buf.len() {
            let Some(seg) = self.segs.get(self.idx) else {
                buf[at..].fill(0);
                return Ok(());
            };
            if self.done_in_seg == seg.len {
                self.idx += 1;
                self.done_in_seg = 0;
                self.file = None;
                continue;
            }
            let f = match &mut self.file {
                Some(f) => f,
                None => {
                    let mut f = File::open(&seg.path).map_err(SegmentError::of(seg))?;
                    f.seek(SeekFrom::Start(seg.offset + self.done_in_seg))
                        .map_err(SegmentError::of(seg))?;
                    self.file.insert(f)
                }
            };
            let want = ((seg.len - self.done_in_seg) as usize).min(buf.len() - at);
            f.read_exact(&mut buf[at..at + want])
                .map_err(SegmentError::of(seg))?;
            at += want;
            self.done_in_seg += want as u64;
        }
        Ok(())
    }
}

/// The shard size for volumes whose largest data is `max_data` bytes:
/// rounded up to an even number (the code works on 16-bit symbols).
pub fn shard_size(max_data: u64) -> u64 {
    max_data.max(2).div_ceil(2) * 2
}

/// The stripes of a shard: (start, length) each.
pub fn stripes(shard_size: u64) -> impl Iterator<Item = (u64, usize)> {
    (0..shard_size.div_ceil(PARITY_STRIPE)).map(move |s| {
        let start = s * PARITY_STRIPE;
        (start, (shard_size - start).min(PARITY_STRIPE) as usize)
    })
}

/// The Reed–Solomon code refused a stripe (shard counts or sizes it does
/// not take): a bug of the caller, or a manifest whose parity numbers
/// passed its checks yet cannot be coded.
#[derive(Debug, thiserror::Error)]
#[error("the parity code refused the stripe's shards")]
pub struct CodeError(#[from] reed_solomon_simd::Error);

/// The recovery shards of one stripe.
pub fn encode(originals: &[Vec<u8>], recovery: usize) -> Result<Vec<Vec<u8>>, CodeError> {
    Ok(reed_solomon_simd::encode(
        originals.len(),
        recovery,
        originals,
    )?)
}

/// The lost original shards of one stripe, from the others and the
/// recovery shards held: index → bytes.
pub fn decode(
    count: usize,
    recovery_count: usize,
    originals: &BTreeMap<usize, Vec<u8>>,
    recovery: &BTreeMap<usize, Vec<u8>>,
) -> Result<BTreeMap<usize, Vec<u8>>, CodeError> {
    Ok(reed_solomon_simd::decode(
        count,
        recovery_count,
        originals.iter().map(|(i, b)| (*i, b)),
        recovery.iter().map(|(i, b)| (*i, b)),
    )?)
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A file that cannot be read is named, its cause after it.
    #[test]
    fn an_unreadable_segment_is_named() {
        let d = tempfile::tempdir().unwrap();
        let gone = d.path().join("gone");
        let seg = Segment {
            path: gone.clone(),
            offset: 0,
            len: 4,
        };
        let mut buf = [0u8; 4];
        for e in [
            ShardReader::new(vec![seg.clone()])
                .fill(&mut buf)
                .unwrap_err(),
            ShardReader::new(vec![seg])
                .read_at(0, &mut buf)
                .unwrap_err(),
        ] {
            assert_eq!(e.path, gone);
            assert_eq!(e.to_string(), gone.display().to_string());
            assert_eq!(e.source.kind(), io::ErrorKind::NotFound);
        }
    }

    #[test]
    fn any_k_lost_shards_come_back() {
        let shards: Vec<Vec<u8>> = (0..4u8)
            .map(|i| {
                (0..1000u32)
                    .map(|b| (b as u8).wrapping_mul(i + 3))
                    .collect()
            })
            .collect();
        let parity = encode(&shards, 2).unwrap();
        for lost in [[0usize, 1], [1, 3], [2, 3]] {
            let held: BTreeMap<usize, Vec<u8>> = (0..4)
                .filter(|i| !lost.contains(i))
                .map(|i| (i, shards[i].clone()))
                .collect();
            let rec: BTreeMap<usize, Vec<u8>> = parity.iter().cloned().enumerate().collect();
            let back = decode(4, 2, &held, &rec).unwrap();
            for i in lost {
                assert_eq!(back[&i], shards[i]);
            }
        }
        assert_eq!(shard_size(7), 8);
        assert_eq!(shard_size(0), 2);
        let s: Vec<_> = stripes(PARITY_STRIPE + 10).collect();
        assert_eq!(s, vec![(0, PARITY_STRIPE as usize), (PARITY_STRIPE, 10)]);
    }

    #[test]
    fn a_shard_is_its_segments_then_zeros() {
        let dir = tempfile::tempdir().unwrap();
        let a = dir.path().join("a");
        std::fs::write(&a, b"0123456789").unwrap();
        let mut r = ShardReader::new(vec![
            Segment {
                path: a.clone(),
                offset: 2,
                len: 3,
            },
            Segment {
                path: a,
                offset: 8,
                len: 2,
            },
        ]);
        let mut buf = [9u8; 4];
        r.fill(&mut buf).unwrap();
        assert_eq!(&buf, b"2348");
        r.fill(&mut buf).unwrap();
        assert_eq!(&buf, b"9\0\0\0");
        // Any window on its own, across segments and past the data.
        let mut two = [9u8; 2];
        for (start, want) in [
            (0, b"23"),
            (2, b"48"),
            (3, b"89"),
            (4, b"9\0"),
            (6, b"\0\0"),
        ] {
            r.read_at(start, &mut two).unwrap();
            assert_eq!(&two, want, "from {start}");
        }
        let mut all = [9u8; 7];
        r.read_at(0, &mut all).unwrap();
        assert_eq!(&all, b"23489\0\0");
    }
}
