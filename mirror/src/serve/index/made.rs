//! What the registry serves that no bundle carried as bytes: the manifests,
//! configs and tar layers of the models' OCI profiles (`models/`), made at
//! index build from what the store holds.
//!
//! Invariant: a made thing is a function of held blobs and their names
//! alone, so the same store gives the same bytes and digests; the only
//! stored bytes it points at are a held blob, by sha256 and size, which is
//! sent from the store as any blob is, never copied.

use bytes::Bytes;
use llmgw_shared::Sha256;

use super::entries::Blob;

/// One made manifest, config or layer.
#[derive(Debug, Clone)]
pub enum Made {
    /// A small JSON document (a manifest, an index, a config), held in
    /// memory whole.
    Json {
        bytes: Bytes,
        media_type: &'static str,
    },
    /// An uncompressed tar of one held file.
    Tar(TarLayer),
}

/// A tar of one file: its headers (a PAX header when needed, then the
/// file's header, made again from `path` and the size when served: 512
/// bytes or more a file were too many to keep for a store of a million
/// files), the held blob itself, then `tail` zero bytes (the padding to 512
/// and the two end blocks).
#[derive(Debug, Clone)]
pub struct TarLayer {
    /// The file's path in the tar.
    pub path: Box<str>,
    /// How long its headers are.
    pub head_len: u64,
    pub file: Blob,
    pub tail: u64,
    /// The sha256 of the whole tar (learned by hashing it once).
    pub digest: Sha256,
}

impl TarLayer {
    /// The tar's length in bytes.
    pub fn size(&self) -> u64 {
        self.head_len + self.file.size + self.tail
    }
}

impl Made {
    /// The length of the bytes served.
    pub fn size(&self) -> u64 {
        match self {
            Made::Json { bytes, .. } => bytes.len() as u64,
            Made::Tar(t) => t.size(),
        }
    }

    /// The `Content-Type` it is served with.
    pub fn media_type(&self) -> &'static str {
        match self {
            Made::Json { media_type, .. } => media_type,
            Made::Tar(_) => LAYER_TAR,
        }
    }
}

/// An uncompressed OCI layer.
pub const LAYER_TAR: &str = "application/vnd.oci.image.layer.v1.tar";
