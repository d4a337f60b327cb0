//! Step 1, the manifest gate: the bundle's first entry is `manifest.json`,
//! hashes to the sha256 the operator was given, and parses.
//!
//! Invariant: nothing after the manifest is looked at until this passed,
//! and the manifest is read with a bound ([`MAX_MANIFEST_BYTES`]) whatever
//! its header claims. What passed is the exact bytes that hashed right,
//! parsed once; every later decision is made against that parse.

use std::collections::BTreeMap;
use std::io::Read;
use std::path::Path;

use llmgw_shared::manifest::{MANIFEST_NAME, MAX_MANIFEST_BYTES, Manifest};
use llmgw_shared::{BundleId, Sha256};

use super::error::VerifyError;
use crate::bundle::reader::{self, EntryHead, EntryKind, ReadError};

/// A manifest that passed step 1.
pub(crate) struct Gated {
    pub sha256: BundleId,
    pub bytes: Vec<u8>,
    pub manifest: Manifest,
    /// Every blob it names, with its size.
    pub blobs: BTreeMap<Sha256, u64>,
    /// A human name for each blob (see [`blob_names`]).
    pub names: BTreeMap<Sha256, String>,
}

/// Step 1 on the first entry: `head` and its bytes `data`.
pub(crate) fn gate(
    head: &EntryHead,
    data: &mut dyn Read,
    expected_sha256: &BundleId,
) -> Result<Gated, VerifyError> {
    super::classify::first(&head.path, &head.kind, head.size)?;
    let bytes = read_bounded(head, data)?;
    let sha256 = BundleId::of(&bytes);
    if sha256 != *expected_sha256 {
        return Err(VerifyError::ManifestHash {
            expected: expected_sha256.to_string(),
            actual: sha256.to_string(),
        });
    }
    let manifest = Manifest::from_json_bytes(&bytes)?;
    Ok(Gated {
        blobs: manifest.blobs(),
        names: blob_names(&manifest),
        sha256,
        bytes,
        manifest,
    })
}

/// The manifest's bytes, at most [`MAX_MANIFEST_BYTES`] + 1 of them.
fn read_bounded(head: &EntryHead, data: &mut dyn Read) -> Result<Vec<u8>, VerifyError> {
    let mut bytes = Vec::with_capacity(head.size.min(MAX_MANIFEST_BYTES) as usize);
    data.take(MAX_MANIFEST_BYTES + 1)
        .read_to_end(&mut bytes)
        .map_err(|source| VerifyError::ReadEntry {
            entry: MANIFEST_NAME.into(),
            source,
        })?;
    Ok(bytes)
}

/// A human name for each blob the manifest names: the first thing that
/// uses it ("ggml-org/llama.cpp b6123 llama-…tar.gz", "acme/tiny config.json").
pub fn blob_names(m: &Manifest) -> BTreeMap<Sha256, String> {
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

/// A refusal, or the visitor's own stop once the manifest was read.
enum Flow {
    Refused(VerifyError),
    Stop,
}

impl From<ReadError> for Flow {
    fn from(e: ReadError) -> Self {
        Flow::Refused(VerifyError::Read(e))
    }
}

/// Reads the first entry of a bundle, which should be its manifest,
/// WITHOUT checking it against any hash or signature: for `inspect`.
/// Returns the manifest's bytes.
pub fn read_manifest_unverified(path: &Path) -> Result<Vec<u8>, VerifyError> {
    let mut out: Option<Vec<u8>> = None;
    let r = reader::for_each_entry(path, |head, data| {
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
        out = Some(read_bounded(head, data).map_err(Flow::Refused)?);
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
