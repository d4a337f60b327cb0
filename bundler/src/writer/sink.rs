//! Where the tar stream's bytes go: the temporary bundle file, as they are
//! (`.tar`) or cut into segments and compressed into frames (`.tar.zst`).
//!
//! The invariant: the file always holds a prefix of the bundle — complete
//! frames only, for a `.tar.zst` — so whatever stops the run, the next one
//! can read it back and carry on ([`super::resume`]). [`Disk::good`] is the
//! length up to the last entry whose blob was verified, where a run that
//! found wrong bytes cuts the file back to.
//!
//! The file side ([`Disk`]) runs on a thread of its own, fed through a
//! bounded channel: the stream thread only hashes, so hashing one blob and
//! writing (or framing) the bytes before it overlap instead of taking turns.
//! Bytes from the network are handed over as they came ([`Bytes`] moves,
//! nothing is copied); at most [`IN_FLIGHT`] pieces wait between the two.
use std::collections::VecDeque;
use std::fs::File;
use std::io::{self, BufWriter, Seek, SeekFrom, Write};
use std::sync::Arc;
use std::sync::mpsc::{Receiver, SyncSender, sync_channel};
use std::thread::JoinHandle;

use bytes::Bytes;

use super::layout::Layout;
use super::zst::{Frame, Pool};

const WRITE_BUFFER: usize = 1 << 20;
/// Pieces of the stream waiting for the file side (each at most a network
/// chunk or one read of a cached file, [`READ_CHUNK`]).
const IN_FLIGHT: usize = 32;
/// How much of a cached file the stream reads at a time.
pub const READ_CHUNK: usize = 256 << 10;

/// What to keep of the file when a run fails.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Keep {
    /// Everything written: the bytes are what the servers sent, to be
    /// hashed again by the next run.
    All,
    /// Up to the last verified entry: the current blob's bytes are wrong.
    Verified,
}

/// What the stream thread sends the file side.
enum Cmd {
    Data(Bytes),
    EndEntry,
    Flush,
}

/// The stream's end of the sink: counts the position, hands the bytes to
/// the [`Disk`] thread, and gets it back (with the first error it met) to
/// finish or abandon the file.
pub struct Sink {
    /// Stream position of the next byte handed over.
    pos: u64,
    tx: Option<SyncSender<Cmd>>,
    thread: Option<JoinHandle<(Disk, Option<io::Error>)>>,
    /// The file side once stopped.
    stopped: Option<Disk>,
}

impl Sink {
    /// A sink appending to `file` at stream position `pos`, which is at
    /// file offset `file_len` (the same for a `.tar`; after the last whole
    /// frame for a `.tar.zst`). `zstd` is (level, threads) for a `.tar.zst`.
    pub fn new(
        file: File,
        layout: Arc<Layout>,
        pos: u64,
        file_len: u64,
        zstd: Option<(i32, usize)>,
    ) -> io::Result<Self> {
        let disk = Disk::new(file, layout, pos, file_len, zstd)?;
        let (tx, rx) = sync_channel(IN_FLIGHT);
        let thread = std::thread::Builder::new()
            .name("bundle-writer".into())
            .spawn(move || disk.serve(rx))?;
        Ok(Self {
            pos,
            tx: Some(tx),
            thread: Some(thread),
            stopped: None,
        })
    }

    /// The stream position of the next byte.
    pub fn pos(&self) -> u64 {
        self.pos
    }

    /// Hands `bytes` over; an error is the file side's (met at this or an
    /// earlier write).
    pub fn write_bytes(&mut self, bytes: Bytes) -> io::Result<()> {
        let n = bytes.len() as u64;
        self.send(Cmd::Data(bytes))?;
        self.pos += n;
        Ok(())
    }

    pub fn write(&mut self, bytes: &[u8]) -> io::Result<()> {
        self.write_bytes(Bytes::copy_from_slice(bytes))
    }

    /// The current entry is complete and its blob verified.
    pub fn end_entry(&mut self) -> io::Result<()> {
        self.send(Cmd::EndEntry)
    }

    /// Puts what a plain tar buffered on disk (see [`Disk::flush`]).
    pub fn flush(&mut self) -> io::Result<()> {
        self.send(Cmd::Flush)
    }

    /// Every byte written: the finished file.
    pub fn finish(mut self) -> io::Result<File> {
        self.stop()?.finish()
    }

