//! Where an import of volumes puts what it verified, and what it remembers
//! between runs: `STORE/tmp/import-<manifest sha256>/` (the folder a plain
//! import stages into, so the same atomic publish takes it from there).
//!
//! Invariants:
//! - `<blob sha256>` in the folder is a whole blob that hashed to its name
//!   and was synced before it got that name; a plain import trusts exactly
//!   this, so the final publish reads nothing again.
//! - `<blob sha256>.part` holds a blob being assembled: each chunk written
//!   at its offset as it streams. Which chunks in it are verified is what
//!   `volumes.json` says, and it says so only after the chunk's bytes hashed
//!   right and were synced. A chunk not listed there is read again.
//!   "Hashed right" is its own digest, or — for chunks that streamed in
//!   order onto their blob's hash within one volume — the whole blob's
//!   publisher digest, which covers them all; where that does not match,
//!   each is hashed on its own from the `.part` before anything is said.
//! - `parity-<j>` is a parity shard that hashed to its recorded sha256.
//! - `volumes.json` is replaced whole (write, sync, rename, sync folder);
//!   a blob's hash state it carries covers only chunks it lists as
//!   verified ([`super::state`] checks so when it is read back).

use std::collections::{BTreeSet, HashMap};
use std::fs::File;
use std::os::unix::fs::PermissionsExt;
use std::path::{Path, PathBuf};

use llmgw_shared::BundleId;

use sha2::{Digest, Sha256};

use super::error::{StageError, StateError};
use super::index::{Slot, VolumeIndex, Which};
use super::read::{Running, SlotTarget, Verdict};
use super::recheck::Earlier;
use super::rehash::{Rehasher, hash_file, hash_range};
use super::state::{self, Resume, STATE_NAME, VolState};
use crate::store::fsutil;
use crate::store::{Store, StoreError};

/// The manifest and signature, kept as a small tar for the final publish.
pub const HEAD_NAME: &str = "head.tar";

pub struct Stage<'a> {
    pub store: &'a Store,
    pub dir: PathBuf,
    pub index: &'a VolumeIndex,
    pub state: VolState,
    /// Volumes found already whole when this run offered them again.
    pub repeated: Vec<Which>,
    /// Per chunked blob: the next chunk due in order and the hash of the
    /// chunks before it, as they streamed (in this run or, kept in the
    /// state, an earlier one) — so a blob whose chunks came in order is
    /// not read again to be hashed whole.
    running: HashMap<usize, (usize, Sha256)>,
    /// The chunk streaming now, if it is the next due of its blob.
    pending: Option<(Slot, Running)>,
    /// Chunks that went only onto their blob's running hash
    /// ([`Running::Defer`]): not verified — nor in the state — until the
    /// blob's digest vouches for them or each is hashed again.
    deferred: Vec<Slot>,
    /// The data volume being read, if it is one.
    reading: Option<u32>,
    /// Blobs whose chunks all came, not in order: hashed whole from their
    /// `.part` on a thread of their own while the next volume streams.
    rehash: Rehasher,
    /// Verified bytes whose writeback started, synced by [`Stage::save`]
    /// before the state that names them is written: chunk files, and whole
    /// blobs waiting for their staged name.
    unsynced: BTreeSet<PathBuf>,
    /// Bytes verified since the state was last saved.
    pub since_save: u64,
    to_seal: Vec<(PathBuf, PathBuf)>,
    /// What earlier runs verified: hashed again before it is published
    /// ([`super::recheck`]), never taken on their word.
    pub earlier: Earlier,
}

impl<'a> Stage<'a> {
    /// The staging of bundle `sha`, with what earlier runs verified
    /// ([`state::load`]: refused when its state file is damaged).
    pub fn open(
        store: &'a Store,
        sha: &BundleId,
        index: &'a VolumeIndex,
    ) -> Result<Self, StateError> {
        let dir = store.tmp_dir().join(format!("import-{sha}"));
        let state = state::load(&dir, sha, index)?;
        // load() checked every state decodes.
        let running = state
            .running
            .iter()
            .filter_map(|(p, r)| r.hasher().map(|h| (*p, (r.next, h))))
            .collect();
        let earlier = Earlier {
            pieces: state.verified.clone(),
            blobs: (0..index.volumes.placements.len())
                .filter(|&p| {
                    let pl = &index.volumes.placements[p];
                    std::fs::metadata(dir.join(pl.sha256.as_str()))
                        .is_ok_and(|m| m.len() == pl.size)
                })
                .collect(),
        };
        Ok(Self {
            earlier,
            store,
            dir,
            index,
            state,
            repeated: Vec::new(),
            running,
            pending: None,
            deferred: Vec::new(),
            reading: None,
            rehash: Rehasher::default(),
            unsynced: BTreeSet::new(),
            since_save: 0,
            to_seal: Vec::new(),
        })
    }

