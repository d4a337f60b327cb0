//! The `.tar.zst` side of the writer: the tar stream cut into segments
//! (where [`super::layout::Layout::segment_end`] says), each compressed into
//! its own zstd frame on a pool of threads, one per core, and written in
//! order.
//!
//! Independent frames, like `pzstd` writes, rather than one multi-threaded
//! frame: every frame boundary is a point a killed run can resume from
//! (the frames before it are complete and the tar position after it is
//! known), and each frame is a pure function of its segment and the level,
//! so the bytes do not depend on the number of threads or on timing.
//! Decoders read concatenated frames as one stream.
//!
//! A segment whose sample does not compress (model weights, `.tar.gz`
//! builds, anything already compressed or random) is stored as a frame of
//! raw blocks, which costs a copy instead of a compression pass: zstd
//! itself would end up storing such blocks raw, after trying.

use std::collections::VecDeque;
use std::io;
use std::sync::mpsc::{Receiver, SyncSender, sync_channel};
use std::thread::JoinHandle;

/// The default zstd level: fast, and model weights hardly compress anyway.
pub const DEFAULT_LEVEL: i32 = 3;
/// Levels `--zstd-level` accepts.
pub const LEVELS: std::ops::RangeInclusive<i32> = 1..=19;
/// The most compression threads: each holds a segment and its output.
const MAX_THREADS: usize = 8;
/// Sampled bytes per segment, in four slices spread across it.
const SAMPLE_SLICE: usize = 16 << 10;
/// Largest block of a raw frame (zstd's block maximum).
const RAW_BLOCK: usize = 128 << 10;

/// How many compression threads to run: every core, up to [`MAX_THREADS`].
pub fn default_threads() -> usize {
    std::thread::available_parallelism()
        .map_or(1, |n| n.get())
        .clamp(1, MAX_THREADS)
}

/// One segment's frame, as it goes into the file.
pub enum Frame {
    /// zstd's own frame; the segment is kept for reuse.
    Packed { bytes: Vec<u8>, seg: Vec<u8> },
    /// The segment itself, stored in raw blocks: written with the frame and
    /// block headers between its slices, so its bytes are never copied.
    Raw(Vec<u8>),
}

impl Frame {
    /// Writes the frame: for raw blocks, in vectored writes straight from
    /// the segment (a `BufWriter` passes writes larger than its buffer
    /// through).
    pub fn write_to(&self, w: &mut impl io::Write) -> io::Result<()> {
        match self {
            Frame::Packed { bytes, .. } => w.write_all(bytes),
            Frame::Raw(data) => {
                let heads = raw_headers(data.len());
                let mut parts = vec![io::IoSlice::new(&heads[..RAW_FRAME_HEAD])];
                let mut blocks = data.chunks(RAW_BLOCK).enumerate().peekable();
                if blocks.peek().is_none() {
                    parts.push(io::IoSlice::new(&heads[RAW_FRAME_HEAD..]));
                }
                for (i, block) in blocks {
                    let h = RAW_FRAME_HEAD + 3 * i;
                    parts.push(io::IoSlice::new(&heads[h..h + 3]));
                    parts.push(io::IoSlice::new(block));
                }
                write_all_vectored(w, &mut parts)
            }
        }
    }

    /// Bytes the frame takes in the file.
    pub fn file_len(&self) -> u64 {
        match self {
            Frame::Packed { bytes, .. } => bytes.len() as u64,
            Frame::Raw(data) => (raw_headers(data.len()).len() + data.len()) as u64,
        }
    }

    /// The segment's buffer, to fill again.
    pub fn into_segment(self) -> Vec<u8> {
        match self {
            Frame::Packed { seg, .. } | Frame::Raw(seg) => seg,
        }
    }
}

