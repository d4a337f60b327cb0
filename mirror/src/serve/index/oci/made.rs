//! What the registry serves that no bundle carried as bytes: the manifests,
//! configs and tar layers of the models' OCI profiles (`models/`), named at
//! index build from what the store holds and made when asked for.
//!
//! Invariant: a made thing is a function of held blobs and their names
//! alone, so the same store gives the same bytes and digests; the only
//! stored bytes it points at are a held blob, by sha256 and size, which is
//! sent from the store as any blob is, never copied. The index keeps what
//! makes a JSON document again (its commit and which document it is), not
//! its bytes: a thousand revisions' manifests cost a few bytes each, and
//! the bytes made on request are the ones whose digest the index names
//! ([`super::models::make`]).

use std::collections::HashMap;
use std::sync::Arc;

use llmgw_shared::Sha256;
use llmgw_shared::manifest::RepoKind;

use crate::serve::index::entries::Blob;

/// One made manifest, config or layer.
#[derive(Debug, Clone)]
pub enum Made {
    /// A small JSON document (a manifest, an index, a config) of one
    /// commit's profiles, made again when asked for.
    Doc(Doc),
    /// An uncompressed tar of one held file.
    Tar(Box<TarLayer>),
}

/// One JSON document of a commit's profiles, as what makes it again.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Doc {
    /// The commit (one allocation shared by the commit's documents).
    pub commit: Arc<str>,
    pub which: Which,
}

/// Which document of a commit's profiles.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Which {
    /// The ModelPack artifact's config and manifest.
    PackConfig,
    PackManifest,
    /// The mountable image's config and manifest for the platform of that
    /// number (amd64, arm64), and its index.
    ImageConfig(usize),
    ImageManifest(usize),
    ImageIndex,
}

impl Which {
    /// The media type it is served with.
    pub fn media_type(self) -> &'static str {
        match self {
            Which::PackConfig => MODEL_CONFIG,
            Which::ImageConfig(_) => OCI_CONFIG,
            Which::PackManifest | Which::ImageManifest(_) => OCI_MANIFEST,
            Which::ImageIndex => OCI_INDEX,
        }
    }
}

/// The Hub repository a made OCI repository is made from, and what making
/// its documents again needs beyond the repository's snapshots.
#[derive(Debug, Clone)]
pub struct MadeFrom {
    pub kind: RepoKind,
    /// The repository's key in [`crate::serve::index::Index::repos`] (`repo_key`).
    pub key: String,
    /// The digest of each file's tar layer, by the file's number in the
    /// repository's pool (the image profile's; empty for ModelPack).
    pub tars: HashMap<u32, Sha256>,
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
    /// The `Content-Type` it is served with.
    pub fn media_type(&self) -> &'static str {
        match self {
            Made::Doc(d) => d.which.media_type(),
            Made::Tar(_) => LAYER_TAR,
        }
    }
}

/// An uncompressed OCI layer.
pub const LAYER_TAR: &str = "application/vnd.oci.image.layer.v1.tar";
/// A ModelPack config.
pub const MODEL_CONFIG: &str = "application/vnd.cncf.model.config.v1+json";
/// The manifest and index media types.
pub const OCI_MANIFEST: &str = "application/vnd.oci.image.manifest.v1+json";
pub const OCI_INDEX: &str = "application/vnd.oci.image.index.v1+json";
/// An image config.
pub const OCI_CONFIG: &str = "application/vnd.oci.image.config.v1+json";
