//! What `llmgw mirror push` copies into a registry, as the mirror hands it
//! to the bundler's registry client: per target repository the blobs (each
//! with where its bytes are), the manifests in the order a registry must
//! see them (children before the index naming them), and the tags.
//!
//! Invariant: a plan names only what the store holds: every manifest's
//! bytes are the stored (or, for a model's profile, made) bytes whose
//! sha256 is its digest, and every blob's parts laid end to end are
//! `size` bytes hashing to its sha256. The client checks both again as it
//! sends; the plan itself is data, so the mirror and the bundler never
//! depend on each other.

use std::path::PathBuf;

use crate::Sha256;

/// Everything one push sends.
#[derive(Debug, Clone, Default)]
pub struct PushPlan {
    /// One entry a repository on the target, in the order they are pushed.
    pub repos: Vec<PushRepo>,
}

/// One repository on the target registry.
#[derive(Debug, Clone)]
pub struct PushRepo {
    /// Its path under the target (the prefix not included), as the mirror
    /// serves it (`acme/app`, `charts/acme`, `models/acme/tiny`).
    pub name: String,
    /// What it is, for messages (`image docker.io/acme/app`, `chart acme`,
    /// `model acme/tiny`).
    pub what: String,
    /// Every config and layer (and other blob) a manifest of it lists.
    pub blobs: Vec<PushBlob>,
    /// Every manifest and index, children first.
    pub manifests: Vec<PushManifest>,
    /// Tag -> the top manifest's digest.
    pub tags: Vec<(String, Sha256)>,
}

/// One blob and where its bytes are.
#[derive(Debug, Clone)]
pub struct PushBlob {
    /// Its digest.
    pub sha256: Sha256,
    /// Its length in bytes.
    pub size: u64,
    /// Its bytes, part after part.
    pub parts: Vec<Part>,
}

/// A piece of a blob's bytes.
#[derive(Debug, Clone)]
pub enum Part {
    /// Bytes at hand (a made document, a tar header).
    Bytes(Vec<u8>),
    /// A stored file, whole: `size` bytes.
    File {
        /// Where it is.
        path: PathBuf,
        /// Its length.
        size: u64,
    },
    /// So many zero bytes (a tar's padding and end blocks).
    Zeros(u64),
}

impl Part {
    /// How many bytes it is.
    pub fn len(&self) -> u64 {
        match self {
            Part::Bytes(b) => b.len() as u64,
            Part::File { size, .. } => *size,
            Part::Zeros(n) => *n,
        }
    }

    /// Whether it is no bytes at all.
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }
}

/// One manifest or index, as stored.
#[derive(Debug, Clone)]
pub struct PushManifest {
    /// Its digest.
    pub sha256: Sha256,
    /// Its media type (the `Content-Type` it is put with).
    pub media_type: String,
    /// Its exact bytes.
    pub bytes: Vec<u8>,
}
