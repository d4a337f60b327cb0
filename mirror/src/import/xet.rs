//! The Xet records of the Hub's large files, made during import's one pass:
//! the mirror serves a file over Xet (the Hub's own transfer protocol, see
//! [`llmgw_shared::xet`]) from its record, and the record is a function of
//! the file's bytes, which import reads anyway. Chunking runs on a thread
//! of its own per blob, fed copies of the bytes the check reads, so it
//! overlaps the sha256 instead of adding to it; and the check does not wait
//! for a blob's chunker when it moves on to the next blob (up to
//! [`BEHIND`] chunkers may still be working on blobs already checked), so
//! a chunker slower than the check costs its lag once per import, not once
//! per blob.
//!
//! Only files the Hub would store in Xet get one: the LFS files of Hub
//! repositories (the Hub answers small git files over plain HTTP only).
//!
//! Invariant: a record is made only for a blob whose bytes hashed to its
//! name (the hasher is given its last byte when its sink is finished, and
//! the record kept only when the check keeps the blob), from exactly those
//! bytes. It waits in the staging folder beside its blob (`<sha256>.xet`,
//! written once the check is at most [`BEHIND`] blobs past it and at the
//! latest when the staging settles, so a resumed import has it too; a
//! staged blob whose record is missing is hashed again from its staged
//! bytes) and enters the store with the commit, before the manifest and
//! taken back with the rest if the commit fails
//! ([`crate::store::Store::commit`]): a refused import leaves no record
//! behind, and a served bundle has its records from its first answer.

use std::collections::{HashMap, VecDeque};
use std::path::Path;
use std::sync::mpsc::{Receiver, SyncSender, sync_channel};
use std::sync::{Arc, Mutex};
use std::thread::JoinHandle;

use llmgw_shared::manifest::Manifest;
use llmgw_shared::xet::{XetHasher, XetRecord};
use llmgw_shared::{Sha256, XetHash};

use super::error::ImportError;
use crate::store::{Store, StoreError};

/// How many buffers may wait for a blob's chunker: the check never waits
/// for it unless it falls this far behind.
const QUEUE: usize = 16;

/// How many chunkers may still be running for blobs the check has kept
/// and moved past: beyond that, the check waits for the oldest. Two keeps
/// both cores busy on a lagging chunker without piling up threads.
const BEHIND: usize = 2;

/// Blob sha256 -> its chunker, given every byte, before the blob's verdict.
type Finished = Arc<Mutex<HashMap<String, JoinHandle<XetRecord>>>>;

/// What one import makes: which blobs get a record, and the records of
/// blobs whose bytes are all read.
#[derive(Default)]
pub(super) struct XetRecords {
    /// The sha256s of the bundle's LFS Hub files, and their sizes.
    wanted: HashMap<String, u64>,
    finished: Finished,
    /// The chunkers of blobs kept whose records are not written yet,
    /// oldest first.
    kept: VecDeque<(String, JoinHandle<XetRecord>)>,
}

impl XetRecords {
    /// For the LFS files of `m`'s Hub repositories.
    pub(super) fn of(m: &Manifest) -> Self {
        let wanted = m
            .repos
            .iter()
            .flat_map(|r| &r.files)
            .filter(|f| f.lfs)
            .map(|f| (f.sha256.to_string(), f.size))
            .collect();
        Self {
            wanted,
            finished: Finished::default(),
            kept: VecDeque::new(),
        }
    }

    /// A chunker for blob `sha256`, or none when it gets no record.
    pub(super) fn hasher(&self, sha256: &str) -> Option<XetSink> {
        if !self.wanted.contains_key(sha256) {
            return None;
        }
        let (tx, rx) = sync_channel::<Vec<u8>>(QUEUE);
        let thread = std::thread::Builder::new()
            .name("llmgw-xet".into())
            .spawn(move || chunk(rx))
            .ok()?;
        Some(XetSink {
            sha256: sha256.to_string(),
            tx: Some(tx),
            thread: Some(thread),
            finished: self.finished.clone(),
        })
    }

    /// The blob's bytes hashed to its name: its record will wait beside it
    /// in the staging folder `dir`, once its chunker ends (the oldest
    /// chunker is waited for here when more than [`BEHIND`] are running).
    pub(super) fn keep(&mut self, dir: &Path, sha256: &str) -> Result<(), StoreError> {
        let chunker = self.finished.lock().ok().and_then(|mut f| f.remove(sha256));
        if let Some(chunker) = chunker {
            self.kept.push_back((sha256.to_string(), chunker));
        }
        while self.kept.len() > BEHIND {
            self.write_oldest(dir)?;
        }
        Ok(())
    }

    /// Waits for every kept blob's chunker and writes its record: after
    /// this, every record of this import is in `dir`.
    pub(super) fn settle(&mut self, dir: &Path) -> Result<(), StoreError> {
        while !self.kept.is_empty() {
            self.write_oldest(dir)?;
        }
        Ok(())
    }

