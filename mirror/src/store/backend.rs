//! The blob-store layer: what the store keeps in bulk (blobs) and what
//! makes a bundle visible (its manifest), behind one trait with two
//! backends — a local folder ([`super::fs::FsBlobs`], today's store) and
//! S3-compatible object storage ([`super::s3`]).
//!
//! Invariant of every backend: [`BlobStore::put_blob`] makes a blob visible
//! under its key only when the bytes it read hash to that sha256 and
//! number exactly `size`; otherwise nothing is left under the key. Keys
//! come from [`super::layout`] only.

use std::io::Read;
use std::ops::Range;
use std::time::{Duration, SystemTime};

use llmgw_shared::{BundleId, Sha256};

use super::StoreError;

/// What a backend knows of a blob without reading it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct BlobMeta {
    /// Its length in bytes.
    pub size: u64,
    /// When it was written (an object's `last_modified`, a file's mtime).
    pub modified: Option<SystemTime>,
}

/// What [`BlobStore::put_blob`] did.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Put {
    /// The blob was written and checked.
    Added,
    /// A blob of that sha256 and size was already there; nothing was read.
    Held,
}

/// Blobs and manifests, wherever they are kept.
pub trait BlobStore: Send + Sync + std::fmt::Debug {
    /// The blob's size and time, or `None` when it is not there.
    fn head(&self, sha256: &Sha256) -> Result<Option<BlobMeta>, StoreError>;

    /// The bytes `range` of the blob, as a reader.
    fn read(&self, sha256: &Sha256, range: Range<u64>) -> Result<Box<dyn Read + Send>, StoreError>;

    /// Every byte of what is under the blob's key now, whatever its length,
    /// as a reader that holds at most one chunk in memory: `mirror verify`
    /// reads a blob so, since damage may have changed its size too.
    fn read_whole(&self, sha256: &Sha256) -> Result<Box<dyn Read + Send>, StoreError>;

    /// Where the blob is (a file's path, an object's URL), for messages.
    fn blob_location(&self, sha256: &Sha256) -> String;

    /// Where the manifest of that bundle is (a file's path, an object's
    /// URL), for messages.
    fn manifest_location(&self, manifest_sha256: &BundleId) -> String;

    /// Stores the blob read from `reader`, hashing it on the way, and makes
    /// it visible only when it is `size` bytes hashing to `sha256`; a blob
    /// already there with that size is not read again. The check for a
    /// held blob lives here, once, so each backend writes only
    /// [`BlobStore::add_blob`].
    fn put_blob(
        &self,
        sha256: &Sha256,
        size: u64,
        reader: &mut dyn Read,
    ) -> Result<Put, StoreError> {
        if self.head(sha256)?.is_some_and(|m| m.size == size) {
            return Ok(Put::Held);
        }
        self.add_blob(sha256, size, reader)?;
        Ok(Put::Added)
    }

    /// Writes a blob that is not held yet — [`BlobStore::put_blob`]'s
    /// writing half, with the same invariant: visible only when it is
    /// `size` bytes hashing to `sha256`. Callers go through `put_blob`.
    fn add_blob(&self, sha256: &Sha256, size: u64, from: &mut dyn Read) -> Result<(), StoreError>;

    /// Every blob held, sorted by sha256.
    fn list_blobs(&self) -> Result<Vec<(Sha256, BlobMeta)>, StoreError>;

    /// Whatever lies where blobs are kept but is not one — a name that is
    /// not a sha256, a blob filed under the wrong two digits, a file that
    /// is not a plain file — by location ([`BlobStore::blob_location`]'s
    /// kind), sorted; [`BlobStore::list_blobs`] leaves these out.
    fn list_strays(&self) -> Result<Vec<String>, StoreError>;

    /// Removes a blob; one already gone is not an error.
    fn delete_blob(&self, sha256: &Sha256) -> Result<(), StoreError>;

    /// The sha256s of the manifests held, sorted.
    fn list_bundles(&self) -> Result<Vec<BundleId>, StoreError>;

    /// Writes a manifest: the step that makes its bundle visible, so a
    /// caller writes it after every blob it names.
    fn put_manifest(&self, manifest_sha256: &BundleId, bytes: &[u8]) -> Result<(), StoreError>;

    /// How long ago the blob was written (zero for a time in the future),
    /// or `None` when it is not there or its time is unknown.
    fn blob_age(&self, sha256: &Sha256, now: SystemTime) -> Result<Option<Duration>, StoreError> {
        Ok(self
            .head(sha256)?
            .and_then(|m| m.modified)
            .map(|t| now.duration_since(t).unwrap_or_default()))
    }
}

/// The hex of a finished sha256 as the store spells it.
pub(super) fn hex_of(hasher: sha2::Sha256) -> String {
    use sha2::Digest as _;
    hex::encode(hasher.finalize())
}
