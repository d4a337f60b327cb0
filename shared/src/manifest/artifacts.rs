//! The artifacts a manifest lists: GitHub-style release assets and Hugging
//! Face repository files, each with the digests its publisher gave.
//!
//! Invariant: every artifact names its bytes by sha256 (the blob's name) and
//! carries at least one publisher digest that the bundler checked against
//! those bytes; [`super::Manifest::validate`] refuses a manifest where that
//! does not hold.

use serde::{Deserialize, Serialize};

use crate::{GitOid, RepoId, Sha256};

/// One release of one repository, and the assets of it that were carried.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Release {
    /// `owner/repo` on the publisher's server, checked as it is read.
    #[serde(deserialize_with = "crate::ids::release_repository")]
    pub repo: RepoId,
    /// The release tag: `b6123`, `0.12.20`, `v0.5.0`.
    pub tag: String,
    /// `llmgw` for llmgw's own release, `python` for a python-build-standalone
    /// interpreter (format 2), else the recipe table's engine name.
    pub engine: String,
    /// The version asked for.
    pub version: String,
    /// Which builds of the recipe table these assets make up, per arch.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub builds: Vec<BuildRef>,
    /// The files carried.
    pub assets: Vec<Asset>,
    /// For llmgw's release: the signed checksum file and its signature,
    /// both also listed in `assets`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub signature: Option<ReleaseSignature>,
}

/// A build from the recipe table: the assets one node installs.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct BuildRef {
    /// The processor architecture the build runs on (`amd64`, `arm64`).
    pub arch: String,
    /// Which build of the engine for that architecture (`cuda`, `cpu`, ...), as the recipe table names it.
    pub variant: String,
    /// The names of the release's assets that make up the build.
    pub assets: Vec<String>,
}

/// How a release's checksums are signed.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ReleaseSignature {
    /// The asset holding the checksums: `SHA256SUMS`.
    pub sums: String,
    /// The asset holding the minisign signature: `SHA256SUMS.minisig`.
    pub minisig: String,
    /// The minisign key id that signed it, as the minisign CLI prints it.
    pub key_id: String,
}

/// A release asset.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Asset {
    /// The asset's file name as published: a name, never a path.
    pub name: String,
    /// Its length in bytes, checked when it is fetched and imported.
    pub size: u64,
    /// sha256 of the bytes: the blob's name.
    pub sha256: Sha256,
    /// What the publisher said, each checked against the bytes.
    pub publisher_digests: Vec<PublisherDigest>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    /// The `Content-Type` GitHub served it with, served back the same way.
    pub content_type: Option<String>,
}

/// A digest a publisher gave, and where it came from.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct PublisherDigest {
    /// Where the digest came from, which says how it was checked.
    pub source: DigestSource,
    /// Lower-case hex: a sha256 for every source but `git-blob-sha1`.
    pub value: String,
}

