//! Reading one volume file: its manifest checked against the bundle's
//! hash, then each entry matched to the slot the manifest places there,
//! hashed as it streams and, for import, written at its offset into the
//! blob it belongs to.
//!
//! Invariant: a slot counts as verified only when its entry came where the
//! manifest places it, with the declared size, and its bytes hashed to the
//! sha256 the manifest records; every other outcome is reported by name
//! (damaged, missing, out of place, cut short) and verifies nothing.

use std::fs::File;
use std::io::Read;
use std::os::unix::fs::FileExt;
use std::path::Path;

use llmgw_shared::manifest::{MANIFEST_NAME, MAX_MANIFEST_BYTES, SIGNATURE_NAME};
use llmgw_shared::shown;
use sha2::{Digest, Sha256};

use super::error::StageError;
pub use super::error::{NotVolume, VolumeError};
use super::index::{Slot, VolumeIndex, Which};
use crate::bundle::reader::{self, EntryHead, EntryKind, ReadError};
use crate::bundle::verify::{BlobSink, VerifyError};
use llmgw_shared::progress::Progress;

/// Where the bytes of a slot go, and what becomes of them.
pub trait SlotTarget {
    /// The volume was identified; `false` skips the rest of it (already
    /// taken in).
    fn start(&mut self, which: Which) -> bool;
    /// Where to write a slot's bytes (file and offset), if anywhere;
    /// `None` also when the slot is verified already (then it is skipped).
    fn begin(&mut self, slot: Slot) -> Result<Option<(File, u64)>, StageError>;
    /// Whether the slot is verified already (its bytes are not read).
    fn have(&self, slot: Slot) -> bool;
    /// The slot's bytes hashed right (`file` holds them): keep them.
    fn verified(&mut self, slot: Slot, file: Option<File>) -> Result<(), StageError>;
    /// Whether the slot's bytes also go on the running hash of its blob
    /// (the chunks before it came in order), handed back by
    /// [`SlotTarget::streamed`].
    fn take_running(&mut self, _slot: Slot) -> Option<Running> {
        None
    }
    /// The running hash, now over the slot's bytes too (not yet verified).
    fn streamed(&mut self, _slot: Slot, _running: Sha256) {}
    /// A slot handed out as [`Running::Defer`] streamed: `running` is its
    /// blob's hash over it. Answers the slots this settles (verified, or
    /// damaged and why) — none until its blob's last chunk is in.
    fn deferred(&mut self, _slot: Slot, _running: Sha256) -> Result<Vec<Verdict>, StageError> {
        Ok(Vec::new())
    }
    /// The volume ends: every deferred slot not settled yet is settled now
    /// (hashed again from where it was written).
    fn settle(&mut self) -> Result<Vec<Verdict>, StageError> {
        Ok(Vec::new())
    }
}

/// What became of a slot whose check was deferred: verified, or damaged
/// and why.
pub type Verdict = Result<Slot, (Slot, String)>;

/// The running hash of a chunked blob, for the chunk streaming now.
pub enum Running {
    /// The blob's first chunk: the chunk's own hash state is the blob's.
    Fresh,
    /// The blob's hash over the chunks before this one, to go on with.
    Continue(Sha256),
    /// As `Continue`, and every chunk left of the blob comes later in this
    /// same volume, in order: the chunk goes on the blob's hash only, and
    /// its own digest is not taken as it streams. The blob's digest, known
    /// at its last chunk, vouches for every chunk it covers; where it does
    /// not match (or the volume stops first) each such chunk is hashed
    /// again from the staging file against its own digest
    /// ([`SlotTarget::deferred`], [`SlotTarget::settle`]), so a damaged one
    /// is still named. One SHA-256 pass over the bytes instead of two.
    Defer(Sha256),
}

/// Start writing dirty pages back this often, as a plain import does, so
/// the sync before the state is saved waits for little.
const WRITEBACK_EVERY: u64 = 32 << 20;

/// Writes a slot's bytes at their offset (on the streaming writer thread).
struct AtOffset {
    file: File,
    at: u64,
    /// Bytes written since writeback was last started.
    unflushed: u64,
}

