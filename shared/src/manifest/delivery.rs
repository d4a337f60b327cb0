//! Format 2: how a bundle travels — what it relies on the store already
//! holding (a delta), and how its blobs are cut across volumes (USB, DVD,
//! diode) — and the names those pieces have inside a bundle.
//!
//! Invariant: these describe transport only. Every blob keeps the sha256 its
//! publisher's digest was checked against; a chunk or a parity shard is
//! never served and never becomes a blob by itself — import reassembles a
//! blob from its chunks and hashes it whole before it enters the store.

use serde::{Deserialize, Serialize};

use super::BLOB_DIR;
use super::artifacts::BlobRef;
use crate::Sha256;

/// The second entry of a signed bundle: a minisign signature over the exact
/// bytes of `manifest.json`, kept in the store as `bundles/<sha>.json.minisig`.
pub const SIGNATURE_NAME: &str = "manifest.json.minisig";

/// The channel of a manifest that names none.
pub const DEFAULT_CHANNEL: &str = "default";

/// A bundle that carries only part of what its manifest lists.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Delta {
    /// Blobs the manifest names that the bundle does not carry: import
    /// checks the store holds every one before it stages anything.
    pub prerequisites: Vec<BlobRef>,
    /// What the bundler planned against: the sha256 of each have-list
    /// (`mirror have`) or base manifest (`--base`), for the audit trail.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub bases: Vec<Sha256>,
    /// A repair bundle (`bundle create --need`): blobs another bundle
    /// relies on, carried for the store to hold and named by nothing else
    /// in this manifest, so this bundle serves nothing by itself.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub repairs: Vec<NeededBlob>,
}

/// A blob a bundle needs, with what it is to that bundle (for people:
/// `release ggml-org/llama.cpp b6123 llama-….tar.gz`): an entry of a
/// need-list (`bundle import --need-out`) and of a repair bundle.
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct NeededBlob {
    /// The blob's sha256: its name in the store.
    pub sha256: Sha256,
    /// Its length in bytes.
    pub size: u64,
    /// What uses it, as the needing bundle's manifest names it; untrusted
    /// text, escaped when printed.
    #[serde(default)]
    pub uses: Vec<String>,
}

impl Delta {
    /// Whether this is a repair bundle: it names nothing to serve.
    pub fn is_repair(&self) -> bool {
        !self.repairs.is_empty()
    }

    /// Sorts (and dedups) its lists, as [`super::Manifest::sort`] would:
    /// what a step that adds a delta to a sorted manifest sorts.
    pub fn sort(&mut self) {
        self.prerequisites.sort();
        self.prerequisites.dedup();
        self.bases.sort();
        self.bases.dedup();
        for r in &mut self.repairs {
            r.uses.sort();
            r.uses.dedup();
        }
        self.repairs.sort();
        self.repairs.dedup();
    }
}

/// How the carried blobs are laid out over volumes. Every volume is an
/// uncompressed tar that starts with `manifest.json` (and its signature),
/// then holds the pieces placed in it, in `placements` order.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Volumes {
    /// Data volumes, numbered 1..=count.
    pub count: u32,
    /// The largest a volume file may be, in bytes.
    pub volume_size: u64,
    /// Blobs larger than this are cut into chunks of this size (the last
    /// one shorter).
    pub chunk_size: u64,
    /// Every carried blob and where its pieces are.
    pub placements: Vec<Placement>,
    /// Reed–Solomon parity volumes, numbered count+1..=count+parity.len().
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub parity: Option<Parity>,
}

/// One carried blob: whole in one volume (one piece, the blob itself), or
/// cut into chunks.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Placement {
    /// The whole blob's sha256, as the artifacts list it.
    pub sha256: Sha256,
    /// The whole blob's length in bytes.
    pub size: u64,
    /// In offset order, covering the blob exactly.
    pub pieces: Vec<Piece>,
}

/// A piece of a blob in a volume. A whole blob is one piece whose sha256 is
/// the blob's; its tar entry is `blobs/sha256/<hex>`. A chunk's entry is
/// [`chunk_entry_name`].
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Piece {
    /// Where the piece starts in its blob.
    pub offset: u64,
    /// Its length in bytes.
    pub size: u64,
    /// sha256 of the piece's own bytes.
    pub sha256: Sha256,
    /// The data volume it is in (1-based).
    pub volume: u32,
}

/// Parity for a one-way transfer: any `shards.len()` lost or damaged data
/// volumes can be rebuilt at import.
///
/// The data of volume v is the concatenation of its pieces in placement
/// order, zero-padded to `shard_size`; the parity volumes are the
/// Reed–Solomon recovery shards (GF(2^16), as `reed-solomon-simd` computes
/// them) over those `count` data shards. Parity volume j holds one entry,
/// [`parity_entry_name`]`(j)`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Parity {
    /// The size of every data and parity shard (the largest volume data,
    /// rounded up to an even number of bytes), coded in [`PARITY_STRIPE`]s.
    pub shard_size: u64,
    /// sha256 of each parity shard, in order.
    pub shards: Vec<Sha256>,
}

/// Parity is computed stripe by stripe: bytes `[s·STRIPE, (s+1)·STRIPE)` of
/// every data shard (the last stripe shorter) are one Reed–Solomon code,
/// whose recovery shards are the same bytes of the parity shards. So
/// neither side ever holds more than one stripe per volume in memory.
pub const PARITY_STRIPE: u64 = 1 << 20;

/// The tar entry of a whole blob: `blobs/sha256/<hex>`.
pub fn blob_entry_name(sha256: &str) -> String {
    format!("{BLOB_DIR}/{sha256}")
}

/// The tar entry of chunk `index` (0-based) of a blob:
/// `chunks/<blob hex>/<index, 5 digits>`. Named by position, not by the
/// chunk's own hash, so two equal chunks of different blobs stay apart.
pub fn chunk_entry_name(blob_sha256: &str, index: usize) -> String {
    format!("chunks/{blob_sha256}/{index:05}")
}

/// The tar entry of parity shard `index` (0-based): `parity/<4 digits>`.
pub fn parity_entry_name(index: usize) -> String {
    format!("parity/{index:04}")
}