    /// Syncs what was verified since the last save, gives whole blobs their
    /// staged names, then records the state.
    pub fn save(&mut self) -> Result<(), StoreError> {
        std::fs::create_dir_all(&self.dir).map_err(|e| StoreError::io(&self.dir, e))?;
        for p in std::mem::take(&mut self.unsynced) {
            match File::open(&p).and_then(|f| crate::store::fsutil::sync_file(&f)) {
                // Finished since: sealing it synced it.
                Err(e) if e.kind() == std::io::ErrorKind::NotFound => {}
                r => r.map_err(|e| StoreError::io(&p, e))?,
            }
        }
        self.since_save = 0;
        self.forget_deferred();
        for (from, to) in std::mem::take(&mut self.to_seal) {
            seal(&from, &to).map_err(|e| StoreError::io(&from, e))?;
        }
        self.state.running = self
            .running
            .iter()
            .map(|(p, (next, h))| (*p, Resume::of(*next, h)))
            .collect();
        let tmp = self.dir.join(format!("{STATE_NAME}.tmp"));
        let bytes = serde_json::to_vec(&self.state)
            .map_err(|e| StoreError::io(&tmp, std::io::Error::other(e)))?;
        fsutil::write_durable(&tmp, &bytes)?;
        let to = self.dir.join(STATE_NAME);
        std::fs::rename(&tmp, &to).map_err(|e| StoreError::io(&to, e))?;
        fsutil::fsync_dir(&self.dir)
    }

    /// A whole, verified blob: staged under its name, or in the store.
    pub fn blob_done(&self, placement: usize) -> bool {
        let p = &self.index.volumes.placements[placement];
        self.store.has_blob(&p.sha256, p.size)
            || std::fs::metadata(self.staged(&p.sha256)).is_ok_and(|m| m.len() == p.size)
    }

    pub fn staged(&self, sha: &str) -> PathBuf {
        self.dir.join(sha)
    }

    pub fn part(&self, sha: &str) -> PathBuf {
        self.dir.join(format!("{sha}.part"))
    }

    pub fn parity_file(&self, j: usize) -> PathBuf {
        self.dir.join(format!("parity-{j}"))
    }

    /// Whether every piece of data volume `v` is verified (now or before).
    pub fn volume_done(&self, v: u32) -> bool {
        self.index.per_volume[v as usize - 1].iter().all(|&(p, i)| {
            self.have(Slot::Piece {
                placement: p,
                piece: i,
            })
        })
    }

    /// Where a piece's bytes are now (for a parity rebuild): the staged
    /// blob, the store's, or the file being assembled.
    pub fn piece_source(&self, placement: usize) -> PathBuf {
        let sha = &self.index.volumes.placements[placement].sha256;
        let staged = self.staged(sha);
        if staged.exists() {
            return staged;
        }
        let held = self.store.blob_file(sha);
        if held.exists() {
            return held;
        }
        self.part(sha)
    }

    /// Drops chunks left unsettled (a volume that stopped on an error):
    /// a running hash over a chunk nobody checked must not vouch for it,
    /// so such a blob is hashed whole from its `.part` in the end, and the
    /// chunks, not being verified, are read again.
    fn forget_deferred(&mut self) {
        for slot in std::mem::take(&mut self.deferred) {
            if let Slot::Piece { placement, .. } = slot {
                self.running.remove(&placement);
            }
        }
    }

    /// Whether every chunk of `placement` from `piece` on comes later in
    /// the data volume being read, in order: then the blob's own digest,
    /// known before the volume ends, can vouch for them.
    fn rest_follows(&self, placement: usize, piece: usize) -> bool {
        let Some(v) = self.reading else {
            return false;
        };
        let order = &self.index.per_volume[v as usize - 1];
        let chunks = self.index.volumes.placements[placement].pieces.len();
        let mut after = 0;
        for i in piece..chunks {
            match order[after..].iter().position(|&e| e == (placement, i)) {
                Some(k) => after += k + 1,
                None => return false,
            }
        }
        true
    }

    /// Records a chunk as verified: synced before the next save, and named
    /// in the state by it.
    fn mark_verified(&mut self, placement: usize, piece: usize) {
        let p = &self.index.volumes.placements[placement];
        self.since_save += p.pieces[piece].size;
        self.unsynced.insert(self.part(&p.sha256));
        self.state.verified.insert((placement, piece));
    }