impl BlobSink for AtOffset {
    fn write(&mut self, buf: &[u8]) -> Result<(), crate::bundle::verify::VerifyError> {
        self.file.write_all_at(buf, self.at).map_err(|source| {
            crate::bundle::verify::VerifyError::ReadEntry {
                entry: "a staged piece".into(),
                source,
            }
        })?;
        self.at += buf.len() as u64;
        self.unflushed += buf.len() as u64;
        if self.unflushed >= WRITEBACK_EVERY {
            crate::store::fsutil::start_writeback(&self.file);
            self.unflushed = 0;
        }
        Ok(())
    }

    fn finish(self: Box<Self>) -> Result<(), crate::bundle::verify::VerifyError> {
        Ok(())
    }
}

/// What reading one volume found.
#[derive(Debug, Default)]
pub struct VolumeRead {
    pub which: Option<Which>,
    /// Verified now.
    pub ok: Vec<Slot>,
    /// Verified before, not read again.
    pub had: Vec<Slot>,
    /// Slots whose entry came damaged: (slot, what was wrong).
    pub damaged: Vec<(Slot, String)>,
    /// Slots the volume should hold and did not (it was cut short, or an
    /// entry was not where the manifest places it).
    pub missing: Vec<Slot>,
    /// Why the volume's stream stopped early, if it did.
    pub broken: Option<String>,
    /// The target had it already.
    pub skipped: bool,
    /// The `manifest.json.minisig` it carries.
    pub signature: Option<Vec<u8>>,
    pub bytes_read: u64,
}

impl VolumeRead {
    /// Records what deferred checks came to.
    fn take(&mut self, settled: Vec<Verdict>) {
        for v in settled {
            match v {
                Ok(slot) => self.ok.push(slot),
                Err(damaged) => self.damaged.push(damaged),
            }
        }
    }

    /// Whether every slot of the volume is verified (now or before).
    pub fn whole(&self) -> bool {
        self.which.is_some()
            && self.damaged.is_empty()
            && self.missing.is_empty()
            && self.broken.is_none()
    }
}

enum Flow {
    Fatal(VolumeError),
    Stop,
}

impl From<ReadError> for Flow {
    fn from(e: ReadError) -> Self {
        Flow::Fatal(e.into())
    }
}

/// Reads the volume at `path` of the bundle whose manifest hashes to
/// `expected`, in phases: its manifest checked, its signature kept, the
/// volume identified by its first piece, then each entry placed against the
/// slot the manifest puts there and streamed; last, what is left settled.
pub fn read_volume(
    path: &Path,
    expected: &str,
    index: &VolumeIndex,
    target: &mut dyn SlotTarget,
    progress: &dyn Progress,
) -> Result<VolumeRead, VolumeError> {
    let mut volume = Volume {
        path,
        expected,
        index,
        target,
        progress,
        out: VolumeRead::default(),
        seen_manifest: false,
        after: 0,
        todo: Vec::new(),
    };
    let r = reader::for_each_entry(path, |head, data: &mut dyn Read| volume.entry(head, data));
    volume.finish(r)
}

/// One volume being read: what it was asked, and what it found so far.
struct Volume<'a> {
    path: &'a Path,
    expected: &'a str,
    index: &'a VolumeIndex,
    target: &'a mut dyn SlotTarget,
    progress: &'a dyn Progress,
    out: VolumeRead,
    seen_manifest: bool,
    /// Entries read after the manifest.
    after: usize,
    /// The slots still to come, the next one last.
    todo: Vec<Slot>,
}

