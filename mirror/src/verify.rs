//! The checks every bundle must pass before anything of it is used, in the
//! order the bundle format promises:
//!
//! 1. The first entry is `manifest.json`, no larger than
//!    [`MAX_MANIFEST_BYTES`]; its sha256 is the one the operator was given;
//!    it parses, its format version is known and every name in it is safe.
//! 2. Every signed release (llmgw's own) has its `SHA256SUMS.minisig`
//!    verified with a trusted key, and its `SHA256SUMS` agrees with the
//!    manifest about every asset of that release.
//! 3. Every later entry is a regular file `blobs/sha256/<64 hex>` that the
//!    manifest names, of the declared size, whose bytes hash to its name;
//!    anything else (links, devices, stray directories or files,
//!    duplicates) is refused. Blobs the bundle lacks must be at hand already.
//!
//! The signature files are ordinary blobs, and blobs come in hash order, so
//! they may arrive after other blobs. Rather than read the bundle twice,
//! the check streams every blob once into the caller's [`Target`] — for an
//! import, a private staging folder under `STORE/tmp/` that is never served
//! — and verifies the signature as soon as both files have passed (or at
//! once, when the store already holds them). A blob only becomes *accepted*
//! (visible in `blobs/`) after this whole check has succeeded, so no blob
//! is accepted before its bundle's signature was checked; see
//! [`crate::import`].

use std::collections::{BTreeMap, BTreeSet};
use std::io::{self, Read};
use std::path::{Path, PathBuf};

use llmgw_shared::manifest::{
    BLOB_DIR, MANIFEST_NAME, MAX_MANIFEST_BYTES, Manifest, ManifestError, SIGNATURE_NAME,
};
use llmgw_shared::names::{self, UnsafeName};
use llmgw_shared::shown::{shown, shown_message};
use llmgw_shared::signing::PublicKey;
use sha2::{Digest, Sha256};
use thiserror::Error;

use crate::bundle_reader::{self, BundleFormat, CHUNK, EntryHead, EntryKind, ReadError};
use crate::progress::Progress;
use crate::signed::{Pending, SignedError, SignedRelease};

