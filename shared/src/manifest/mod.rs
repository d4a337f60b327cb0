//! The bundle manifest: what a bundle holds, where each piece came from and
//! what its publisher said it should hash to (format 1, and format 2 which
//! adds Python environments, signed series, deltas and volumes — see
//! docs/ARCHITECTURE.md, "Bundle format 2").
//!
//! The manifest's own sha256 is the bundle's identity: the operator carries
//! it apart from the bundle (or a trusted key signs it), and import refuses a
//! bundle unless its manifest hashes to that value. Everything else in the
//! bundle is a blob named by its sha256, so the manifest vouches for every
//! byte.
//!
//! Same inputs give the same bytes: [`Manifest::to_canonical_json`] sorts
//! every list and serialises fields in declaration order. This version
//! writes format 2 and reads 1 and 2.

mod artifacts;
mod claims;
mod delivery;
mod digests;
mod evidence;
mod extras;
mod format;
mod kernel_repo;
mod oci;
mod oci_closed;
mod oci_names;
mod oci_tree;
mod python;
mod python_choices;
mod signatures;
mod site_lock;
mod validate;
mod validate_oci;

use std::collections::BTreeMap;

use serde::{Deserialize, Serialize};
use thiserror::Error;

use crate::Sha256;
use crate::names::UnsafeName;

pub use artifacts::{
    Asset, BlobRef, BuildRef, DigestSource, Gap, HfFile, HfRepo, KernelRepo, PublisherDigest,
    RefKind, Release, ReleaseSignature, RepoKind,
};
pub use delivery::{
    DEFAULT_CHANNEL, Delta, NeededBlob, PARITY_STRIPE, Parity, Piece, Placement, SIGNATURE_NAME,
    Volumes, blob_entry_name, chunk_entry_name, parity_entry_name,
};
pub use evidence::{
    Evidence, FileScan, MAX_EVIDENCE_ITEMS, PickleImport, RepoEvidence, SBOM_MEDIA_TYPE, SBOM_NAME,
    ScannerVerdict,
};
pub use extras::{DSL_GAP_SUFFIX, EXTRA_GAP_PREFIX, Extra, extra_gap_file, is_extra_host};
pub use kernel_repo::kernel_targets;
pub use oci::{HelmChart, OciDescriptor, OciImage};
pub use oci_closed::{OciTreeError, check_tree};
pub use oci_names::{
    MAX_REPOSITORY_CHARS, RESERVED_PREFIXES, is_media_type, is_platform, is_registry_host,
    is_repository, is_tag, registry_key, reserved_prefix,
};
pub use oci_tree::{
    Child, DOCKER_LIST, DOCKER_MANIFEST, MAX_OCI_CHILDREN, MAX_OCI_CONFIG_BYTES,
    MAX_OCI_MANIFEST_BYTES, Named, OCI_INDEX, OCI_MANIFEST, OciParseError, REFERENCE_DIGEST,
    REFERENCE_TYPE, is_image_manifest, is_index, is_manifest, parse_manifest,
};
pub use python::{AssetRef, MetadataFile, PythonEnv, PythonFile, PythonIndex, Resolver, Yanked};
pub use python_choices::NodeInterpreter;
pub use signatures::{
    AdmittedBy, MAX_SIGNATURES, PublisherSignature, SIGSTORE_SUFFIX, SignatureKind, Signatures,
    TRUSTED_ROOT_NAME, UnsignedArtifact,
};
pub use site_lock::{SiteLock, SiteLockFormat};
pub use validate_oci::{HELM_CHART_CONTENT, HELM_CONFIG, image_name};

/// The format this version of llmgw writes for a bundle without images or
/// charts, so a mirror not yet upgraded still imports it.
pub const FORMAT_VERSION: u32 = 2;

/// The format of a bundle that carries images or charts: format 2 readers
/// must refuse it (they would not serve what it carries), and do, by its
/// version, with a message that says to upgrade.
pub const FORMAT_OCI: u32 = 3;

/// The format of a bundle that carries supply-chain evidence (its SBOM,
/// the Hub's verdicts): every bundle this version writes but a repair.
/// A format 3 reader refuses fields it does not know, so the version says
/// so first, with a message to upgrade.
pub const FORMAT_EVIDENCE: u32 = 4;

/// The format of a bundle in which one blob is named by descriptors of
/// different media types (the two-byte `{}` as a legacy config and as OCI
/// 1.1's empty descriptor, in one image): a media type belongs to a
/// descriptor, not to a blob. A format 4 reader checks one media type per
/// blob and would refuse such a bundle as made wrong; the version tells it
/// to upgrade instead.
pub const FORMAT_SHARED_BLOBS: u32 = 5;

