//! Where the tar stream's bytes go: the temporary bundle file, as they are
//! (`.tar`) or cut into segments and compressed into frames (`.tar.zst`).
//!
//! The invariant: the file always holds a prefix of the bundle — complete
//! frames only, for a `.tar.zst` — so whatever stops the run, the next one
//! can read it back and carry on ([`super::resume`]). [`Sink::good`] is the
//! length up to the last entry whose blob was verified, where a run that
//! found wrong bytes cuts the file back to.

use std::collections::VecDeque;
use std::fs::File;
use std::io::{self, BufWriter, Seek, SeekFrom, Write};
use std::sync::Arc;

use super::layout::Layout;
use super::zst::Pool;

const WRITE_BUFFER: usize = 1 << 20;

/// What to keep of the file when a run fails.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Keep {
    /// Everything written: the bytes are what the servers sent, to be
    /// hashed again by the next run.
    All,
    /// Up to the last verified entry: the current blob's bytes are wrong.
    Verified,
}

pub struct Sink {
    layout: Arc<Layout>,
    /// Stream position of the next byte.
    pos: u64,
    /// File length after the last ended (verified) entry.
    good: u64,
    kind: Kind,
}

enum Kind {
    Tar(BufWriter<File>),
    Zst(Box<Zst>),
}

struct Zst {
    out: BufWriter<File>,
    pool: Pool,
    seg: Vec<u8>,
    seg_start: u64,
    /// Compressed bytes in the file.
    written: u64,
    /// For each frame in flight: whether it ends an entry.
    ends: VecDeque<bool>,
}

impl Sink {
    /// A sink appending to `file` at stream position `pos`, which is at
    /// file offset `file_len` (the same for a `.tar`; after the last whole
    /// frame for a `.tar.zst`). `zstd` is (level, threads) for a `.tar.zst`.
    pub fn new(
        mut file: File,
        layout: Arc<Layout>,
        pos: u64,
        file_len: u64,
        zstd: Option<(i32, usize)>,
    ) -> io::Result<Self> {
        file.set_len(file_len)?;
        file.seek(SeekFrom::Start(file_len))?;
        let out = BufWriter::with_capacity(WRITE_BUFFER, file);
        let kind = match zstd {
            None => Kind::Tar(out),
            Some((level, threads)) => Kind::Zst(Box::new(Zst {
                out,
                pool: Pool::new(level, threads)?,
                seg: Vec::new(),
                seg_start: pos,
                written: file_len,
                ends: VecDeque::new(),
            })),
        };
        Ok(Self {
            layout,
            pos,
            good: file_len,
            kind,
        })
    }

    /// The stream position of the next byte.
    pub fn pos(&self) -> u64 {
        self.pos
    }

    pub fn write(&mut self, mut bytes: &[u8]) -> io::Result<()> {
        match &mut self.kind {
            Kind::Tar(w) => {
                w.write_all(bytes)?;
                self.pos += bytes.len() as u64;
            }
            Kind::Zst(z) => {
                while !bytes.is_empty() {
                    let cut = self.layout.segment_end(z.seg_start);
                    let room = (cut - z.seg_start) as usize - z.seg.len();
                    let n = room.min(bytes.len());
                    if z.seg.capacity() == 0 {
                        z.seg.reserve_exact((cut - z.seg_start) as usize);
                    }
                    z.seg.extend_from_slice(&bytes[..n]);
                    bytes = &bytes[n..];
                    self.pos += n as u64;
                    let entry_end = self.layout.entries[self.layout.entry_at(z.seg_start)].end();
                    // A segment that ends its entry waits for end_entry: its
                    // blob is verified first.
                    if self.pos == cut && cut < entry_end {
                        z.submit(false, &mut self.good)?;
                    }
                }
            }
        }
        Ok(())
    }

    /// The current entry is complete and its blob verified.
    pub fn end_entry(&mut self) -> io::Result<()> {
        match &mut self.kind {
            Kind::Tar(_) => self.good = self.pos,
            Kind::Zst(z) => {
                if !z.seg.is_empty() {
                    z.submit(true, &mut self.good)?;
                } else if let Some(last) = z.ends.back_mut() {
                    *last = true;
                } else {
                    self.good = z.written;
                }
            }
        }
        Ok(())
    }

    /// Puts what a plain tar buffered on disk, so that a run killed while
    /// a download waits for its retry leaves those bytes to the next run.
    /// A `.tar.zst` cuts frames only where the layout says, so it waits.
    pub fn flush(&mut self) -> io::Result<()> {
        match &mut self.kind {
            Kind::Tar(w) => w.flush(),
            Kind::Zst(_) => Ok(()),
        }
    }

    /// Every byte written: the finished file.
    pub fn finish(mut self) -> io::Result<File> {
        if self.pos != self.layout.total() {
            return Err(io::Error::other(format!(
                "the bundle stream stopped at byte {} of {}",
                self.pos,
                self.layout.total()
            )));
        }
        self.settle()?;
        match self.kind {
            Kind::Tar(w) => w.into_inner().map_err(|e| e.into_error()),
            Kind::Zst(z) => z.out.into_inner().map_err(|e| e.into_error()),
        }
    }

    /// After a failure: writes out what may be kept and cuts the file to
    /// it; answers with its length.
    pub fn abandon(mut self, keep: Keep) -> io::Result<u64> {
        if let Kind::Zst(z) = &mut self.kind {
            // The segment being filled is not a whole frame: dropped.
            z.seg.clear();
        }
        self.settle()?;
        let (file, written) = match self.kind {
            Kind::Tar(w) => {
                let f = w.into_inner().map_err(|e| e.into_error())?;
                (f, self.pos)
            }
            Kind::Zst(z) => {
                let w = z.written;
                (z.out.into_inner().map_err(|e| e.into_error())?, w)
            }
        };
        let len = match keep {
            Keep::All => written,
            Keep::Verified => self.good,
        };
        file.set_len(len)?;
        Ok(len)
    }

    /// Writes every frame in flight and flushes.
    fn settle(&mut self) -> io::Result<()> {
        match &mut self.kind {
            Kind::Tar(w) => w.flush(),
            Kind::Zst(z) => {
                for f in z.pool.drain()? {
                    z.put(&f, &mut self.good)?;
                }
                z.out.flush()
            }
        }
    }
}

impl Zst {
    fn submit(&mut self, ends_entry: bool, good: &mut u64) -> io::Result<()> {
        let seg = std::mem::take(&mut self.seg);
        self.seg_start += seg.len() as u64;
        self.ends.push_back(ends_entry);
        if let Some(f) = self.pool.submit(seg)? {
            self.put(&f, good)?;
        }
        Ok(())
    }

    fn put(&mut self, frame: &[u8], good: &mut u64) -> io::Result<()> {
        self.out.write_all(frame)?;
        self.written += frame.len() as u64;
        if self.ends.pop_front() == Some(true) {
            *good = self.written;
        }
        Ok(())
    }
}