    fn write_oldest(&mut self, dir: &Path) -> Result<(), StoreError> {
        let Some((sha256, chunker)) = self.kept.pop_front() else {
            return Ok(());
        };
        match chunker.join() {
            // Not synced: a record a crash cut short does not read back
            // for its blob and is made again from the staged blob
            // (`staged`), so a sync per file (a hundred thousand for a
            // dataset of small files) would buy nothing.
            Ok(record) => {
                let at = staged(dir, &sha256);
                std::fs::write(&at, record.encode()).map_err(|e| StoreError::io(&at, e))
            }
            // The chunker panicked: no record; the file is hashed again
            // from its staged bytes (`file_hash`).
            Err(_) => Ok(()),
        }
    }

    /// The records staged in `dir` of the bundle's files the store has
    /// none for, for the commit to write ([`crate::store::Staged`]). A
    /// staged record that does not read back for its blob (cut short by a
    /// crash) is made again from the staged blob; only a blob that cannot
    /// be read is left out (that file is then served over plain HTTP only).
    pub(super) fn staged(&self, store: &Store, dir: &Path) -> Vec<(Sha256, XetRecord)> {
        let mut out = Vec::new();
        for (sha256, size) in &self.wanted {
            let Ok(sha) = Sha256::parse_exact("blob", sha256) else {
                continue;
            };
            if crate::store::xet::path(store, &sha).exists() {
                continue;
            }
            let record = crate::store::xet::read_at(staged(dir, sha256), *size)
                .or_else(|_| std::fs::File::open(dir.join(sha256)).and_then(XetHasher::of_reader));
            if let Ok(record) = record {
                out.push((sha, record));
            }
        }
        out
    }
}

/// Each Hub file whose Xet hash the manifest records (format 6, the Hub's
/// listing) against the hash of its bytes: the record made in this pass,
/// one staged by an earlier run, or the store's. A blob held from before
/// records existed is hashed now (a folder store's; its record is staged
/// for the commit too). A bucket store's blob held without a record is
/// not read back from the bucket: its sha256 was checked when it came.
pub(super) fn check_hub_hashes(store: &Store, dir: &Path, m: &Manifest) -> Result<(), ImportError> {
    for r in &m.repos {
        for f in &r.files {
            let Some(hub) = &f.xet_hash else { continue };
            let Some(computed) = file_hash(store, dir, &f.sha256, f.size)? else {
                continue;
            };
            if computed != *hub {
                return Err(ImportError::XetHash {
                    file: format!(
                        "{} {} at commit {} file {}",
                        r.kind.api_plural(),
                        r.id,
                        r.commit,
                        llmgw_shared::shown(&f.path)
                    ),
                    sha256: f.sha256.to_string(),
                    hub: hub.to_string(),
                    computed: computed.to_string(),
                });
            }
        }
    }
    Ok(())
}

/// The Xet hash of blob `sha256`'s bytes, from its record where one is at
/// hand, else from the staged or held blob's bytes (its record then
/// staged).
fn file_hash(
    store: &Store,
    dir: &Path,
    sha256: &Sha256,
    size: u64,
) -> Result<Option<XetHash>, ImportError> {
    let at = staged(dir, sha256.as_str());
    if let Ok(record) = crate::store::xet::read_at(at.clone(), size) {
        return Ok(Some(record.file_hash));
    }
    if let Some((_, hash)) = crate::store::xet::peek(store, sha256) {
        return Ok(Some(hash));
    }
    let staged_blob = dir.join(sha256.as_str());
    let blob = if staged_blob.exists() {
        staged_blob
    } else {
        store.blob_file(sha256)
    };
    let read = |source| ImportError::XetRead {
        path: blob.clone(),
        source,
    };
    let file = match std::fs::File::open(&blob) {
        Ok(f) => f,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(None),
        Err(e) => return Err(read(e)),
    };
    let record = XetHasher::of_reader(file).map_err(read)?;
    crate::store::fsutil::write_durable(&at, &record.encode())?;
    Ok(Some(record.file_hash))
}

/// Where blob `sha256`'s record waits in the staging folder `dir`.
fn staged(dir: &Path, sha256: &str) -> std::path::PathBuf {
    dir.join(format!("{sha256}.xet"))
}

fn chunk(rx: Receiver<Vec<u8>>) -> XetRecord {
    let mut h = XetHasher::new();
    for buf in rx {
        h.update_owned(buf);
    }
    h.finish()
}

/// One blob's chunker as it streams.
pub(super) struct XetSink {
    sha256: String,
    tx: Option<SyncSender<Vec<u8>>>,
    thread: Option<JoinHandle<XetRecord>>,
    finished: Finished,
}

impl XetSink {
    /// More of the blob's bytes.
    pub(super) fn update(&mut self, buf: &[u8]) {
        if let Some(tx) = &self.tx
            && tx.send(buf.to_vec()).is_err()
        {
            // The chunker is gone (it panicked): no record for this blob.
            self.tx = None;
        }
    }

    /// Every byte was given: the chunker finishes on its own while the
    /// check goes on, and waits for the blob's verdict
    /// ([`XetRecords::keep`]).
    pub(super) fn finish(mut self) {
        let Some(tx) = self.tx.take() else { return };
        drop(tx);
        if let Some(thread) = self.thread.take()
            && let Ok(mut f) = self.finished.lock()
        {
            f.insert(std::mem::take(&mut self.sha256), thread);
        }
    }
}

impl Drop for XetSink {
    /// A sink dropped before its end (the check stopped): the chunker is
    /// told to stop and its record thrown away.
    fn drop(&mut self) {
        self.tx.take();
    }
}
