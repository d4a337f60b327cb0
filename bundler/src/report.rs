//! What a finished run tells its caller: the bundle's identity (the
//! manifest sha256), what it carries and where each digest came from, the
//! bytes, and the gaps. `--json` prints it as is.

use std::path::PathBuf;

use llmgw_shared::manifest::{DigestSource, Gap, Manifest};
use serde::Serialize;

use crate::writer::Format;

/// A finished run, as `bundle create` reports it.
#[derive(Debug, Clone, Serialize)]
pub struct CreateReport {
    /// The bundle written.
    pub out: PathBuf,
    /// `tar`, `tar.zst` or `dir`, as `--out`'s name says.
    pub format: Format,
    /// The bundle's identity: carry it apart from the bundle.
    pub manifest_sha256: llmgw_shared::BundleId,
    /// `PATH.sha256`, holding `<hex>  manifest.json`.
    pub sha256_file: PathBuf,
    /// Every file carried, with where its digests came from.
    pub artifacts: Vec<Artifact>,
    /// Distinct content carried.
    pub blobs: usize,
    /// Their bytes.
    pub bytes: u64,
    /// A delta (`--have`, `--base`): blobs the manifest names that the
    /// site holds, not carried.
    pub prerequisites: usize,
    /// Their bytes.
    pub prerequisite_bytes: u64,
    /// A repair bundle (`--need`): the blobs it carries for another bundle.
    pub repairs: usize,
    /// Bytes that came over the network in this run.
    pub bytes_downloaded: u64,
    /// Bytes of content an earlier run had already verified into the cache.
    pub bytes_reused: u64,
    /// What was asked for and not carried (`--allow-missing`, `--want`).
    pub gaps: Vec<Gap>,
    /// `--sign-key`: the key id that signed the manifest.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub signed_by: Option<String>,
    /// The manifest's channel and sequence (absent when it has none).
    pub channel: String,
    /// The manifest's sequence in its channel.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub sequence: Option<u64>,
    /// `--volume-size`: the volume files, data then parity.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub volumes: Vec<PathBuf>,
}

/// One file the bundle carries.
#[derive(Debug, Clone, Serialize)]
pub struct Artifact {
    /// `release-asset`, `hf-file` or `oci-blob` (an image's manifest,
    /// config or layer: its digest is the registry's descriptor's).
    pub kind: &'static str,
    /// `owner/repo tag name`, or `type id@commit path`.
    pub what: String,
    pub sha256: llmgw_shared::Sha256,
    pub size: u64,
    pub publisher_digests: Vec<DigestSource>,
}

/// The artifacts a manifest lists, in its (sorted) order.
pub fn artifacts(m: &Manifest) -> Vec<Artifact> {
    let mut out = Vec::new();
    for r in &m.releases {
        for a in &r.assets {
            out.push(Artifact {
                kind: "release-asset",
                what: format!("{} {} {}", r.repo, r.tag, a.name),
                sha256: a.sha256.clone(),
                size: a.size,
                publisher_digests: a.publisher_digests.iter().map(|d| d.source).collect(),
            });
        }
    }
    // One commit carried under several revisions lists its files once.
    let mut listed = std::collections::BTreeSet::new();
    for r in &m.repos {
        for f in &r.files {
            let what = format!("{} {}@{} {}", r.kind.singular(), r.id, r.commit, f.path);
            if !listed.insert(what.clone()) {
                continue;
            }
            out.push(Artifact {
                kind: "hf-file",
                what,
                sha256: f.sha256.clone(),
                size: f.size,
                publisher_digests: f.publisher_digests.iter().map(|d| d.source).collect(),
            });
        }
    }
    for image in m.images.iter().chain(m.charts.iter().map(|c| &c.artifact)) {
        let name = llmgw_shared::manifest::image_name(image);
        for d in image.all_blobs() {
            out.push(Artifact {
                kind: "oci-blob",
                what: format!("{name} {}", d.media_type),
                sha256: d.sha256.clone(),
                size: d.size,
                publisher_digests: Vec::new(),
            });
        }
    }
    out
}