/// Where a publisher's digest came from.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum DigestSource {
    /// GitHub's asset `digest` field (`sha256:<hex>`).
    GithubAssetDigest,
    /// A `<asset>.sha256` file beside the asset (cargo-dist, e.g. uv).
    Sha256Sidecar,
    /// A line of the release's `SHA256SUMS`, or of another checksum file
    /// in `sha256sum`'s format whose own sha256 is pinned (a runtime
    /// extra's: FlashInfer's `checksums.txt`, pinned in its `artifacts.py`).
    Sha256Sums,
    /// A Hugging Face LFS file's sha256 oid.
    HfLfsSha256,
    /// A Hugging Face file's git blob sha1.
    GitBlobSha1,
    /// `SHA256SUMS` or `SHA256SUMS.minisig` of a signed release (llmgw's),
    /// where the publisher gives no other digest for them (Gitea gives
    /// none): the sha256 of the exact bytes whose minisign signature
    /// verified with the key named in the release's `signature.key_id`.
    /// Import proves it again by verifying the signature itself.
    MinisignVerified,
    /// Format 2. A file's `hashes.sha256` in a package index's PEP 691 JSON
    /// answer (PyPI's simple API).
    PypiSimpleSha256,
    /// Format 2. A `core-metadata` (PEP 714; formerly
    /// `data-dist-info-metadata`, PEP 658) sha256 for a wheel's `.metadata`
    /// file, from the same JSON answer.
    PypiCoreMetadata,
    /// Format 2. The `#sha256=` fragment of a file link in a PEP 503 HTML
    /// index (the PyTorch index gives nothing else).
    IndexUrlFragment,
    /// Format 2. The `sha256` that uv's own `download-metadata.json` (at the
    /// uv tag the bundle carries) records for a python-build-standalone
    /// interpreter archive.
    UvDownloadMetadata,
    /// Format 2. The `sha256` a site's own lock (`uv.lock`, `pylock.toml`)
    /// records for a file, checked besides the index's.
    SiteLockSha256,
    /// Format 4, a runtime extra's. The sha256 the file's own client pins
    /// in its source (tiktoken's and Harmony's `expected_hash` for an
    /// encoding), as the recipe table records it with where it is stated.
    ClientPinnedSha256,
}

impl DigestSource {
    /// Whether the value is a sha256 (else a git blob sha1).
    pub fn is_sha256(self) -> bool {
        !matches!(self, DigestSource::GitBlobSha1)
    }

    /// Whether a format 1 manifest may name this source.
    pub fn in_format_1(self) -> bool {
        !matches!(
            self,
            DigestSource::PypiSimpleSha256
                | DigestSource::PypiCoreMetadata
                | DigestSource::IndexUrlFragment
                | DigestSource::UvDownloadMetadata
                | DigestSource::SiteLockSha256
                | DigestSource::ClientPinnedSha256
        )
    }
}

/// The kind of a Hugging Face repository.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum RepoKind {
    /// A model repository (`/api/models/...`).
    Model,
    /// A dataset repository (`/api/datasets/...`).
    Dataset,
    /// A kernel repository (`/api/kernels/...`, format 8): compute kernels
    /// the `kernels` library loads, one build folder per variant.
    Kernel,
}

impl RepoKind {
    /// The plural the Hub's API paths use: `models`, `datasets`.
    pub fn api_plural(self) -> &'static str {
        match self {
            RepoKind::Model => "models",
            RepoKind::Dataset => "datasets",
            RepoKind::Kernel => "kernels",
        }
    }

    /// The singular, as `huggingface_hub` names a `repo_type`: `model`,
    /// `dataset`, `kernel`.
    pub fn singular(self) -> &'static str {
        match self {
            RepoKind::Model => "model",
            RepoKind::Dataset => "dataset",
            RepoKind::Kernel => "kernel",
        }
    }

    /// The prefix of resolve URLs: nothing for models, `datasets/` or
    /// `kernels/` else.
    pub fn url_prefix(self) -> &'static str {
        match self {
            RepoKind::Model => "",
            RepoKind::Dataset => "datasets/",
            RepoKind::Kernel => "kernels/",
        }
    }
}

/// What the revision asked for was, on the Hub, when the bundle was made
/// (format 2; the Hub's refs API says which). Where a manifest does not say
/// (every format 1 manifest), the revision is served as a branch, as before.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum RefKind {
    /// A branch (`main`, `refs/pr/1`).
    Branch,
    /// A tag (`v1`).
    Tag,
    /// A commit id given as such.
    Commit,
}

