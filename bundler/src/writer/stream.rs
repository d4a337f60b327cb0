//! A `.tar` or `.tar.zst` bundle written front to back, once: each entry of
//! the [`Layout`] in turn, its blob's bytes taken from where they are —
//! a file of the cache, or the pieces of a download as they arrive — and
//! hashed on the way through.
//!
//! The invariant: a blob's entry is ended (and so counts as verified for
//! the sink's good length) only after its bytes hashed to its name. Bytes already
//! in the file from an earlier run (everything before the sink's position)
//! are not written again; a blob cut there continues from the hash of its
//! first part, which the resume scan computed from those very bytes.

use std::fs::{File, OpenOptions};
use std::io::{self, BufWriter, Read, Write};
use std::path::{Path, PathBuf};

use bytes::{Bytes, BytesMut};
use llmgw_shared::HashReader;
use sha2::{Digest, Sha256};
use tokio::sync::mpsc;

use super::layout::{Layout, What};
use super::sink::{READ_CHUNK, Sink};
use crate::cache::{Cache, Expect};
use crate::error::CreateError;
use crate::pieces::{Msg, Piece};
use crate::progress::{Events, Item};

/// Where a blob's bytes come from.
#[derive(Debug, Clone)]
pub enum Source {
    /// Already whole in the file (an earlier run wrote and this one checked it).
    Done,
    /// A verified file (the cache).
    File(PathBuf),
    /// The downloads, as pieces.
    Net,
}

pub struct StreamBlob {
    pub label: String,
    pub source: Source,
    /// The hash of the blob's first bytes, when an earlier run wrote them.
    pub prefix: Option<(u64, Sha256)>,
    /// With `--cache`: keep a downloaded blob in the cache as well.
    pub keep: bool,
    /// Whether it counts as reused from an earlier run in the report.
    pub reused: bool,
    /// Whether the progress line counted it already (the small files, when
    /// they were fetched before the manifest): a file is counted once.
    pub counted: bool,
}

/// What the stream took from where.
#[derive(Debug, Default, Clone, Copy)]
pub struct Stats {
    pub downloaded: u64,
    /// Whole blobs from the cache or the earlier run's file (those marked
    /// `reused`), and the part of a download an earlier run had written.
    pub reused: u64,
}

pub struct Stream<'a> {
    pub layout: &'a Layout,
    pub blobs: Vec<StreamBlob>,
    pub cache: &'a Cache,
    pub progress: &'a Events,
    /// The temporary bundle, for messages.
    pub path: &'a Path,
}

