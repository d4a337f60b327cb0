//! Format 2: Python environments — a resolved, hash-checked set of wheels
//! for one engine (or one operator-chosen requirements set) on one node
//! architecture, served by the mirror as one package index.
//!
//! Invariant: an environment is complete and closed. Its `files` are every
//! distribution the lock names for that platform, each checked against its
//! index's own digest independently of the resolver; the mirror serves an
//! environment's index from these entries only, never merged with another
//! environment's (a CUDA 13 node must never be offered a `+cu129` torch).

use serde::{Deserialize, Serialize};

use super::artifacts::{BlobRef, PublisherDigest};
use crate::Sha256;

/// One resolved environment: `vllm-0.20.1-cu13-amd64`, `site-arm64`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct PythonEnv {
    /// The index name: `{engine}-{version}-{variant}-{arch}` for an engine,
    /// `{NAME}-{arch}` for `--python-env NAME=…`. Unique in a manifest; the
    /// mirror serves it at `/pypi/{name}/simple/`.
    pub name: String,
    /// The recipe table's engine (`vllm`, `sglang`); none for an
    /// operator-chosen set.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub engine: Option<String>,
    /// The engine version the table gave (may differ from the one asked
    /// for: the newest version built for an older GPU generation).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub version: Option<String>,
    /// The recipe variant (`cu13`, `cu129`, `cu12`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub variant: Option<String>,
    /// The node architecture (`amd64`, `arm64`).
    pub arch: String,
    /// The Python version resolved for (`3.12`).
    pub python: String,
    /// The platform resolved for, as uv's `--python-platform` takes it:
    /// `x86_64-manylinux_2_28`.
    pub platform: String,
    /// The requirements as given to the resolver (`vllm==0.20.1`).
    pub requirements: Vec<String>,
    /// The indexes the resolver was pointed at, in priority order.
    pub indexes: Vec<PythonIndex>,
    /// What resolved it.
    pub resolver: Resolver,
    /// The lock the resolver wrote (pylock.toml, PEP 751), byte for byte,
    /// with the upstream URLs in it; the mirror serves it rewritten.
    pub lock: BlobRef,
    /// The interpreter nodes create the environment with: an asset of a
    /// release entry of the same manifest (python-build-standalone).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub interpreter: Option<AssetRef>,
    /// OS packages a node needs besides the wheels (`gcc`), from the table.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub os_packages: Vec<String>,
    /// Free disk the table asks a node to have, in GB.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub free_gb: Option<u32>,
    /// The table's note, shown beside the installation (e.g. why an older
    /// version).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub note: Option<String>,
    /// `none` when the bundle carries no interpreter by choice and the
    /// nodes bring their own CPython `python`; absent, the interpreter is
    /// `interpreter` (or, with none named, a gap of the manifest).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub node_interpreter: Option<super::python_choices::NodeInterpreter>,
    /// Requirements the operator laid over every upstream pin (uv's
    /// overrides): `flashinfer-python==0.7.4`.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub overrides: Vec<String>,
    /// Bounds the operator put on what the resolver may pick (uv's
    /// constraints).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub constraints: Vec<String>,
    /// Set when the lock is a site's own (`--python-env NAME=PATH`), not
    /// one a resolver wrote here.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub site_lock: Option<super::site_lock::SiteLock>,
    /// Every distribution file of the lock for this platform.
    pub files: Vec<PythonFile>,
}

/// An index a resolver used.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct PythonIndex {
    /// `pypi`, `pytorch-cu129`, or the name given with `--index NAME=URL`.
    pub name: String,
    /// The simple API's base URL as used (`https://pypi.org/simple`).
    pub url: String,
    /// Whether only the packages listed come from it (uv's `explicit`).
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub explicit: bool,
    /// The packages pinned to this index (for an explicit one).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub packages: Vec<String>,
}

/// The resolver and its version (`uv 0.9.5`), for the audit trail.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Resolver {
    /// The resolver's name (`uv`).
    pub name: String,
    /// Its version, as it reports it.
    pub version: String,
}

/// An asset of a release listed in the same manifest.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct AssetRef {
    /// The GitHub repository that publishes it.
    pub repo: String,
    /// The release tag it is published under.
    pub tag: String,
    /// The asset's file name in that release.
    pub name: String,
}

/// One distribution file (a wheel) of an environment.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct PythonFile {
    /// The project name, normalized as PEP 503 says (`huggingface-hub`).
    pub project: String,
    /// The version, local label included (`2.9.0+cu129`).
    pub version: String,
    /// The file name as published; a wheel name, never a path.
    pub filename: String,
    /// Its length in bytes, checked when it is fetched and imported.
    pub size: u64,
    /// sha256 of the bytes: the blob's name.
    pub sha256: Sha256,
    /// The file's `requires-python`, as the index gave it.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub requires_python: Option<String>,
    /// Whether the index marked the file yanked (PEP 592), and why.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub yanked: Option<Yanked>,
    /// When the index says it was uploaded (RFC 3339), if it says.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub upload_time: Option<String>,
    /// The wheel's `.metadata` file (PEP 658), carried so that resolvers
    /// need not open the wheel; absent where the index offers none.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub metadata: Option<MetadataFile>,
    /// The URL it was fetched from (audit only; never served or followed).
    pub origin: String,
    /// What the index said, each checked against the bytes.
    pub publisher_digests: Vec<PublisherDigest>,
}

/// A yanked file: PEP 592 allows a reason or none.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Yanked {
    /// The reason the index gave for yanking it, if any.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub reason: Option<String>,
}

/// A wheel's core metadata file, `{filename}.metadata`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct MetadataFile {
    /// The sha256 of the metadata file: the blob's name.
    pub sha256: Sha256,
    /// Its length in bytes.
    pub size: u64,
    /// The digests the index gave for the metadata file, each checked
    /// against the bytes.
    pub publisher_digests: Vec<PublisherDigest>,
}