/// Why a bundle was refused. Each message names the entry, what was
/// expected and what was found.
#[derive(Debug, Error)]
pub enum VerifyError {
    #[error(transparent)]
    Read(#[from] ReadError),
    #[error("reading {entry} from the bundle: {source}")]
    ReadEntry { entry: String, source: io::Error },
    #[error(
        "the first entry of the bundle must be manifest.json, found {} ({kind}); \
         this is not an llmgw bundle, or its entries were reordered",
        shown(.found)
    )]
    FirstEntry { found: String, kind: String },
    #[error("manifest.json is {actual} bytes; at most {max} are accepted")]
    ManifestTooLarge { actual: u64, max: u64 },
    #[error(
        "manifest.json hashes to sha256 {actual}, but the expected bundle hash (--sha256) is \
         {expected}: this is not the bundle whose hash you were given (damaged, tampered with, \
         or the wrong file); do not import it"
    )]
    ManifestHash { expected: String, actual: String },
    // The parser may quote the manifest (an unknown field's name): escaped.
    #[error("{}", shown_message(&.0.to_string()))]
    Manifest(#[from] ManifestError),
    #[error("bundle entry: {0}")]
    UnsafeEntry(UnsafeName),
    #[error(
        "bundle entry {} is a {kind}; a bundle holds only regular files \
         (manifest.json and blobs/sha256/<sha256>)",
        shown(.entry)
    )]
    EntryType { entry: String, kind: String },
    #[error(
        "bundle entry {} is a directory; the only directories a bundle may hold are \
         blobs and blobs/sha256",
        shown(.entry)
    )]
    UnexpectedDir { entry: String },
    #[error(
        "bundle entry {} is not part of the bundle format (expected only manifest.json \
         and blobs/sha256/<64 lower-case hex>); refusing a bundle with extra files",
        shown(.entry)
    )]
    UnknownEntry { entry: String },
    #[error(
        "bundle entry {entry} is a blob the manifest does not name; refusing a bundle with \
         extra content"
    )]
    UnlistedBlob { entry: String },
    #[error(
        "bundle entry {SIGNATURE_NAME} ({size} bytes) is not where a bundle's signature goes: \
         the second entry, right after manifest.json, at most {max} bytes"
    )]
    MisplacedSignature { size: u64, max: u64 },
    #[error(
        "the bundle is signed, and a signed bundle is checked (signature, series) before the \
         rest is read, which a pipe does not allow; import it from a file"
    )]
    UncheckedSignature,
    #[error("bundle entry {} appears twice in the bundle", shown(.entry))]
    Duplicate { entry: String },
    #[error(
        "bundle entry {entry} ({what}) is {actual} bytes, but the manifest declares {expected} \
         bytes"
    )]
    SizeMismatch {
        entry: String,
        what: String,
        expected: u64,
        actual: u64,
    },
    #[error(
        "bundle entry {entry} ({what}) is damaged: its bytes hash to sha256 {actual}, expected \
         {expected} (its name)"
    )]
    HashMismatch {
        entry: String,
        what: String,
        expected: String,
        actual: String,
    },
    #[error(
        "the bundle lacks {count} blob(s) the manifest names and nothing already verified holds \
         (for import: the store): {list}; import the bundle that carries them first, or use a \
         complete bundle"
    )]
    Missing { count: usize, list: String },
    /// A delta whose prerequisites the store lacks: refused before
    /// anything was staged.
    #[error("{}", crate::have::missing_message(.0))]
    Prerequisites(Box<llmgw_shared::have::NeedList>),
    #[error(transparent)]
    Signed(#[from] SignedError),
    #[error("{}", stage_message(path, source))]
    Stage { path: PathBuf, source: io::Error },
    #[error(
        "not enough free space to import: {needed} bytes of blobs must be staged under {path}, \
         and its filesystem has {available} bytes free; free space (or run `llmgw mirror gc`) \
         and import again; the store is unchanged"
    )]
    NoSpace {
        path: PathBuf,
        needed: u64,
        available: u64,
    },
    #[error("{0}")]
    Target(String),
}

impl VerifyError {
    /// The same error; a release signed by an untrusted key now says how
    /// to trust one in the words of the command at hand (`bundle verify
    /// --trust`, `bundle trust add` for import).
    pub fn with_trust_fix(self, fix: impl Into<String>) -> Self {
        match self {
            VerifyError::Signed(SignedError::Signing { release, source }) => {
                VerifyError::Signed(SignedError::Signing {
                    release,
                    source: source.with_fix(fix),
                })
            }
            other => other,
        }
    }
}

fn stage_message(path: &Path, e: &io::Error) -> String {
    if crate::fsutil::is_disk_full(e) {
        format!(
            "the disk filled up while writing {}: {e}; the import stopped and the store is \
             unchanged: free space on the store's filesystem and run the import again",
            path.display()
        )
    } else {
        format!(
            "writing {}: {e}; the import stopped and the store is unchanged",
            path.display()
        )
    }
}