/// Compresses one segment into one frame: raw blocks when a sample of it
/// saves less than 1/32 at `level`, else zstd at `level` with a checksum.
pub fn frame(c: &mut zstd::bulk::Compressor<'static>, seg: Vec<u8>) -> io::Result<Frame> {
    if seg.len() >= 4 * SAMPLE_SLICE {
        let step = seg.len() / 4;
        let mut sample = Vec::with_capacity(4 * SAMPLE_SLICE);
        for i in 0..4 {
            sample.extend_from_slice(&seg[i * step..i * step + SAMPLE_SLICE]);
        }
        let packed = c.compress(&sample)?;
        if packed.len() * 32 >= sample.len() * 31 {
            return Ok(Frame::Raw(seg));
        }
    }
    let bytes = c.compress(&seg)?;
    Ok(Frame::Packed { bytes, seg })
}

/// Bytes before a raw frame's first block: magic, descriptor, window, size.
const RAW_FRAME_HEAD: usize = 10;

/// The headers of a zstd frame holding `len` bytes in raw (stored) blocks:
/// the frame header (a 128 KiB window and the content size), then one
/// 3-byte header per block (one empty block for no data).
fn raw_headers(len: usize) -> Vec<u8> {
    let blocks = len.div_ceil(RAW_BLOCK).max(1);
    let mut out = Vec::with_capacity(RAW_FRAME_HEAD + 3 * blocks);
    out.extend_from_slice(&0xFD2F_B528u32.to_le_bytes());
    // Frame header descriptor: a 4-byte content size, no single segment,
    // no checksum, no dictionary; then the window descriptor (2^17).
    out.push(0b1000_0000);
    out.push(7 << 3);
    out.extend_from_slice(&(len as u32).to_le_bytes());
    for i in 0..blocks {
        let size = (len - i * RAW_BLOCK).min(RAW_BLOCK) as u32;
        let last = u32::from(i + 1 == blocks);
        out.extend_from_slice(&((size << 3) | last).to_le_bytes()[..3]);
    }
    out
}

/// `write_all` for a list of slices (std's is not stable yet).
fn write_all_vectored(w: &mut impl io::Write, mut parts: &mut [io::IoSlice<'_>]) -> io::Result<()> {
    while !parts.is_empty() {
        match w.write_vectored(parts) {
            Ok(0) => return Err(io::ErrorKind::WriteZero.into()),
            Ok(n) => io::IoSlice::advance_slices(&mut parts, n),
            Err(e) if e.kind() == io::ErrorKind::Interrupted => {}
            Err(e) => return Err(e),
        }
    }
    Ok(())
}

fn compressor(level: i32) -> io::Result<zstd::bulk::Compressor<'static>> {
    let mut c = zstd::bulk::Compressor::new(level)?;
    c.set_parameter(zstd::stream::raw::CParameter::ChecksumFlag(true))?;
    Ok(c)
}

struct Worker {
    tx: SyncSender<Vec<u8>>,
    rx: Receiver<io::Result<Frame>>,
    handle: Option<JoinHandle<()>>,
}

/// Segments in, frames out in the same order. Segment `n` goes to thread
/// `n % threads`, so reading the threads round-robin gives the order back;
/// at most `threads` segments are in flight, so memory is bounded by
/// threads × (segment + frame) whatever the bundle's size.
pub struct Pool {
    workers: Vec<Worker>,
    sent: u64,
    received: u64,
}

impl Pool {
    pub fn new(level: i32, threads: usize) -> io::Result<Self> {
        let mut workers = Vec::new();
        for i in 0..threads.max(1) {
            let (tx, in_rx) = sync_channel::<Vec<u8>>(1);
            let (out_tx, rx) = sync_channel::<io::Result<Frame>>(1);
            let mut c = compressor(level)?;
            let handle = std::thread::Builder::new()
                .name(format!("zstd-{i}"))
                .spawn(move || {
                    while let Ok(seg) = in_rx.recv() {
                        if out_tx.send(frame(&mut c, seg)).is_err() {
                            break;
                        }
                    }
                })?;
            workers.push(Worker {
                tx,
                rx,
                handle: Some(handle),
            });
        }
        Ok(Self {
            workers,
            sent: 0,
            received: 0,
        })
    }

    fn slot(&self, n: u64) -> usize {
        (n % self.workers.len() as u64) as usize
    }