impl Stream<'_> {
    /// Writes from the sink's position to the end.
    pub fn run(
        mut self,
        sink: &mut Sink,
        mut pieces: Option<&mut mpsc::Receiver<Piece>>,
    ) -> Result<Stats, CreateError> {
        let mut stats = Stats {
            downloaded: 0,
            reused: self
                .blobs
                .iter()
                .zip(&self.layout.blobs)
                .filter(|(b, _)| b.reused)
                .map(|(_, (_, size))| size)
                .sum(),
        };
        let first = self.layout.entry_at(sink.pos());
        for i in first..self.layout.entries.len() {
            let e = &self.layout.entries[i];
            self.emit(sink, e.start, &e.head)?;
            match e.what {
                What::Head(h) => self.emit(sink, e.data(), &self.layout.heads[h])?,
                What::Trailer => {}
                What::Blob(k) => self.blob(k, sink, pieces.as_deref_mut(), &mut stats)?,
            }
            let zeros = vec![0u8; e.pad as usize];
            self.emit(sink, e.data_end(), &zeros)?;
            sink.end_entry().map_err(|e| self.io(e))?;
        }
        Ok(stats)
    }

    fn io(&self, e: io::Error) -> CreateError {
        CreateError::io(self.path, e)
    }

    /// Writes the part of `bytes` (which belong at `at`) the file lacks.
    fn emit(&self, sink: &mut Sink, at: u64, bytes: &[u8]) -> Result<(), CreateError> {
        let skip = sink.pos().saturating_sub(at) as usize;
        if skip < bytes.len() {
            sink.write(&bytes[skip..]).map_err(|e| self.io(e))?;
        }
        Ok(())
    }

    /// Streams blob `k` into the sink: the part an earlier run wrote
    /// continued (its hash carried over), the rest read from the cache or
    /// taken from the downloads; then its size and sha256 checked.
    fn blob(
        &mut self,
        k: usize,
        sink: &mut Sink,
        pieces: Option<&mut mpsc::Receiver<Piece>>,
        stats: &mut Stats,
    ) -> Result<(), CreateError> {
        let (sha, size) = self.layout.blobs[k].clone();
        let e = self.layout.blob_entry(k);
        let have = sink.pos().saturating_sub(e.data()).min(size);
        let b = &mut self.blobs[k];
        let mut at = match b.prefix.take() {
            Some((n, h)) if n == have => At { off: n, hasher: h },
            None if have == 0 => At {
                off: 0,
                hasher: Sha256::new(),
            },
            _ => {
                return Err(self.io(io::Error::other(format!(
                    "blob {sha}: {have} bytes are in the file but their hash was not carried over"
                ))));
            }
        };
        let (label, counted, keep) = (b.label.clone(), b.counted, b.keep);
        match b.source.clone() {
            Source::Done => {
                if !counted {
                    crate::progress::found(self.progress.as_ref(), size);
                }
                at.check(&label, &sha, size).map_or(Ok(()), Err)
            }
            Source::File(path) => {
                self.copy_file(&path, size, &mut at, sink)?;
                if !counted {
                    self.progress
                        .file_message(&format!("{label}: in the cache ({size} bytes)"));
                    crate::progress::found(self.progress.as_ref(), size);
                }
                at.check(&label, &sha, size).map_or(Ok(()), Err)
            }
            Source::Net => {
                let item = Item::start(self.progress, &label, size);
                if at.off > 0 {
                    // What an earlier run wrote of it counts as reused, so
                    // downloaded + reused is the bundle's size.
                    item.resumed(at.off);
                    stats.reused += at.off;
                }
                let mut tee = match keep {
                    true => self.tee(&sha, at.off)?,
                    false => None,
                };
                let pieces = pieces.ok_or_else(|| {
                    self.io(io::Error::other(
                        "a download was needed but none was started",
                    ))
                })?;
                let mut to = Taking {
                    k,
                    label: &label,
                    size,
                    item: &item,
                    tee: &mut tee,
                };
                self.take_pieces(&mut to, &mut at, sink, pieces, stats)?;
                self.finish_download(&label, &sha, size, at, item, tee)
            }
        }
    }

    /// The rest of a blob from its file in the cache, from `at.off`.
    fn copy_file(
        &self,
        path: &Path,
        size: u64,
        at: &mut At,
        sink: &mut Sink,
    ) -> Result<(), CreateError> {
        let ioe = |e| CreateError::io(path, e);
        let mut f = File::open(path).map_err(ioe)?;
        io::Seek::seek(&mut f, io::SeekFrom::Start(at.off)).map_err(ioe)?;
        let hasher = std::mem::take(&mut at.hasher);
        let mut f = HashReader::new(f.take(size - at.off), hasher);
        loop {
            // A fresh buffer each time: it moves to the writer thread.
            let mut buf = BytesMut::zeroed(READ_CHUNK);
            let n = f.read(&mut buf).map_err(ioe)?;
            if n == 0 {
                break;
            }
            buf.truncate(n);
            sink.write_bytes(buf.freeze())
                .map_err(|e| CreateError::io(self.path, e))?;
            at.off += n as u64;
        }
        at.hasher = f.into_hasher();
        Ok(())
    }

    /// The rest of a blob from the downloads: its pieces, in order, each
    /// to its end (and into the cache's partial file when it is kept).
    fn take_pieces(
        &self,
        to: &mut Taking<'_>,
        at: &mut At,
        sink: &mut Sink,
        pieces: &mut mpsc::Receiver<Piece>,
        stats: &mut Stats,
    ) -> Result<(), CreateError> {
        while at.off < to.size {
            let Some(mut p) = pieces.blocking_recv() else {
                return Err(self.io(io::Error::other("the downloads stopped")));
            };
            if p.blob != to.k || p.start != at.off {
                return Err(self.io(io::Error::other(format!(
                    "expected bytes from {} of blob {}, got a piece of blob {} from {}",
                    at.off, to.k, p.blob, p.start
                ))));
            }
            while let Some(m) = p.rx.blocking_recv() {
                match m {
                    Ok(Msg::Data(d)) => self.take_bytes(d, to, at, sink, stats)?,
                    Ok(Msg::Spooled(path)) => self.take_spooled(&path, to, at, sink, stats)?,
                    Ok(Msg::Flush) => {
                        sink.flush().map_err(|e| self.io(e))?;
                        if let Some((path, t)) = to.tee.as_mut() {
                            t.flush().map_err(|e| CreateError::io(&*path, e))?;
                        }
                    }
                    Err(e) => {
                        to.item.failed();
                        return Err(e);
                    }
                }
            }
            if at.off != p.end {
                to.item.failed();
                return Err(self.io(io::Error::other(format!(
                    "{}: the download of bytes {}..{} stopped at {}",
                    to.label, p.start, p.end, at.off
                ))));
            }
        }
        Ok(())
    }

    /// Downloaded bytes of the blob being taken: hashed, kept in the
    /// cache's partial file when asked to, written, counted.
    fn take_bytes(
        &self,
        d: Bytes,
        to: &mut Taking<'_>,
        at: &mut At,
        sink: &mut Sink,
        stats: &mut Stats,
    ) -> Result<(), CreateError> {
        let n = d.len() as u64;
        at.hasher.update(&d);
        if let Some((path, t)) = to.tee.as_mut() {
            t.write_all(&d).map_err(|e| CreateError::io(&*path, e))?;
        }
        sink.write_bytes(d).map_err(|e| self.io(e))?;
        at.off += n;
        stats.downloaded += n;
        to.item.inc(n);
        Ok(())
    }

    /// A piece fetched whole into the spool while the ones before it were
    /// written: its bytes taken as downloaded ones, the file removed.
    fn take_spooled(
        &self,
        path: &Path,
        to: &mut Taking<'_>,
        at: &mut At,
        sink: &mut Sink,
        stats: &mut Stats,
    ) -> Result<(), CreateError> {
        let io = |e| CreateError::io(path, e);
        let mut f = File::open(path).map_err(io)?;
        loop {
            let mut buf = BytesMut::zeroed(READ_CHUNK);
            let n = f.read(&mut buf).map_err(io)?;
            if n == 0 {
                break;
            }
            buf.truncate(n);
            self.take_bytes(buf.freeze(), to, at, sink, stats)?;
        }
        drop(f);
        let _ = std::fs::remove_file(path);
        Ok(())
    }

    /// A downloaded blob checked; kept in the cache when asked to, and
    /// its partial file dropped when its bytes are wrong.
    fn finish_download(
        &self,
        label: &str,
        sha: &llmgw_shared::Sha256,
        size: u64,
        at: At,
        item: Item,
        tee: Option<(PathBuf, BufWriter<File>)>,
    ) -> Result<(), CreateError> {
        if let Some(e) = at.check(label, sha, size) {
            item.failed();
            if let Some((path, _)) = tee {
                let _ = std::fs::remove_file(path);
            }
            return Err(e);
        }
        if let Some((path, t)) = tee {
            drop(
                t.into_inner()
                    .map_err(|e| CreateError::io(&path, e.into_error()))?,
            );
            self.cache
                .commit(&path, sha, &Expect::Sha256(sha.clone()))
                .map_err(|e| CreateError::io(&path, e))?;
        }
        item.done();
        Ok(())
    }

    /// The cache's partial file for a blob, continued at `off` (the bytes
    /// before it came from the same stream in the killed run); `None` when
    /// it does not hold them.
    #[allow(clippy::type_complexity)]
    fn tee(
        &self,
        sha: &llmgw_shared::Sha256,
        off: u64,
    ) -> Result<Option<(PathBuf, BufWriter<File>)>, CreateError> {
        let path = self.cache.partial_path(&Expect::Sha256(sha.clone()));
        let ioe = |e| CreateError::io(&path, e);
        let f = OpenOptions::new()
            .create(true)
            .truncate(false)
            .write(true)
            .open(&path)
            .map_err(ioe)?;
        let len = f.metadata().map_err(ioe)?.len();
        if len < off {
            drop(f);
            let _ = std::fs::remove_file(&path);
            return Ok(None);
        }
        f.set_len(off).map_err(ioe)?;
        let mut w = BufWriter::with_capacity(1 << 20, f);
        io::Seek::seek(&mut w, io::SeekFrom::Start(off)).map_err(ioe)?;
        Ok(Some((path, w)))
    }
}

fn wrong(label: &str, sha: &str, got: String) -> CreateError {
    CreateError::WrongBytes {
        what: label.to_string(),
        algorithm: "sha256",
        expected: sha.to_string(),
        actual: got,
    }
}

/// How far a blob's bytes have come, and their hash so far.
struct At {
    off: u64,
    hasher: Sha256,
}

impl At {
    /// Why the blob's bytes are not the ones expected, if they are not.
    fn check(self, label: &str, sha: &llmgw_shared::Sha256, size: u64) -> Option<CreateError> {
        let got = hex::encode(self.hasher.finalize());
        if self.off != size {
            Some(CreateError::WrongSize {
                what: label.to_string(),
                expected: size,
                actual: self.off,
            })
        } else if got != *sha {
            Some(wrong(label, sha, got))
        } else {
            None
        }
    }
}

/// A blob being taken from the downloads.
struct Taking<'a> {
    /// Its index in the bundle's sorted list.
    k: usize,
    label: &'a str,
    size: u64,
    item: &'a Item,
    /// The cache's partial file it goes into too, when it is kept.
    tee: &'a mut Option<(PathBuf, BufWriter<File>)>,
}