/// Where checked blobs go: a staging folder for import, nowhere for verify.
pub trait Target {
    /// Whether a verified copy of this blob is already at hand (in the
    /// store, or staged by an earlier run of the same import).
    fn have(&self, sha256: &str, size: u64) -> bool;
    /// The bytes of a blob at hand (only asked for small signature files).
    fn read_have(&self, sha256: &str) -> Result<Vec<u8>, VerifyError>;
    /// Called once the manifest passed step 1, with the bytes still to be
    /// read. Returning `false` stops the check there (e.g. already imported).
    fn on_manifest(
        &mut self,
        _manifest: &Manifest,
        _bytes_to_read: u64,
    ) -> Result<bool, VerifyError> {
        Ok(true)
    }
    /// Whether a `manifest.json.minisig` entry was already checked (import
    /// checks it, and the signed series, before this pass). An import that
    /// could not look ahead (a pipe) refuses a signed bundle rather than
    /// take it unchecked.
    fn signature_checked(&self) -> bool {
        true
    }
    /// Whether a delta's prerequisites are checked here (an import: in
    /// [`Target::on_manifest`], against the store). `bundle verify` has no
    /// store: it checks what the bundle carries and lists the rest.
    fn checks_prerequisites(&self) -> bool {
        true
    }
    /// Starts a blob; returns where to write its bytes, if anywhere.
    fn begin(&mut self, sha256: &str) -> Result<Option<Box<dyn BlobSink>>, VerifyError>;
    /// The blob's bytes hashed to its name and its sink was finished: keep it.
    fn keep(&mut self, sha256: &str) -> Result<(), VerifyError>;
    /// The blob was refused or the check stopped: drop what was written.
    fn discard(&mut self, sha256: &str);
}

/// Where one blob's bytes are written. It runs on its own thread, so that
/// writing one chunk overlaps reading and hashing the next.
pub trait BlobSink: Send {
    fn write(&mut self, buf: &[u8]) -> Result<(), VerifyError>;
    /// Every byte was written: make them durable.
    fn finish(self: Box<Self>) -> Result<(), VerifyError>;
}

/// Hashes and forgets: the target of `llmgw bundle verify`.
pub struct HashOnly;

impl Target for HashOnly {
    fn have(&self, _: &str, _: u64) -> bool {
        false
    }
    fn checks_prerequisites(&self) -> bool {
        false
    }
    fn read_have(&self, sha256: &str) -> Result<Vec<u8>, VerifyError> {
        Err(VerifyError::Target(format!("blob {sha256} is not at hand")))
    }
    fn begin(&mut self, _: &str) -> Result<Option<Box<dyn BlobSink>>, VerifyError> {
        Ok(None)
    }
    fn keep(&mut self, _: &str) -> Result<(), VerifyError> {
        Ok(())
    }
    fn discard(&mut self, _: &str) {}
}

/// What a successful check proved.
#[derive(Debug, Clone)]
pub struct Verified {
    pub manifest_sha256: String,
    pub manifest: Manifest,
    /// The manifest's exact bytes (what `bundles/<sha>.json` holds).
    pub manifest_bytes: Vec<u8>,
    pub format: BundleFormat,
    /// `(release, key id)` of each signed release, verified.
    pub signatures: Vec<(String, String)>,
    /// What each verified signature proves, for [`crate::claims`].
    pub signed: Vec<SignedRelease>,
    /// Blobs read from the bundle and hashed now.
    pub blobs_hashed: usize,
    pub bytes_hashed: u64,
    /// Blobs verified before (store or earlier staging), not read again.
    pub blobs_at_hand: usize,
    pub bytes_at_hand: u64,
    /// What this check could not prove because it is not in the bundle (a
    /// delta's prerequisites, without a store), in words.
    pub unchecked: Vec<String>,
}

/// How a check ended.
#[derive(Debug)]
pub enum Outcome {
    Verified(Box<Verified>),
    /// The target stopped the check after the manifest (see
    /// [`Target::on_manifest`]); only step 1 ran.
    Stopped {
        manifest_sha256: String,
        manifest: Box<Manifest>,
    },
}

/// A human name for each blob the manifest names: the first thing that
/// uses it ("ggml-org/llama.cpp b6123 llama-…tar.gz", "acme/tiny config.json").
pub fn blob_names(m: &Manifest) -> BTreeMap<String, String> {
    let mut out = BTreeMap::new();
    for r in &m.releases {
        for a in &r.assets {
            out.entry(a.sha256.clone())
                .or_insert_with(|| format!("{} {} {}", r.repo, r.tag, a.name));
        }
    }
    for r in &m.repos {
        for f in &r.files {
            out.entry(f.sha256.clone())
                .or_insert_with(|| format!("{} {}", r.id, f.path));
        }
    }
    out
}