/// A Hugging Face repository pinned to one commit.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct HfRepo {
    #[serde(rename = "type")]
    /// Whether the repository is a model or a dataset: their URLs differ.
    pub kind: RepoKind,
    /// `org/name`, checked as it is read.
    pub id: RepoId,
    /// The revision asked for (`main`, a tag, or a commit).
    pub revision: String,
    /// Format 2: whether `revision` was a branch, a tag or a commit.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub ref_kind: Option<RefKind>,
    /// The 40-hex commit it resolved to.
    pub commit: String,
    /// The globs the files were chosen with; empty means every file.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub patterns: Vec<String>,
    /// Every file of the repository at the commit, as the Hub listed it.
    pub files: Vec<HfFile>,
    /// Format 8, a kernel repository only: which build folders were
    /// carried and what the Hub said of its publisher.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub kernel: Option<KernelRepo>,
}

/// What a bundle records of a kernel repository besides its files.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct KernelRepo {
    /// The build folders carried (`torch29-cxx11-cu129-x86_64-linux`):
    /// every file under `build/` is in one of them.
    pub variants: Vec<String>,
    /// Whether the Hub named the owner a trusted kernel publisher
    /// (`trustedKernelPublisher` in `/api/organizations/{org}/overview`)
    /// when the bundle was made. The client refuses an untrusted one
    /// unless told `trust_remote_code=True`; the mirror answers as the Hub
    /// did.
    pub trusted_publisher: bool,
}

/// A file of a Hugging Face repository.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct HfFile {
    /// Path inside the repository.
    pub path: String,
    /// Its length in bytes, checked when it is fetched and imported.
    pub size: u64,
    /// sha256 of the bytes: the blob's name.
    pub sha256: Sha256,
    /// The git blob sha1 the Hub lists as the file's `oid`: of the content,
    /// or for an LFS file of its pointer.
    pub git_oid: GitOid,
    /// Whether the file is stored in LFS (its publisher digest is then the
    /// LFS sha256, else the git blob sha1).
    pub lfs: bool,
    /// The Hub's own digests of the file (the LFS sha256 or the git blob sha1), each checked against the bytes.
    pub publisher_digests: Vec<PublisherDigest>,
    /// Format 6. The file's Xet hash as the Hub lists it (`xetHash` in the
    /// tree), for an LFS file the Hub stores in Xet. Import computes the
    /// hash of the bytes in its one pass and refuses the bundle when the
    /// two differ: the mirror then serves the file over Xet under the
    /// hash the Hub's clients already know.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub xet_hash: Option<crate::XetHash>,
}

impl HfFile {
    /// What the Hub lists for a file of these bytes at `path`: its sha256,
    /// its git oid (of the bytes, or for an LFS file of its pointer) and
    /// the one publisher digest a client checks (the LFS sha256, or the git
    /// blob sha1). `bundle create` learns all of this from the Hub's
    /// listing; this is for whoever has the bytes at hand, as tests that
    /// write manifests do, so that the rule is written once.
    pub fn describing(path: &str, bytes: &[u8], lfs: bool) -> Self {
        let sha256 = Sha256::of(bytes);
        let size = bytes.len() as u64;
        let git_oid = if lfs {
            GitOid::of_blob(crate::lfs_pointer(sha256.as_str(), size).as_bytes())
        } else {
            GitOid::of_blob(bytes)
        };
        let digest = if lfs {
            PublisherDigest {
                source: DigestSource::HfLfsSha256,
                value: sha256.as_str().to_string(),
            }
        } else {
            PublisherDigest {
                source: DigestSource::GitBlobSha1,
                value: git_oid.as_str().to_string(),
            }
        };
        HfFile {
            path: path.to_string(),
            size,
            sha256,
            git_oid,
            lfs,
            publisher_digests: vec![digest],
            xet_hash: None,
        }
    }
}

/// Something asked for that the bundle does not carry.
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Gap {
    /// What is missing: `ggml-org/llama.cpp b6123 llama-b6123-bin-ubuntu-x64.tar.gz`.
    pub what: String,
    /// Why.
    pub reason: String,
}

/// A blob the manifest refers to by content alone.
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct BlobRef {
    /// The blob's sha256: its name in the store.
    pub sha256: Sha256,
    /// Its length in bytes.
    pub size: u64,
}