impl Volume<'_> {
    fn not_volume(&self, reason: NotVolume) -> Flow {
        Flow::Fatal(VolumeError::NotAVolume {
            path: self.path.to_path_buf(),
            reason,
        })
    }

    fn unreadable(&self, entry: &'static str, source: std::io::Error) -> Flow {
        Flow::Fatal(VolumeError::Unreadable {
            path: self.path.to_path_buf(),
            entry,
            source,
        })
    }

    /// One entry, to the phase it belongs to.
    fn entry(&mut self, head: &EntryHead, data: &mut dyn Read) -> Result<(), Flow> {
        if !self.seen_manifest {
            return self.manifest(head, data);
        }
        self.after += 1;
        if head.path == SIGNATURE_NAME && self.after == 1 {
            return self.signature(head, data);
        }
        let slot = self.index.slot(&head.path);
        if self.out.which.is_none() {
            self.identify(head, slot)?;
        }
        let want = self.place(head, slot)?;
        self.piece(head, data, want)
    }

    /// The first entry: the bundle's manifest, hashing to `expected`.
    fn manifest(&mut self, head: &EntryHead, data: &mut dyn Read) -> Result<(), Flow> {
        if head.path != MANIFEST_NAME || head.kind != EntryKind::File {
            return Err(self.not_volume(NotVolume::FirstEntry(head.path.clone())));
        }
        if head.size > MAX_MANIFEST_BYTES {
            return Err(self.not_volume(NotVolume::ManifestTooBig(head.size)));
        }
        let mut bytes = Vec::new();
        data.take(MAX_MANIFEST_BYTES)
            .read_to_end(&mut bytes)
            .map_err(|source| self.unreadable(MANIFEST_NAME, source))?;
        let found = llmgw_shared::sha256_hex(&bytes);
        if found != self.expected {
            return Err(Flow::Fatal(VolumeError::OtherBundle {
                path: self.path.to_path_buf(),
                found,
                expected: self.expected.to_string(),
            }));
        }
        self.seen_manifest = true;
        Ok(())
    }

    /// The manifest's signature, right after it.
    fn signature(&mut self, head: &EntryHead, data: &mut dyn Read) -> Result<(), Flow> {
        let max = crate::store::series::MAX_SIGNATURE_BYTES;
        if head.size > max {
            return Err(self.not_volume(NotVolume::SignatureTooBig {
                size: head.size,
                max,
            }));
        }
        let mut sig = Vec::new();
        data.take(max)
            .read_to_end(&mut sig)
            .map_err(|source| self.unreadable(SIGNATURE_NAME, source))?;
        self.out.signature = Some(sig);
        Ok(())
    }

    /// The first piece names the volume, and so the slots to come.
    fn identify(&mut self, head: &EntryHead, slot: Option<Slot>) -> Result<(), Flow> {
        let Some(slot) = slot else {
            return Err(self.not_volume(NotVolume::Unplaced(head.path.clone())));
        };
        let which = self.index.which(slot);
        self.out.which = Some(which);
        self.todo = self.index.expected(which);
        self.todo.reverse();
        if !self.target.start(which) {
            self.out.skipped = true;
            return Err(Flow::Stop);
        }
        Ok(())
    }

    /// The slot this entry must be: the next one the manifest places here.
    fn place(&mut self, head: &EntryHead, slot: Option<Slot>) -> Result<Slot, Flow> {
        let Some(want) = self.todo.pop() else {
            self.out.broken = Some(format!(
                "entry {} comes after the last piece the manifest places in it",
                shown(&head.path)
            ));
            return Err(Flow::Stop);
        };
        if slot != Some(want) || head.kind != EntryKind::File {
            self.out.broken = Some(format!(
                "entry {} ({}) is where the manifest places {}",
                shown(&head.path),
                head.kind.describe(),
                self.index.entry_name(want)
            ));
            self.todo.push(want);
            return Err(Flow::Stop);
        }
        Ok(want)
    }

    /// A placed piece: its size checked, then its bytes streamed to where
    /// the target wants them, unless the target has them already.
    fn piece(&mut self, head: &EntryHead, data: &mut dyn Read, want: Slot) -> Result<(), Flow> {
        let (sha, size) = self.index.expect(want);
        if head.size != size {
            self.out.damaged.push((
                want,
                format!(
                    "entry {} is {} bytes, the manifest says {size}",
                    head.path, head.size
                ),
            ));
            return Ok(());
        }
        if self.target.have(want) {
            self.out.had.push(want);
            return Ok(());
        }
        let dest = self
            .target
            .begin(want)
            .map_err(|e| Flow::Fatal(VolumeError::Stage(e)))?;
        self.progress.started(&head.path, size);
        let running = self.target.take_running(want);
        let sink: Option<Box<dyn BlobSink>> = match &dest {
            None => None,
            Some((f, at)) => Some(Box::new(AtOffset {
                file: f
                    .try_clone()
                    .map_err(|e| Flow::Fatal(VolumeError::Stage(StageError::Reopen(e))))?,
                at: *at,
                unflushed: 0,
            })),
        };
        let (carried, fresh) = match running {
            Some(Running::Defer(h)) => return self.deferred(head, data, sink, want, h),
            Some(Running::Continue(h)) => (Some(h), false),
            Some(Running::Fresh) => (None, true),
            None => (None, false),
        };
        // A chunk that comes in order also goes on its blob's hash, on a
        // thread of its own beside the chunk's (see stream_blob_hashed).
        let (state, blob) = crate::bundle::verify::stream_blob_hashed(
            &head.path,
            data,
            sink,
            None,
            carried,
            self.progress,
        )
        .map_err(|e| self.cut(head, want, &e))?;
        self.out.bytes_read += size;
        if fresh {
            self.target.streamed(want, state.clone());
        } else if let Some(h) = blob {
            self.target.streamed(want, h);
        }
        let got = hex::encode(state.finalize());
        if got == sha {
            self.target
                .verified(want, dest.map(|d| d.0))
                .map_err(|e| Flow::Fatal(VolumeError::Stage(e)))?;
            self.out.ok.push(want);
        } else {
            self.out.damaged.push((
                want,
                format!("entry {} hashes to sha256 {got}, expected {sha}", head.path),
            ));
        }
        Ok(())
    }

    /// A chunk whose own check waits for its blob's ([`Running::Defer`]).
    fn deferred(
        &mut self,
        head: &EntryHead,
        data: &mut dyn Read,
        sink: Option<Box<dyn BlobSink>>,
        want: Slot,
        start: Sha256,
    ) -> Result<(), Flow> {
        let running =
            crate::bundle::verify::stream_blob_onto(&head.path, data, sink, start, self.progress)
                .map_err(|e| self.cut(head, want, &e))?;
        self.out.bytes_read += self.index.expect(want).1;
        let settled = self
            .target
            .deferred(want, running)
            .map_err(|e| Flow::Fatal(VolumeError::Stage(e)))?;
        self.out.take(settled);
        Ok(())
    }

    /// The volume's stream broke inside a piece: it is damaged, and the
    /// volume stops there.
    fn cut(&mut self, head: &EntryHead, want: Slot, e: &VerifyError) -> Flow {
        let e = llmgw_shared::chain(e);
        self.out.broken = Some(format!("reading entry {}: {e}", head.path));
        self.out.damaged.push((want, format!("unreadable: {e}")));
        Flow::Stop
    }

    /// After the last entry: deferred chunks settled, the slots that never
    /// came named missing.
    fn finish(mut self, r: Result<reader::BundleFormat, Flow>) -> Result<VolumeRead, VolumeError> {
        match r {
            Ok(_) | Err(Flow::Stop) => {}
            Err(Flow::Fatal(VolumeError::Read(e))) if self.seen_manifest => {
                self.out.broken = Some(llmgw_shared::chain(&e));
            }
            Err(Flow::Fatal(e)) => return Err(e),
        }
        // Chunks whose blob did not end in this volume are checked now.
        self.out
            .take(self.target.settle().map_err(VolumeError::Stage)?);
        if !self.seen_manifest {
            return Err(VolumeError::NotAVolume {
                path: self.path.to_path_buf(),
                reason: NotVolume::Empty,
            });
        }
        let mut out = self.out;
        if out.which.is_none() && out.broken.is_none() {
            out.broken = Some("it holds no piece after the manifest".into());
        }
        if !out.skipped {
            self.todo.reverse();
            out.missing = self.todo;
        }
        Ok(out)
    }
}