/// Internal: a refusal, or the target's request to stop.
enum Flow {
    Refused(VerifyError),
    Stop,
}

impl From<ReadError> for Flow {
    fn from(e: ReadError) -> Self {
        Flow::Refused(VerifyError::Read(e))
    }
}

impl From<VerifyError> for Flow {
    fn from(e: VerifyError) -> Self {
        Flow::Refused(e)
    }
}

/// What step 1 established.
struct Checked {
    sha256: String,
    bytes: Vec<u8>,
    manifest: Manifest,
    blobs: BTreeMap<String, u64>,
    names: BTreeMap<String, String>,
    signed: Vec<Pending>,
}

/// Runs every check on the bundle at `path`, streaming its blobs into
/// `target`. `expected_sha256` is the manifest hash the operator carried;
/// `trusted` the keys a signed release must verify with.
pub fn check_bundle(
    path: &Path,
    expected_sha256: &str,
    trusted: &[PublicKey],
    target: &mut dyn Target,
    progress: &dyn Progress,
) -> Result<Outcome, VerifyError> {
    let mut state: Option<Checked> = None;
    let mut seen: BTreeSet<String> = BTreeSet::new();
    let mut stopped = false;
    // Entries after the manifest: the signature may only be the first.
    let mut after_manifest = 0usize;
    let mut hashed = (0usize, 0u64);
    let mut at_hand = (0usize, 0u64);

    let result = bundle_reader::for_each_entry(path, |head: &EntryHead, data: &mut dyn Read| {
        let Some(st) = state.as_mut() else {
            let st = check_manifest(head, data, expected_sha256, trusted, target)?;
            let to_read: u64 = st
                .blobs
                .iter()
                .filter(|(sha, size)| !target.have(sha, **size))
                .map(|(_, size)| size)
                .sum();
            if !target.on_manifest(&st.manifest, to_read)? {
                stopped = true;
                state = Some(st);
                return Err(Flow::Stop);
            }
            progress.begin(to_read);
            state = Some(st);
            return Ok(());
        };
        names::check_relative_path("bundle entry", &head.path).map_err(VerifyError::UnsafeEntry)?;
        after_manifest += 1;
        if head.path == SIGNATURE_NAME {
            // Its bytes were checked before this pass (crate::series).
            let max = crate::series::MAX_SIGNATURE_BYTES;
            if after_manifest != 1 || head.kind != EntryKind::File || head.size > max {
                return Err(VerifyError::MisplacedSignature {
                    size: head.size,
                    max,
                }
                .into());
            }
            if !target.signature_checked() {
                return Err(VerifyError::UncheckedSignature.into());
            }
            return Ok(());
        }
        match &head.kind {
            EntryKind::File => {}
            EntryKind::Dir => {
                if head.path == "blobs" || head.path == BLOB_DIR {
                    return Ok(());
                }
                return Err(VerifyError::UnexpectedDir {
                    entry: head.path.clone(),
                }
                .into());
            }
            other => {
                return Err(VerifyError::EntryType {
                    entry: head.path.clone(),
                    kind: other.describe(),
                }
                .into());
            }
        }
        if head.path == MANIFEST_NAME {
            return Err(VerifyError::Duplicate {
                entry: head.path.clone(),
            }
            .into());
        }
        let Some(sha) = head
            .path
            .strip_prefix(BLOB_DIR)
            .and_then(|r| r.strip_prefix('/'))
            .filter(|h| names::is_sha256_hex(h))
        else {
            return Err(VerifyError::UnknownEntry {
                entry: head.path.clone(),
            }
            .into());
        };
        let Some(&declared) = st.blobs.get(sha) else {
            return Err(VerifyError::UnlistedBlob {
                entry: head.path.clone(),
            }
            .into());
        };
        if !seen.insert(sha.to_string()) {
            return Err(VerifyError::Duplicate {
                entry: head.path.clone(),
            }
            .into());
        }
        let what = st.names.get(sha).cloned().unwrap_or_default();
        if head.size != declared {
            return Err(VerifyError::SizeMismatch {
                entry: head.path.clone(),
                what,
                expected: declared,
                actual: head.size,
            }
            .into());
        }
        let wants_bytes = st.signed.iter().any(|s| s.wants(sha));
        if target.have(sha, declared) && !wants_bytes {
            // Verified earlier; the reader skips its bytes.
            at_hand.0 += 1;
            at_hand.1 += declared;
            return Ok(());
        }
        progress.blob(&head.path, declared);
        let mut capture = wants_bytes.then(Vec::new);
        let sink = target.begin(sha)?;
        let streamed = stream_blob(&head.path, data, sink, capture.as_mut(), progress);
        let actual = match streamed {
            Ok(actual) => actual,
            Err(e) => {
                target.discard(sha);
                return Err(e.into());
            }
        };
        if actual != sha {
            target.discard(sha);
            return Err(VerifyError::HashMismatch {
                entry: head.path.clone(),
                what,
                expected: sha.to_string(),
                actual,
            }
            .into());
        }
        target.keep(sha)?;
        hashed.0 += 1;
        hashed.1 += declared;
        if let Some(bytes) = capture {
            for s in st.signed.iter_mut() {
                s.offer(sha, &bytes);
                s.try_verify(trusted).map_err(VerifyError::from)?;
            }
        }
        Ok(())
    });
    progress.finish();
    let format = match result {
        Ok(f) => f,
        Err(Flow::Stop) => BundleFormat::Tar,
        Err(Flow::Refused(e)) => return Err(e),
    };
    let Some(st) = state else {
        // for_each_entry reports an empty bundle itself; this is a guard.
        return Err(VerifyError::FirstEntry {
            found: "nothing".into(),
            kind: "empty bundle".into(),
        });
    };
    if stopped {
        return Ok(Outcome::Stopped {
            manifest_sha256: st.sha256,
            manifest: Box::new(st.manifest),
        });
    }
    // Without a store, a delta's prerequisites cannot be checked: listed.
    let elsewhere: BTreeSet<&str> = match (&st.manifest.delta, target.checks_prerequisites()) {
        (Some(d), false) => d.prerequisites.iter().map(|p| p.sha256.as_str()).collect(),
        _ => BTreeSet::new(),
    };
    let mut unchecked = Vec::new();
    if !elsewhere.is_empty() {
        let bytes: u64 = st
            .blobs
            .iter()
            .filter(|(sha, _)| elsewhere.contains(sha.as_str()) && !seen.contains(*sha))
            .map(|(_, s)| s)
            .sum();
        unchecked.push(format!(
            "{} prerequisite blob(s) ({bytes} bytes) the bundle relies on the store holding: \
             import checks them against the store before staging anything",
            elsewhere.len()
        ));
    }
    let missing: Vec<String> = st
        .blobs
        .iter()
        .filter(|(sha, size)| {
            !seen.contains(*sha) && !target.have(sha, **size) && !elsewhere.contains(sha.as_str())
        })
        .map(|(sha, _)| {
            format!(
                "{} ({})",
                sha,
                st.names.get(sha).cloned().unwrap_or_default()
            )
        })
        .collect();
    if !missing.is_empty() {
        let count = missing.len();
        let mut list = missing.into_iter().take(5).collect::<Vec<_>>().join(", ");
        if count > 5 {
            list.push_str(&format!(" and {} more", count - 5));
        }
        return Err(VerifyError::Missing { count, list });
    }
    let mut signatures = Vec::new();
    let mut signed = Vec::new();
    for s in &st.signed {
        match s.proven() {
            Some(p) => {
                signatures.push((s.release.clone(), p.key_id.clone()));
                signed.push(p.clone());
            }
            None if !elsewhere.is_empty() && s.waits_on(&elsewhere) => {
                unchecked.push(format!(
                    "the signature of release {}: its signature files are prerequisites",
                    shown(&s.release)
                ));
            }
            None => {
                return Err(VerifyError::Missing {
                    count: 1,
                    list: format!("the signature files of release {}", s.release),
                });
            }
        }
    }
    Ok(Outcome::Verified(Box::new(Verified {
        manifest_sha256: st.sha256,
        manifest: st.manifest,
        manifest_bytes: st.bytes,
        format,
        signatures,
        signed,
        blobs_hashed: hashed.0,
        bytes_hashed: hashed.1,
        blobs_at_hand: at_hand.0 + st.blobs.len() - seen.len(),
        bytes_at_hand: at_hand.1
            + st.blobs
                .iter()
                .filter(|(sha, _)| !seen.contains(*sha))
                .map(|(_, s)| s)
                .sum::<u64>(),
        unchecked,
    })))
}