    /// Takes `placement`'s chunks out of the deferred list, in the order
    /// they came: whether the blob's digest vouched for them or each is
    /// hashed again, they are settled together and only once.
    fn take_deferred(&mut self, placement: usize) -> Vec<usize> {
        let mut pieces = Vec::new();
        self.deferred.retain(|s| match *s {
            Slot::Piece {
                placement: p,
                piece,
            } if p == placement => {
                pieces.push(piece);
                false
            }
            _ => true,
        });
        pieces
    }

    /// Hashes the deferred chunks of `placement` again from its `.part`,
    /// each against its own digest: the good ones are verified, the others
    /// named damaged — and then the blob's running hash, which covers
    /// them, is dropped (the blob is hashed whole from its `.part` once all
    /// its chunks are verified).
    fn settle_placement(&mut self, placement: usize) -> Result<Vec<Verdict>, StageError> {
        let part = self.part(&self.index.volumes.placements[placement].sha256);
        let mut verdicts = Vec::new();
        for piece in self.take_deferred(placement) {
            let slot = Slot::Piece { placement, piece };
            let want = &self.index.volumes.placements[placement].pieces[piece];
            let got =
                hash_range(&part, want.offset, want.size).map_err(|source| StageError::Read {
                    path: part.clone(),
                    source,
                })?;
            if got == want.sha256 {
                self.mark_verified(placement, piece);
                verdicts.push(Ok(slot));
            } else {
                let expected = want.sha256.clone();
                self.running.remove(&placement);
                let name = self.index.entry_name(slot);
                verdicts.push(Err((
                    slot,
                    format!("entry {name} hashes to sha256 {got}, expected {expected}"),
                )));
            }
        }
        Ok(verdicts)
    }

    /// Hashes a blob whose chunks are all verified, whole, against its
    /// sha256; on a match syncs it and gives it its staged name.
    pub fn finish_blob(&mut self, placement: usize) -> Result<bool, StageError> {
        let p = &self.index.volumes.placements[placement];
        let part = self.part(&p.sha256);
        // A running hash over chunks an earlier run verified vouches for
        // bytes as they streamed then, not as they are on disk now.
        let earlier = self.earlier.has_piece_of(placement);
        let got = match self.running.remove(&placement) {
            Some((next, h)) if next == p.pieces.len() && !earlier => hex::encode(h.finalize()),
            _ => match self.rehash.take(placement) {
                Some(hashed) => hashed,
                None => hash_file(&part),
            }
            .map_err(|source| StageError::Read {
                path: part.clone(),
                source,
            })?,
        };
        if got != p.sha256 {
            if earlier {
                // A chunk staged by an earlier run changed since: named.
                let (index, dir) = (self.index, &self.dir);
                super::recheck::chunks(index, dir, &mut self.state, &self.earlier, placement)?;
            }
            let p = &self.index.volumes.placements[placement];
            // Every chunk matched, yet the whole does not: forget the chunks,
            // and that their volumes were whole, so they are read again.
            for (i, piece) in p.pieces.iter().enumerate() {
                self.state.verified.remove(&(placement, i));
                self.state.whole.remove(&piece.volume);
            }
            let _ = std::fs::remove_file(&part);
            return Ok(false);
        }
        seal(&part, &self.staged(&p.sha256)).map_err(|e| StageError::write(&part, e))?;
        for i in 0..p.pieces.len() {
            self.state.verified.remove(&(placement, i));
        }
        Ok(true)
    }
}

/// Makes a verified file read-only, syncs it, and renames it.
fn seal(from: &Path, to: &Path) -> std::io::Result<()> {
    let f = File::open(from)?;
    f.set_permissions(std::fs::Permissions::from_mode(0o444))?;
    crate::store::fsutil::sync_file(&f)?;
    std::fs::rename(from, to)
}