/// The format of a bundle that records the Hub's Xet hash of a file
/// (`HfFile::xet_hash`): a format 5 reader refuses fields it does not
/// know, so the version tells it to upgrade first.
pub const FORMAT_XET: u32 = 6;

/// The format of a bundle that carries publishers' Sigstore signatures
/// (`evidence.signatures`): a format 6 reader refuses fields it does not
/// know, so the version tells it to upgrade first.
pub const FORMAT_SIGNATURES: u32 = 7;

/// The format of a bundle that carries a Hub kernel repository
/// (`RepoKind::Kernel`, `HfRepo::kernel`): a format 7 reader knows no
/// such repository type, so the version tells it to upgrade first.
pub const FORMAT_KERNELS: u32 = 8;

/// The format of a bundle that carries a PEP 740 attestation of a wheel
/// (`SignatureKind::Pep740Provenance`, with its file name and the policy
/// that admitted it): a format 8 reader knows no such kind, so the
/// version tells it to upgrade first.
pub const FORMAT_PEP740: u32 = 9;

/// The formats this version of llmgw reads: bundles made by earlier
/// releases (formats 1 to 5) still import; 5 to 9 are what this version
/// writes when one blob is named under two media types, a Hub file's Xet
/// hash is recorded, a publisher's signature is carried, a kernel
/// repository is, or a wheel's PEP 740 attestation is.
pub const READABLE_FORMATS: [u32; 9] = [1, 2, 3, 4, 5, 6, 7, 8, 9];

/// A manifest larger than this is refused unread: even a bundle of every
/// llama.cpp build, two vLLM environments per arch and a thousand model
/// files stays far below it.
pub const MAX_MANIFEST_BYTES: u64 = 64 * 1024 * 1024;

/// The file name of the manifest, the first entry of every bundle.
pub const MANIFEST_NAME: &str = "manifest.json";

/// The folder blobs live under, in a bundle: `blobs/sha256/<64 hex>`.
pub const BLOB_DIR: &str = "blobs/sha256";

/// The engine name of llmgw's own release, whose `SHA256SUMS` is signed.
pub const LLMGW_ENGINE: &str = "llmgw";

/// The engine name of a python-build-standalone interpreter release.
pub const PYTHON_ENGINE: &str = "python";

/// What a bundle holds.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Manifest {
    /// 1 or 2; [`FORMAT_VERSION`] for what this version writes.
    pub format_version: u32,
    /// When the bundle was made (RFC 3339, UTC; `SOURCE_DATE_EPOCH` when
    /// set). Shown to people; never decides what is served.
    pub created: String,
    /// The program that made it: `llmgw 0.1.0`.
    pub tool: String,
    /// The node architectures it was made for (`amd64`, `arm64`).
    pub arches: Vec<String>,
    /// Format 2: the series a signed bundle belongs to (`--channel`);
    /// absent means [`DEFAULT_CHANNEL`].
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub channel: Option<String>,
    /// Format 2: the bundle's place in its signer's channel; higher is
    /// newer. What the mirror serves as a branch or `latest` follows it.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub sequence: Option<u64>,
    /// Format 2: after this time (RFC 3339, UTC) import warns, or refuses
    /// where the store enforces expiry.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub expires: Option<String>,
    /// GitHub-style releases: llmgw's own, each engine's, interpreters.
    #[serde(default)]
    pub releases: Vec<Release>,
    /// Hugging Face repositories, pinned to a commit.
    #[serde(default)]
    pub repos: Vec<HfRepo>,
    /// Format 2: resolved Python environments, one package index each.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub python_envs: Vec<PythonEnv>,
    /// What was asked for and is not in the bundle (`--allow-missing`).
    #[serde(default)]
    pub gaps: Vec<Gap>,
    /// Format 2: the blobs this bundle relies on the store holding.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub delta: Option<Delta>,
    /// Format 2: how the carried blobs are cut across volumes.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub volumes: Option<Volumes>,
    /// Format 3: container images, each a closed tree of OCI blobs.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub images: Vec<OciImage>,
    /// Format 3: Helm charts, each served as an OCI artifact and a
    /// classic chart repository entry.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub charts: Vec<HelmChart>,
    /// Format 4: the SBOM and what the Hub said about each repository.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub evidence: Option<Evidence>,
    /// Format 4: the files engines fetch at run time (issue #32).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub extras: Vec<Extra>,
}