/// A buffer in flight between the reader and the writer thread.
type Chunk = (Box<[u8]>, usize);

/// How many chunks may wait for the writer: enough to ride out a slow
/// write, few enough that memory stays a few MiB whatever the blob size.
const CHUNKS_IN_FLIGHT: usize = 4;

/// Reads one blob's bytes, hashing them (and capturing them, for the
/// signature files) on this thread while `sink` writes them on another.
/// Returns the sha256 of what was read; the sink is finished (synced) when
/// the bytes were all read and written.
pub(crate) fn stream_blob(
    entry: &str,
    data: &mut dyn Read,
    sink: Option<Box<dyn BlobSink>>,
    capture: Option<&mut Vec<u8>>,
    progress: &dyn Progress,
) -> Result<String, VerifyError> {
    stream_blob_hashed(entry, data, sink, capture, progress)
        .map(|hasher| hex::encode(hasher.finalize()))
}

/// [`stream_blob`], answering the hash state rather than the digest (an
/// import of volumes carries a chunk's state on as its blob's).
pub(crate) fn stream_blob_hashed(
    entry: &str,
    data: &mut dyn Read,
    sink: Option<Box<dyn BlobSink>>,
    mut capture: Option<&mut Vec<u8>>,
    progress: &dyn Progress,
) -> Result<Sha256, VerifyError> {
    let mut hasher = Sha256::new();
    let read_err = |source| VerifyError::ReadEntry {
        entry: entry.to_string(),
        source,
    };
    let mut read = |buf: &mut [u8]| loop {
        match data.read(buf) {
            Err(e) if e.kind() == io::ErrorKind::Interrupted => continue,
            other => return other.map_err(read_err),
        }
    };
    let Some(mut sink) = sink else {
        let mut buf = vec![0u8; CHUNK];
        loop {
            let n = read(&mut buf)?;
            if n == 0 {
                return Ok(hasher);
            }
            hasher.update(&buf[..n]);
            if let Some(c) = capture.as_mut() {
                c.extend_from_slice(&buf[..n]);
            }
            progress.advance(n as u64);
        }
    };
    std::thread::scope(|scope| {
        let (to_writer, writer_rx) = std::sync::mpsc::sync_channel::<Chunk>(CHUNKS_IN_FLIGHT);
        let (to_reader, spare) = std::sync::mpsc::channel::<Box<[u8]>>();
        let writer = scope.spawn(move || -> Result<(), VerifyError> {
            for (buf, n) in writer_rx {
                sink.write(&buf[..n])?;
                let _ = to_reader.send(buf);
            }
            sink.finish()
        });
        let mut reading: Result<(), VerifyError> = Ok(());
        loop {
            let mut buf = spare
                .try_recv()
                .unwrap_or_else(|_| vec![0u8; CHUNK].into_boxed_slice());
            let n = match read(&mut buf) {
                Ok(0) => break,
                Ok(n) => n,
                Err(e) => {
                    reading = Err(e);
                    break;
                }
            };
            hasher.update(&buf[..n]);
            if let Some(c) = capture.as_mut() {
                c.extend_from_slice(&buf[..n]);
            }
            progress.advance(n as u64);
            if to_writer.send((buf, n)).is_err() {
                // The writer stopped: its error says why.
                break;
            }
        }
        drop(to_writer);
        let written = writer
            .join()
            .unwrap_or_else(|_| Err(VerifyError::Target("the writer thread panicked".into())));
        reading?;
        written?;
        Ok(hasher)
    })
}