    /// After a failure: writes out what may be kept and cuts the file to
    /// it; answers with its length.
    pub fn abandon(mut self, keep: Keep) -> io::Result<u64> {
        // The error that stopped the file side is the caller's already;
        // what matters now is the file, which it hands back either way.
        let disk = match self.stop() {
            Ok(disk) => disk,
            Err(e) => self.stopped.take().ok_or(e)?,
        };
        disk.abandon(keep)
    }

    fn send(&mut self, cmd: Cmd) -> io::Result<()> {
        let sent = match &self.tx {
            Some(tx) => tx.send(cmd).is_ok(),
            None => false,
        };
        if sent {
            return Ok(());
        }
        // The file side stopped at an error: that error is the answer.
        Err(self
            .stop()
            .err()
            .unwrap_or_else(|| io::Error::other("the bundle writer stopped")))
    }

    /// Stops the file side and takes it back; answers with the first error
    /// it met, if any.
    fn stop(&mut self) -> io::Result<Disk> {
        self.tx = None;
        if let Some(t) = self.thread.take() {
            let (disk, err) = t
                .join()
                .map_err(|_| io::Error::other("the bundle writer thread panicked"))?;
            self.stopped = Some(disk);
            if let Some(e) = err {
                return Err(e);
            }
        }
        self.stopped
            .take()
            .ok_or_else(|| io::Error::other("the bundle writer stopped earlier"))
    }
}

/// The file side: writes the stream into the file, on its own thread.
struct Disk {
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
    /// Segment buffers written out, to fill again (no fresh pages each time).
    spare: Vec<Vec<u8>>,
}

impl Disk {
    /// Runs on the writer thread until the stream hangs up; keeps the first
    /// error and drops everything after it (the stream learns of it at its
    /// next send, when this has returned).
    fn serve(mut self, rx: Receiver<Cmd>) -> (Self, Option<io::Error>) {
        while let Ok(cmd) = rx.recv() {
            let done = match cmd {
                Cmd::Data(b) => self.write(&b),
                Cmd::EndEntry => self.end_entry(),
                Cmd::Flush => self.flush(),
            };
            if let Err(e) = done {
                return (self, Some(e));
            }
        }
        (self, None)
    }

    /// A sink appending to `file` at stream position `pos`, which is at
    /// file offset `file_len` (the same for a `.tar`; after the last whole
    /// frame for a `.tar.zst`). `zstd` is (level, threads) for a `.tar.zst`.
    fn new(
        mut file: File,
        layout: Arc<Layout>,
        pos: u64,
        file_len: u64,
        zstd: Option<(i32, usize)>,
    ) -> io::Result<Self> {
        if file.metadata()?.len() != file_len {
            file.set_len(file_len)?;
        }
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
                spare: Vec::new(),
            })),
        };
        Ok(Self {
            layout,
            pos,
            good: file_len,
            kind,
        })
    }

    fn write(&mut self, mut bytes: &[u8]) -> io::Result<()> {
        match &mut self.kind {
            Kind::Tar(w) => {
                w.write_all(bytes)?;
                self.pos += bytes.len() as u64;
            }
            Kind::Zst(z) => {
                while !bytes.is_empty() {
                    let cut = self.layout.segment_end(z.seg_start);
                    if cut <= z.seg_start {
                        // Only a caller bug gets here; refuse rather than loop.
                        return Err(io::Error::other(format!(
                            "bytes past the end of the bundle ({} bytes)",
                            self.layout.total()
                        )));
                    }
                    let room = (cut - z.seg_start) as usize - z.seg.len();
                    let n = room.min(bytes.len());
                    if z.seg.capacity() == 0 {
                        z.seg = z.spare.pop().unwrap_or_default();
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
    fn end_entry(&mut self) -> io::Result<()> {
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
    fn flush(&mut self) -> io::Result<()> {
        match &mut self.kind {
            Kind::Tar(w) => w.flush(),
            Kind::Zst(_) => Ok(()),
        }
    }

    /// Every byte written: the finished file.
    fn finish(mut self) -> io::Result<File> {
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
    fn abandon(mut self, keep: Keep) -> io::Result<u64> {
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
                    z.put(f, &mut self.good)?;
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
            self.put(f, good)?;
        }
        Ok(())
    }

    fn put(&mut self, frame: Frame, good: &mut u64) -> io::Result<()> {
        frame.write_to(&mut self.out)?;
        self.written += frame.file_len();
        let mut seg = frame.into_segment();
        if self.spare.len() < 2 {
            seg.clear();
            self.spare.push(seg);
        }
        if self.ends.pop_front() == Some(true) {
            *good = self.written;
        }
        Ok(())
    }
}