    /// Hands a segment over; answers with the oldest frame when the pool
    /// is full (the caller writes it).
    pub fn submit(&mut self, seg: Vec<u8>) -> io::Result<Option<Frame>> {
        let done = if self.sent - self.received == self.workers.len() as u64 {
            Some(self.next()?)
        } else {
            None
        };
        let w = &self.workers[self.slot(self.sent)];
        w.tx.send(seg)
            .map_err(|_| io::Error::other("a zstd thread stopped"))?;
        self.sent += 1;
        Ok(done)
    }

    /// The oldest frame not handed back yet.
    fn next(&mut self) -> io::Result<Frame> {
        let w = &self.workers[self.slot(self.received)];
        let f =
            w.rx.recv()
                .map_err(|_| io::Error::other("a zstd thread stopped"))??;
        self.received += 1;
        Ok(f)
    }

    /// Every frame still in flight, in order.
    pub fn drain(&mut self) -> io::Result<VecDeque<Frame>> {
        let mut out = VecDeque::new();
        while self.received < self.sent {
            out.push_back(self.next()?);
        }
        Ok(out)
    }
}

impl Drop for Pool {
    fn drop(&mut self) {
        // Closing both channels stops each thread after its segment.
        for w in self.workers.drain(..) {
            let Worker { tx, rx, handle } = w;
            drop((tx, rx));
            if let Some(h) = handle {
                let _ = h.join();
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn data() -> Vec<u8> {
        // Text that compresses, then bytes that do not.
        let mut v: Vec<u8> = (0..300_000u32)
            .flat_map(|i| format!("line {i}\n").into_bytes())
            .collect();
        let mut x = 0x9E37_79B9_7F4A_7C15u64;
        for _ in 0..(1 << 20) {
            x ^= x << 13;
            x ^= x >> 7;
            x ^= x << 17;
            v.push(x as u8);
        }
        v
    }

    fn bytes(f: Frame) -> Vec<u8> {
        let mut out = Vec::new();
        f.write_to(&mut out).unwrap();
        out
    }

    fn run(level: i32, threads: usize, segs: &[&[u8]]) -> Vec<u8> {
        let mut p = Pool::new(level, threads).unwrap();
        let mut out = Vec::new();
        for s in segs {
            if let Some(f) = p.submit(s.to_vec()).unwrap() {
                f.write_to(&mut out).unwrap();
            }
        }
        for f in p.drain().unwrap() {
            f.write_to(&mut out).unwrap();
        }
        out
    }

    #[test]
    fn frames_decode_as_one_stream_whatever_the_thread_count() {
        let d = data();
        let segs: Vec<&[u8]> = d.chunks(300_000).collect();
        let one = run(3, 1, &segs);
        assert_eq!(one, run(3, 3, &segs));
        assert_eq!(zstd::decode_all(&one[..]).unwrap(), d);
        // The text compressed; the random tail was stored raw, at a cost of
        // a few bytes per 128 KiB.
        assert!(one.len() < d.len() - 1_500_000, "{}", one.len());
    }

    #[test]
    fn raw_frames_are_valid_zstd() {
        for n in [0usize, 1, RAW_BLOCK, RAW_BLOCK + 1, 3 * RAW_BLOCK + 5] {
            let d: Vec<u8> = (0..n).map(|i| (i * 7) as u8).collect();
            let f = bytes(Frame::Raw(d.clone()));
            assert_eq!(zstd::decode_all(&f[..]).unwrap(), d, "{n}");
            assert_eq!(Frame::Raw(d.clone()).file_len(), f.len() as u64);
        }
    }

    #[test]
    fn incompressible_segments_are_stored() {
        let d = data();
        let tail = &d[d.len() - (1 << 20)..];
        let mut c = compressor(3).unwrap();
        assert!(matches!(
            frame(&mut c, tail.to_vec()).unwrap(),
            Frame::Raw(_)
        ));
        let head = &d[..1 << 20];
        let packed = frame(&mut c, head.to_vec()).unwrap();
        assert!(matches!(packed, Frame::Packed { .. }));
        assert!(packed.file_len() < head.len() as u64 / 2);
        assert_eq!(zstd::decode_all(&bytes(packed)[..]).unwrap(), head);
    }
}