/// Step 1 (the first entry), and step 2 as far as the store already holds
/// the signature files.
fn check_manifest(
    head: &EntryHead,
    data: &mut dyn Read,
    expected_sha256: &str,
    trusted: &[PublicKey],
    target: &mut dyn Target,
) -> Result<Checked, VerifyError> {
    if head.path != MANIFEST_NAME {
        names::check_relative_path("bundle entry", &head.path).map_err(VerifyError::UnsafeEntry)?;
        return Err(VerifyError::FirstEntry {
            found: head.path.clone(),
            kind: head.kind.describe(),
        });
    }
    if head.kind != EntryKind::File {
        return Err(VerifyError::EntryType {
            entry: head.path.clone(),
            kind: head.kind.describe(),
        });
    }
    if head.size > MAX_MANIFEST_BYTES {
        return Err(VerifyError::ManifestTooLarge {
            actual: head.size,
            max: MAX_MANIFEST_BYTES,
        });
    }
    let mut bytes = Vec::with_capacity(head.size as usize);
    data.take(MAX_MANIFEST_BYTES + 1)
        .read_to_end(&mut bytes)
        .map_err(|source| VerifyError::ReadEntry {
            entry: MANIFEST_NAME.into(),
            source,
        })?;
    let sha256 = llmgw_shared::digest::sha256_hex(&bytes);
    if sha256 != expected_sha256 {
        return Err(VerifyError::ManifestHash {
            expected: expected_sha256.to_string(),
            actual: sha256,
        });
    }
    let manifest = Manifest::from_json_bytes(&bytes)?;
    let blobs = manifest.blobs();
    let names = blob_names(&manifest);
    let mut signed = Vec::new();
    for r in &manifest.releases {
        let Some(mut s) = Pending::of(r)? else {
            continue;
        };
        for a in &r.assets {
            if s.wants(&a.sha256) && target.have(&a.sha256, a.size) {
                s.offer(&a.sha256, &target.read_have(&a.sha256)?);
            }
        }
        s.try_verify(trusted)?;
        signed.push(s);
    }
    Ok(Checked {
        sha256,
        bytes,
        manifest,
        blobs,
        names,
        signed,
    })
}

