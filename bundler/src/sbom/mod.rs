//! The bundle's SBOM (issue #33): CycloneDX 1.6 JSON made from the manifest
//! once every entry is known, stored in the cache like any small blob and
//! named by the manifest's `evidence.sbom`, so the manifest's hash and
//! signature cover it and import checks it like every other blob.
//!
//! Invariant: the same manifest (and the same wheel metadata) gives the same
//! SBOM bytes, so two creates of one request under `SOURCE_DATE_EPOCH` give
//! byte-identical bundles; a repair bundle, which serves nothing, has none.

mod build;
#[cfg(test)]
mod build_tests;
pub mod cdx;
mod licence;
mod referrer;

use std::io::Read;

use llmgw_shared::Sha256;
use llmgw_shared::manifest::{BlobRef, Evidence, Manifest, RepoEvidence, Signatures};

use crate::cache::Cache;
use crate::error::CreateError;
use crate::writer::Blob;

/// The SBOM's bytes for `manifest`: pretty JSON, newline-ended. A wheel's
/// licence is read from its `.metadata` blob in `cache` (bounded).
pub fn generate(
    manifest: &Manifest,
    repos: &[RepoEvidence],
    signatures: Option<&Signatures>,
    cache: &Cache,
) -> Vec<u8> {
    let read = |sha: &Sha256| -> Option<cdx::Licence> {
        let f = std::fs::File::open(cache.blob_path(sha.as_str())).ok()?;
        let mut buf = Vec::new();
        f.take(licence::MAX_METADATA_BYTES as u64)
            .read_to_end(&mut buf)
            .ok()?;
        licence::of_metadata(&buf)
    };
    let bom = build::bom(manifest, (repos, signatures), &read);
    let mut out = serde_json::to_vec_pretty(&bom).unwrap_or_default();
    out.push(b'\n');
    out
}

/// Adds the evidence to `manifest` (the SBOM stored in `cache`, the Hub's
/// verdicts; the SBOM as a referrer of each image) and declares the format
/// it needs; answers the blobs made, for the writer. A repair bundle is
/// left as it is.
pub fn attach(
    manifest: &mut Manifest,
    (repos, signatures): (Vec<RepoEvidence>, Option<Signatures>),
    cache: &Cache,
) -> Result<Vec<Blob>, CreateError> {
    if manifest.is_repair() {
        return Ok(Vec::new());
    }
    let bytes = generate(manifest, &repos, signatures.as_ref(), cache);
    let (sha256, path) = cache
        .put_bytes(&bytes)
        .map_err(|e| CreateError::io(cache.root(), e))?;
    let size = bytes.len() as u64;
    let sbom = BlobRef {
        sha256: sha256.clone(),
        size,
    };
    let mut made = referrer::add(manifest, &sbom, cache)?;
    let mut evidence = Evidence {
        sbom,
        repos,
        signatures,
    };
    // The manifest is sorted (create builds it so), and the referrers
    // sorted each image they were added to: only the evidence is sorted here.
    evidence.sort();
    manifest.evidence = Some(evidence);
    manifest.format_version = manifest.needed_format();
    manifest.validate()?;
    made.push(Blob { sha256, size, path });
    Ok(made)
}
