//! Format 3: container images and Helm charts, carried as the OCI objects
//! their registry serves (manifests, indexes, configs, layers), each a blob
//! named by the sha256 its parent's descriptor gives.
//!
//! Invariant: an image is a closed, content-addressed tree. `digest` is the
//! sha256 of the top manifest or index exactly as the registry served it (the
//! tag resolved once, and a pin checked); every manifest and blob carried is
//! named by a descriptor of a manifest carried above it, so the top digest —
//! which the bundle's own hash or signature vouches for — vouches for every
//! byte. What an index names and the bundle does not carry (other platforms)
//! is listed in `left_out`, never dropped silently.

use serde::{Deserialize, Serialize};

use crate::Sha256;

/// One image (or any OCI artifact) as one registry served it at one tag.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct OciImage {
    /// The registry host as Docker normalizes it (`docker.io`, `ghcr.io`,
    /// `127.0.0.1:5000`); none for an image read from a local OCI layout or
    /// a chart packaged from a file, served without a registry (`ns` does
    /// not matter for it).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub registry: Option<String>,
    /// The repository path on that registry (`vllm/vllm-openai`,
    /// `library/ubuntu`): the name the mirror serves it under at `/v2/`.
    pub repository: String,
    /// The tag resolved; none for a reference pinned by digest alone.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub tag: Option<String>,
    /// The sha256 of the top manifest or index: what the tag named when
    /// the bundle was made, and the registry's `Docker-Content-Digest`.
    pub digest: Sha256,
    /// Every manifest and index carried, the top one among them.
    pub manifests: Vec<OciDescriptor>,
    /// Every config and layer blob the carried manifests name.
    pub blobs: Vec<OciDescriptor>,
    /// Children of an index that were not carried (platforms outside the
    /// bundle's `arches`), named so that nothing is left out silently.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub left_out: Vec<OciDescriptor>,
}

/// A descriptor, as an OCI manifest or index gives it.
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct OciDescriptor {
    /// The blob's sha256: the descriptor's digest.
    pub sha256: Sha256,
    /// Its length in bytes, as the descriptor gives it.
    pub size: u64,
    /// The descriptor's `mediaType`.
    pub media_type: String,
    /// For an index's child: `os/arch[/variant]` from its `platform`
    /// (`unknown/unknown` for an attestation manifest).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub platform: Option<String>,
}

/// A Helm chart, served as the OCI artifact `helm push` makes and in a
/// classic chart repository (`/charts/index.yaml`).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct HelmChart {
    /// `name` from the chart's Chart.yaml.
    pub name: String,
    /// `version` from the chart's Chart.yaml (SemVer 2).
    pub version: String,
    /// `appVersion` from Chart.yaml, where it has one.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub app_version: Option<String>,
    /// The packaged chart (`.tgz`): one of `artifact`'s blobs.
    pub package: Sha256,
    /// The OCI artifact: pulled as the registry served it (`--chart
    /// oci://…`), or made from the `.tgz` exactly as `helm push` makes it
    /// (`--chart PATH.tgz`; then `registry` is none).
    pub artifact: OciImage,
}

impl OciImage {
    /// Every blob of the image: its manifests, configs and layers.
    pub fn all_blobs(&self) -> impl Iterator<Item = &OciDescriptor> {
        self.manifests.iter().chain(self.blobs.iter())
    }

    /// Sorts every list, so that order of discovery never changes bytes.
    pub fn sort(&mut self) {
        for list in [&mut self.manifests, &mut self.blobs, &mut self.left_out] {
            list.sort();
            list.dedup();
        }
    }
}