/// Reads the first entry of a bundle, which should be its manifest,
/// WITHOUT checking it against any hash or signature: for `inspect`.
/// Returns the manifest's bytes.
pub fn read_manifest_unverified(path: &Path) -> Result<Vec<u8>, VerifyError> {
    let mut out: Option<Vec<u8>> = None;
    let r = bundle_reader::for_each_entry(path, |head, data| {
        if head.path != MANIFEST_NAME || head.kind != EntryKind::File {
            return Err(Flow::Refused(VerifyError::FirstEntry {
                found: head.path.clone(),
                kind: head.kind.describe(),
            }));
        }
        if head.size > MAX_MANIFEST_BYTES {
            return Err(Flow::Refused(VerifyError::ManifestTooLarge {
                actual: head.size,
                max: MAX_MANIFEST_BYTES,
            }));
        }
        let mut bytes = Vec::new();
        data.take(MAX_MANIFEST_BYTES + 1)
            .read_to_end(&mut bytes)
            .map_err(|source| {
                Flow::Refused(VerifyError::ReadEntry {
                    entry: MANIFEST_NAME.into(),
                    source,
                })
            })?;
        out = Some(bytes);
        Err(Flow::Stop)
    });
    match (r, out) {
        (_, Some(b)) => Ok(b),
        (Err(Flow::Refused(e)), None) => Err(e),
        _ => Err(VerifyError::Read(ReadError::Empty {
            path: path.to_path_buf(),
        })),
    }
}