impl SlotTarget for Stage<'_> {
    fn take_running(&mut self, slot: Slot) -> Option<Running> {
        match &self.pending {
            Some((s, _)) if *s == slot => self.pending.take().map(|(_, h)| h),
            _ => None,
        }
    }

    fn streamed(&mut self, slot: Slot, running: Sha256) {
        self.pending = Some((slot, Running::Continue(running)));
    }

    fn deferred(&mut self, slot: Slot, running: Sha256) -> Result<Vec<Verdict>, StageError> {
        let Slot::Piece { placement, piece } = slot else {
            return Ok(Vec::new());
        };
        self.deferred.push(slot);
        let p = &self.index.volumes.placements[placement];
        if piece + 1 < p.pieces.len() {
            self.running.insert(placement, (piece + 1, running));
            return Ok(Vec::new());
        }
        // The blob's last chunk: its digest vouches for every chunk it
        // covers, or each is checked on its own.
        let vouched = hex::encode(running.clone().finalize()) == p.sha256;
        self.running.insert(placement, (piece + 1, running));
        if !vouched {
            // A damaged chunk drops the running hash. Where every chunk is
            // good, the hash carried from before them was wrong: it stays,
            // so the blob fails whole in `finish_blob` and its volumes are
            // read again, as for any blob whose chunks match but whole does
            // not.
            return self.settle_placement(placement);
        }
        let mut verdicts = Vec::new();
        for piece in self.take_deferred(placement) {
            self.mark_verified(placement, piece);
            verdicts.push(Ok(Slot::Piece { placement, piece }));
        }
        Ok(verdicts)
    }

    fn settle(&mut self) -> Result<Vec<Verdict>, StageError> {
        let mut placements: Vec<usize> = self
            .deferred
            .iter()
            .filter_map(|s| match s {
                Slot::Piece { placement, .. } => Some(*placement),
                Slot::Parity(_) => None,
            })
            .collect();
        placements.sort_unstable();
        placements.dedup();
        let mut verdicts = Vec::new();
        for p in placements {
            verdicts.extend(self.settle_placement(p)?);
        }
        Ok(verdicts)
    }

    fn start(&mut self, which: Which) -> bool {
        self.forget_deferred();
        self.reading = match which {
            Which::Data(v) => Some(v),
            Which::Parity(_) => None,
        };
        let whole = match which {
            Which::Data(v) => self.state.whole.contains(&v) || self.volume_done(v),
            Which::Parity(j) => self.state.whole_parity.contains(&j),
        };
        if whole {
            self.repeated.push(which);
        }
        !whole
    }

    fn have(&self, slot: Slot) -> bool {
        match slot {
            Slot::Piece { placement, piece } => {
                self.state.verified.contains(&(placement, piece)) || self.blob_done(placement)
            }
            Slot::Parity(j) => self.parity_file(j).exists(),
        }
    }

    fn begin(&mut self, slot: Slot) -> Result<Option<(File, u64)>, StageError> {
        std::fs::create_dir_all(&self.dir).map_err(|e| StageError::write(&self.dir, e))?;
        self.pending = None;
        if let Slot::Piece { placement, piece } = slot
            && self.index.volumes.placements[placement].pieces.len() > 1
        {
            match self.running.get(&placement) {
                Some((next, h)) if *next == piece => {
                    let how = if self.rest_follows(placement, piece) {
                        Running::Defer(h.clone())
                    } else {
                        Running::Continue(h.clone())
                    };
                    self.pending = Some((slot, how));
                }
                None if piece == 0 => self.pending = Some((slot, Running::Fresh)),
                _ => {}
            }
        }
        let (path, offset, size) = match slot {
            Slot::Piece { placement, piece } => {
                let p = &self.index.volumes.placements[placement];
                (self.part(&p.sha256), p.pieces[piece].offset, p.size)
            }
            Slot::Parity(j) => {
                let size = self.index.expect(slot).1;
                (self.dir.join(format!("parity-{j}.part")), 0, size)
            }
        };
        let f = fsutil::open_keeping(&path).map_err(|e| StageError::write(&path, e))?;
        let len = f.metadata().map_err(|e| StageError::write(&path, e))?.len();
        if len != size {
            f.set_len(size).map_err(|e| StageError::write(&path, e))?;
        }
        Ok(Some((f, offset)))
    }

    fn verified(&mut self, slot: Slot, file: Option<File>) -> Result<(), StageError> {
        if let Some(f) = file {
            fsutil::start_writeback(&f);
        }
        self.since_save += self.index.expect(slot).1;
        match slot {
            Slot::Piece { placement, piece } => {
                let p = &self.index.volumes.placements[placement];
                if p.pieces.len() == 1 {
                    // The piece is the blob: verified whole; named once synced.
                    let (part, staged) = (self.part(&p.sha256), self.staged(&p.sha256));
                    self.to_seal.push((part, staged));
                } else {
                    self.unsynced.insert(self.part(&p.sha256));
                    self.state.verified.insert((placement, piece));
                    if let Some((s, Running::Continue(h))) = self.pending.take()
                        && s == slot
                    {
                        self.running.insert(placement, (piece + 1, h));
                    }
                    let chunks = p.pieces.len();
                    let in_order = self.running.get(&placement).is_some_and(|r| r.0 == chunks);
                    if !in_order
                        && !self.rehash.has(placement)
                        && (0..chunks).all(|i| self.state.verified.contains(&(placement, i)))
                    {
                        self.rehash.submit(placement, self.part(&p.sha256));
                    }
                }
            }
            Slot::Parity(j) => {
                let part = self.dir.join(format!("parity-{j}.part"));
                seal(&part, &self.parity_file(j)).map_err(|e| StageError::write(&part, e))?;
            }
        }
        Ok(())
    }
}