/// Why a manifest was refused.
#[derive(Debug, Error)]
pub enum ManifestError {
    #[error("manifest.json is {actual} bytes; at most {max} are accepted")]
    /// Longer than any manifest llmgw writes: refused unread.
    TooLarge {
        /// Its length in bytes.
        actual: u64,
        /// The most accepted ([`MAX_MANIFEST_BYTES`]).
        max: u64,
    },
    /// serde_json's message (the source) may quote the manifest (an
    /// unknown field's name); the chain prints it escaped and cut.
    #[error("manifest.json is not valid JSON of bundle format 1 to 9")]
    Parse(#[from] serde_json::Error),
    #[error(
        "manifest.json is bundle format {found}, and this llmgw reads formats 1 to 9 only; \
         use the llmgw version that made the bundle or a newer one"
    )]
    /// A format this llmgw does not read (a newer one).
    UnknownFormat {
        /// The `format_version` it has.
        found: u64,
    },
    #[error("manifest.json")]
    /// A name that could become a path outside the bundle's folder.
    UnsafeName(#[from] UnsafeName),
    #[error(
        "manifest.json: {}: expected {expected}, found \"{}\"",
        crate::shown::shown(.what),
        crate::shown::shown(.found)
    )]
    /// A field whose value is not of the form its kind has.
    BadValue {
        /// The field, as the operator reads it (`sha256 of release … asset …`).
        what: String,
        /// What form it should have.
        expected: &'static str,
        /// The value found (escaped when printed).
        found: String,
    },
    #[error("manifest.json: {0}")]
    /// Two parts of the manifest contradict each other; the text names both.
    Inconsistent(String),
    #[error(
        "manifest.json: {what} {name} is named under {prefix}/, a name the mirror makes itself \
         (a Hub repository's OCI profiles, a packaged chart); carry it under another repository path"
    )]
    /// An image or chart under a name the mirror reserves for what it makes
    /// (`RESERVED_PREFIXES`): carried, it would take that name from a model.
    Reserved {
        /// `image` or `chart`.
        what: &'static str,
        /// The image as named in messages.
        name: String,
        /// The reserved first component.
        prefix: &'static str,
    },
}

impl Manifest {
    /// A new empty manifest stamped with the build time.
    pub fn new(arches: Vec<String>, created_unix: u64) -> Self {
        Self {
            format_version: FORMAT_VERSION,
            created: crate::time::rfc3339_utc(created_unix),
            tool: format!("llmgw {}", env!("CARGO_PKG_VERSION")),
            arches,
            releases: Vec::new(),
            channel: None,
            sequence: None,
            expires: None,
            repos: Vec::new(),
            python_envs: Vec::new(),
            gaps: Vec::new(),
            delta: None,
            volumes: None,
            images: Vec::new(),
            charts: Vec::new(),
            evidence: None,
            extras: Vec::new(),
        }
    }

    /// Reads and checks a manifest: its size, format version, every name
    /// and digest, and that it agrees with itself.
    pub fn from_json_bytes(bytes: &[u8]) -> Result<Self, ManifestError> {
        if bytes.len() as u64 > MAX_MANIFEST_BYTES {
            return Err(ManifestError::TooLarge {
                actual: bytes.len() as u64,
                max: MAX_MANIFEST_BYTES,
            });
        }
        // The version first, so a newer format gets a clear message rather
        // than a complaint about a field this version does not know.
        #[derive(Deserialize)]
        struct Version {
            format_version: u64,
        }
        let v: Version = serde_json::from_slice(bytes)?;
        if !READABLE_FORMATS
            .iter()
            .any(|f| u64::from(*f) == v.format_version)
        {
            return Err(ManifestError::UnknownFormat {
                found: v.format_version,
            });
        }
        let m: Manifest = serde_json::from_slice(bytes)?;
        m.validate()?;
        Ok(m)
    }

    /// The canonical bytes: lists sorted, pretty-printed, newline-ended.
    /// Its sha256 is the bundle's identity.
    pub fn to_canonical_json(&self) -> Vec<u8> {
        let mut m = self.clone();
        m.sort();
        let mut out = serde_json::to_vec_pretty(&m).unwrap_or_default();
        out.push(b'\n');
        out
    }

