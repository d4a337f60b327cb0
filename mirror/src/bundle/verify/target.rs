//! Where the check puts the blobs it verified: the [`Target`] it streams
//! into, and the [`BlobSink`] each blob's bytes are written to.
//!
//! Invariant: a target fails in its own words. Its error type is its own
//! ([`Target::Error`], as ripgrep's `Sink` has one), carried out of
//! [`super::check_bundle`] as it is — never turned into text — and a
//! refusal of the bundle ([`VerifyError`]) becomes one of its errors
//! through `From`, so the caller gets one type that holds both.

use llmgw_shared::Sha256;
use llmgw_shared::manifest::Manifest;

use super::error::VerifyError;

/// Where checked blobs go: a staging folder for import, nowhere for verify.
pub trait Target {
    /// What can go wrong on the target's side (staging, free space). A
    /// refusal of the bundle converts into it.
    type Error: From<VerifyError> + Send;
    /// Whether a verified copy of this blob is already at hand (in the
    /// store, or staged by an earlier run of the same import).
    fn have(&self, sha256: &Sha256, size: u64) -> bool;
    /// The bytes of a blob at hand (only asked for small signature files).
    fn read_have(&self, sha256: &Sha256) -> Result<Vec<u8>, Self::Error>;
    /// Called once the manifest passed step 1, with the bytes still to be
    /// read. Returning `false` stops the check there (e.g. already imported).
    fn on_manifest(
        &mut self,
        _manifest: &Manifest,
        _bytes_to_read: u64,
    ) -> Result<bool, Self::Error> {
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
    /// Whether whoever made the bundle hashed this blob as it wrote it, so
    /// that this check need not hash it again (`bundle create`'s check of
    /// what it wrote, [`WrittenBy`]): its entry, name and size are still
    /// checked; only a blob whose bytes another step reads (a carried
    /// manifest, a signature file) is hashed again.
    fn hashed_before(&self, _sha256: &Sha256) -> bool {
        false
    }
    /// Starts a blob; returns where to write its bytes, if anywhere.
    #[allow(clippy::type_complexity)]
    fn begin(
        &mut self,
        sha256: &str,
    ) -> Result<Option<Box<dyn BlobSink<Self::Error>>>, Self::Error>;
    /// The blob's bytes hashed to its name and its sink was finished: keep it.
    fn keep(&mut self, sha256: &str) -> Result<(), Self::Error>;
    /// The blob was refused or the check stopped: drop what was written.
    fn discard(&mut self, sha256: &str);
}

/// Where one blob's bytes are written. It runs on its own thread, so that
/// writing one chunk overlaps reading and hashing the next. `E` is its
/// target's error type.
pub trait BlobSink<E = VerifyError>: Send {
    fn write(&mut self, buf: &[u8]) -> Result<(), E>;
    /// Every byte was written: make them durable.
    fn finish(self: Box<Self>) -> Result<(), E>;
}

/// Hashes and forgets: the target of `llmgw bundle verify`.
pub struct HashOnly;

impl Target for HashOnly {
    type Error = VerifyError;
    fn have(&self, _: &Sha256, _: u64) -> bool {
        false
    }
    fn checks_prerequisites(&self) -> bool {
        false
    }
    fn read_have(&self, sha256: &Sha256) -> Result<Vec<u8>, VerifyError> {
        Err(VerifyError::NotAtHand {
            sha256: sha256.to_string(),
        })
    }
    fn begin(&mut self, _: &str) -> Result<Option<Box<dyn BlobSink>>, VerifyError> {
        Ok(None)
    }
    fn keep(&mut self, _: &str) -> Result<(), VerifyError> {
        Ok(())
    }
    fn discard(&mut self, _: &str) {}
}

/// The target of `bundle create`'s check of what it just wrote: hashes and
/// forgets like [`HashOnly`], but trusts the writer's hashes (every blob
/// it writes was hashed as it was fetched or copied), so the bytes are
/// read once more only where a step needs them (manifests, signature
/// files). Every entry's name and size are still checked against the
/// manifest.
pub struct WrittenBy;

impl Target for WrittenBy {
    type Error = VerifyError;
    fn have(&self, _: &Sha256, _: u64) -> bool {
        false
    }
    fn hashed_before(&self, _: &Sha256) -> bool {
        true
    }
    fn checks_prerequisites(&self) -> bool {
        false
    }
    fn read_have(&self, sha256: &Sha256) -> Result<Vec<u8>, VerifyError> {
        HashOnly.read_have(sha256)
    }
    fn begin(&mut self, _: &str) -> Result<Option<Box<dyn BlobSink>>, VerifyError> {
        Ok(None)
    }
    fn keep(&mut self, _: &str) -> Result<(), VerifyError> {
        Ok(())
    }
    fn discard(&mut self, _: &str) {}
}

/// The target of `mirror export --have`'s check: as [`WrittenBy`], but the
/// blobs the next enclave's have-list names (`held`, by sha256 and size)
/// count as at hand — they were left out on purpose, and that store's
/// import takes them from what it holds — and their bytes, where a step
/// reads them (a signature file, a carried OCI manifest), come from the
/// exporting store, which holds every blob of the bundle (`read`: a blob's
/// bytes, at most the size given; a function, so this module reads no
/// store itself).
pub struct WrittenFor<'a> {
    /// What the next enclave holds: sha256 -> size.
    pub held: std::collections::BTreeMap<Sha256, u64>,
    /// Reads a blob of the store the bundle is exported from.
    pub read: &'a dyn Fn(&Sha256, u64) -> Option<Vec<u8>>,
}

impl Target for WrittenFor<'_> {
    type Error = VerifyError;
    fn have(&self, sha256: &Sha256, size: u64) -> bool {
        self.held.get(sha256) == Some(&size)
    }
    fn hashed_before(&self, _: &Sha256) -> bool {
        true
    }
    fn checks_prerequisites(&self) -> bool {
        false
    }
    fn read_have(&self, sha256: &Sha256) -> Result<Vec<u8>, VerifyError> {
        let size = self.held.get(sha256).copied().unwrap_or(0);
        (self.read)(sha256, size).ok_or_else(|| VerifyError::NotAtHand {
            sha256: sha256.to_string(),
        })
    }
    fn begin(&mut self, _: &str) -> Result<Option<Box<dyn BlobSink>>, VerifyError> {
        Ok(None)
    }
    fn keep(&mut self, _: &str) -> Result<(), VerifyError> {
        Ok(())
    }
    fn discard(&mut self, _: &str) {}
}