    /// Sorts every list, so that order of discovery never changes bytes.
    pub fn sort(&mut self) {
        self.arches.sort();
        self.arches.dedup();
        for r in &mut self.releases {
            r.assets.sort_by(|a, b| a.name.cmp(&b.name));
            for b in &mut r.builds {
                b.assets.sort();
            }
            r.builds
                .sort_by(|a, b| (&a.arch, &a.variant).cmp(&(&b.arch, &b.variant)));
        }
        self.releases
            .sort_by(|a, b| (&a.repo, &a.tag).cmp(&(&b.repo, &b.tag)));
        for r in &mut self.repos {
            r.files.sort_by(|a, b| a.path.cmp(&b.path));
        }
        // The revision last: one commit may be carried under several.
        self.repos.sort_by(|a, b| {
            (a.kind, &a.id, &a.commit, &a.revision).cmp(&(b.kind, &b.id, &b.commit, &b.revision))
        });
        for env in &mut self.python_envs {
            env.files.sort_by(|a, b| a.filename.cmp(&b.filename));
        }
        self.python_envs.sort_by(|a, b| a.name.cmp(&b.name));
        self.gaps.sort();
        self.gaps.dedup();
        if let Some(delta) = &mut self.delta {
            delta.sort();
        }
        for image in &mut self.images {
            image.sort();
        }
        self.images.sort_by(|a, b| {
            (&a.registry, &a.repository, &a.tag, &a.digest).cmp(&(
                &b.registry,
                &b.repository,
                &b.tag,
                &b.digest,
            ))
        });
        for chart in &mut self.charts {
            chart.artifact.sort();
        }
        self.charts
            .sort_by(|a, b| (&a.name, &a.version).cmp(&(&b.name, &b.version)));
        if let Some(e) = &mut self.evidence {
            e.sort();
        }
        for e in &mut self.extras {
            e.engines.sort();
            e.engines.dedup();
        }
        self.extras
            .sort_by(|a, b| (&a.host, &a.path).cmp(&(&b.host, &b.path)));
        // Volume placements keep their order: it is the order of the tar.
    }

    /// Every blob the manifest names, with its size.
    pub fn blobs(&self) -> BTreeMap<Sha256, u64> {
        let mut out = self.blobs_but_hub_files();
        for r in &self.repos {
            for f in &r.files {
                out.insert(f.sha256.clone(), f.size);
            }
        }
        out
    }

    /// Every blob the manifest names but its Hub repositories' files: the
    /// part a mirror that keeps a manifest without its file lists (the
    /// bulk of a large dataset's manifest) still reads from it.
    pub fn blobs_but_hub_files(&self) -> BTreeMap<Sha256, u64> {
        let mut out = BTreeMap::new();
        for r in &self.releases {
            for a in &r.assets {
                out.insert(a.sha256.clone(), a.size);
            }
        }
        for env in &self.python_envs {
            out.insert(env.lock.sha256.clone(), env.lock.size);
            if let Some(p) = env.site_lock.as_ref().and_then(|s| s.project.as_ref()) {
                out.insert(p.sha256.clone(), p.size);
            }
            for f in &env.files {
                out.insert(f.sha256.clone(), f.size);
                if let Some(m) = &f.metadata {
                    out.insert(m.sha256.clone(), m.size);
                }
            }
        }
        if let Some(delta) = &self.delta {
            for r in &delta.repairs {
                out.insert(r.sha256.clone(), r.size);
            }
        }
        let artifacts = self
            .images
            .iter()
            .chain(self.charts.iter().map(|c| &c.artifact));
        for image in artifacts {
            for d in image.all_blobs() {
                out.insert(d.sha256.clone(), d.size);
            }
        }
        if let Some(e) = &self.evidence {
            out.insert(e.sbom.sha256.clone(), e.sbom.size);
            for b in e.signatures.iter().flat_map(Signatures::blobs) {
                out.insert(b.sha256.clone(), b.size);
            }
        }
        for e in &self.extras {
            out.insert(e.sha256.clone(), e.size);
        }
        out
    }

    /// Whether this manifest is a repair bundle (`bundle create --need`):
    /// blobs for another bundle, nothing to serve, outside any series.
    pub fn is_repair(&self) -> bool {
        self.delta.as_ref().is_some_and(Delta::is_repair)
    }

    /// The blobs the bundle itself carries: every blob the manifest names
    /// but the delta's prerequisites.
    pub fn carried_blobs(&self) -> BTreeMap<Sha256, u64> {
        let mut out = self.blobs();
        if let Some(delta) = &self.delta {
            for p in &delta.prerequisites {
                out.remove(&p.sha256);
            }
        }
        out
    }

    /// The channel a signed series is kept in: [`DEFAULT_CHANNEL`] unless
    /// the manifest names one.
    pub fn channel(&self) -> &str {
        self.channel.as_deref().unwrap_or(DEFAULT_CHANNEL)
    }

    /// The total size of the distinct blobs.
    pub fn total_bytes(&self) -> u64 {
        self.blobs().values().sum()
    }

    /// llmgw's own release, if the bundle carries it.
    pub fn llmgw_release(&self) -> Option<&Release> {
        self.releases.iter().find(|r| r.engine == LLMGW_ENGINE)
    }
}

#[cfg(test)]
mod tests;
