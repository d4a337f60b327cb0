//! The bundle manifest (format v1): what a bundle holds, where each piece
//! came from and what its publisher said it should hash to.
//!
//! The manifest's own sha256 is the bundle's identity: the operator carries
//! it apart from the bundle, and import refuses a bundle unless its
//! manifest hashes to that value. Everything else in the bundle is a blob
//! named by its sha256, so the manifest vouches for every byte.
//!
//! Same inputs give the same bytes: [`Manifest::to_canonical_json`] sorts
//! every list and serialises fields in declaration order.

use std::collections::BTreeMap;

use serde::{Deserialize, Serialize};
use thiserror::Error;

use crate::names::{self, UnsafeName};

/// The only format this version of llmgw reads and writes.
pub const FORMAT_VERSION: u32 = 1;

/// A manifest larger than this is refused unread: even a bundle of every
/// llama.cpp build and a thousand model files stays far below it.
pub const MAX_MANIFEST_BYTES: u64 = 64 * 1024 * 1024;

/// The file name of the manifest, the first entry of every bundle.
pub const MANIFEST_NAME: &str = "manifest.json";

/// The folder blobs live under, in a bundle: `blobs/sha256/<64 hex>`.
pub const BLOB_DIR: &str = "blobs/sha256";

/// What a bundle holds.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Manifest {
    /// [`FORMAT_VERSION`].
    pub format_version: u32,
    /// When the bundle was made (RFC 3339, UTC; `SOURCE_DATE_EPOCH` when set).
    pub created: String,
    /// The program that made it: `llmgw 0.1.0`.
    pub tool: String,
    /// The node architectures it was made for (`amd64`, `arm64`).
    pub arches: Vec<String>,
    /// GitHub-style releases: llmgw's own and each engine's.
    #[serde(default)]
    pub releases: Vec<Release>,
    /// Hugging Face repositories, pinned to a commit.
    #[serde(default)]
    pub repos: Vec<HfRepo>,
    /// What was asked for and is not in the bundle (`--allow-missing`).
    #[serde(default)]
    pub gaps: Vec<Gap>,
}

/// The engine name of llmgw's own release, whose `SHA256SUMS` is signed.
pub const LLMGW_ENGINE: &str = "llmgw";

/// One release of one repository, and the assets of it that were carried.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Release {
    /// `owner/repo` on the publisher's server.
    pub repo: String,
    /// The release tag: `b6123`, `0.12.20`, `v0.5.0`.
    pub tag: String,
    /// `llmgw` for llmgw's own release, else the recipe table's engine name.
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
    pub arch: String,
    pub variant: String,
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
    pub name: String,
    pub size: u64,
    /// sha256 of the bytes: the blob's name.
    pub sha256: String,
    /// What the publisher said, each checked against the bytes.
    pub publisher_digests: Vec<PublisherDigest>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub content_type: Option<String>,
}

/// A digest a publisher gave, and where it came from.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct PublisherDigest {
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
    /// A line of the release's `SHA256SUMS`.
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
}

impl DigestSource {
    /// Whether the value is a sha256 (else a git blob sha1).
    pub fn is_sha256(self) -> bool {
        !matches!(self, DigestSource::GitBlobSha1)
    }
}

/// The kind of a Hugging Face repository.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum RepoKind {
    Model,
    Dataset,
}

impl RepoKind {
    /// The plural the Hub's API paths use: `models`, `datasets`.
    pub fn api_plural(self) -> &'static str {
        match self {
            RepoKind::Model => "models",
            RepoKind::Dataset => "datasets",
        }
    }

    /// The prefix of resolve URLs: nothing for models, `datasets/` else.
    pub fn url_prefix(self) -> &'static str {
        match self {
            RepoKind::Model => "",
            RepoKind::Dataset => "datasets/",
        }
    }
}

/// A Hugging Face repository pinned to one commit.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct HfRepo {
    #[serde(rename = "type")]
    pub kind: RepoKind,
    /// `org/name`.
    pub id: String,
    /// The revision asked for (`main`, a tag, or a commit).
    pub revision: String,
    /// The 40-hex commit it resolved to.
    pub commit: String,
    /// The globs the files were chosen with; empty means every file.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub patterns: Vec<String>,
    pub files: Vec<HfFile>,
}

/// A file of a Hugging Face repository.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct HfFile {
    /// Path inside the repository.
    pub path: String,
    pub size: u64,
    /// sha256 of the bytes: the blob's name.
    pub sha256: String,
    /// The git blob sha1 the Hub lists as the file's `oid`: of the content,
    /// or for an LFS file of its pointer.
    pub git_oid: String,
    /// Whether the file is stored in LFS (its publisher digest is then the
    /// LFS sha256, else the git blob sha1).
    pub lfs: bool,
    pub publisher_digests: Vec<PublisherDigest>,
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

/// Why a manifest was refused.
#[derive(Debug, Error)]
pub enum ManifestError {
    #[error("manifest.json is {actual} bytes; at most {max} are accepted")]
    TooLarge { actual: u64, max: u64 },
    #[error("manifest.json is not valid JSON of bundle format {FORMAT_VERSION}: {0}")]
    Parse(#[from] serde_json::Error),
    #[error(
        "manifest.json is bundle format {found}, and this llmgw reads format {FORMAT_VERSION} only; \
         use the llmgw version that made the bundle or a newer one"
    )]
    UnknownFormat { found: u64 },
    #[error("manifest.json: {0}")]
    UnsafeName(#[from] UnsafeName),
    #[error("manifest.json: {what}: expected {expected}, found {found:?}")]
    BadValue {
        what: String,
        expected: &'static str,
        found: String,
    },
    #[error("manifest.json: {0}")]
    Inconsistent(String),
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
            repos: Vec::new(),
            gaps: Vec::new(),
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
        if v.format_version != u64::from(FORMAT_VERSION) {
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
        self.repos
            .sort_by(|a, b| (a.kind, &a.id, &a.commit).cmp(&(b.kind, &b.id, &b.commit)));
        self.gaps.sort();
        self.gaps.dedup();
    }

    /// Every blob the manifest names, with its size.
    pub fn blobs(&self) -> BTreeMap<String, u64> {
        let mut out = BTreeMap::new();
        for r in &self.releases {
            for a in &r.assets {
                out.insert(a.sha256.clone(), a.size);
            }
        }
        for r in &self.repos {
            for f in &r.files {
                out.insert(f.sha256.clone(), f.size);
            }
        }
        out
    }

    /// The total size of the distinct blobs.
    pub fn total_bytes(&self) -> u64 {
        self.blobs().values().sum()
    }

    /// llmgw's own release, if the bundle carries it.
    pub fn llmgw_release(&self) -> Option<&Release> {
        self.releases.iter().find(|r| r.engine == LLMGW_ENGINE)
    }

    /// Checks names, digests and consistency. Called by
    /// [`Manifest::from_json_bytes`]; the bundler calls it before writing.
    pub fn validate(&self) -> Result<(), ManifestError> {
        let mut sizes: BTreeMap<String, (u64, String)> = BTreeMap::new();
        let mut claim = |sha: &str, size: u64, who: String| -> Result<(), ManifestError> {
            if let Some((other, first)) = sizes.get(sha) {
                if *other != size {
                    return Err(ManifestError::Inconsistent(format!(
                        "{who} and {first} have the same sha256 {sha} but sizes {size} and {other}"
                    )));
                }
            } else {
                sizes.insert(sha.to_string(), (size, who));
            }
            Ok(())
        };
        for arch in &self.arches {
            names::check_file_name("architecture", arch)?;
        }
        let mut seen_releases = std::collections::BTreeSet::new();
        for r in &self.releases {
            names::check_repo_id("release repository", &r.repo)?;
            names::check_ref_name("release tag", &r.tag)?;
            names::check_file_name("engine", &r.engine)?;
            if !seen_releases.insert((&r.repo, &r.tag)) {
                return Err(ManifestError::Inconsistent(format!(
                    "release {} {} is listed twice",
                    r.repo, r.tag
                )));
            }
            let mut asset_names = std::collections::BTreeSet::new();
            for a in &r.assets {
                names::check_file_name("asset name", &a.name)?;
                let who = format!("{} {} {}", r.repo, r.tag, a.name);
                if !asset_names.insert(a.name.as_str()) {
                    return Err(ManifestError::Inconsistent(format!(
                        "{who} is listed twice"
                    )));
                }
                check_sha256(&format!("sha256 of {who}"), &a.sha256)?;
                check_digests(&who, &a.publisher_digests, &a.sha256, None)?;
                claim(&a.sha256, a.size, who)?;
            }
            for b in &r.builds {
                names::check_file_name("architecture", &b.arch)?;
                names::check_file_name("variant", &b.variant)?;
                for name in &b.assets {
                    names::check_file_name("asset name", name)?;
                }
            }
            match (&r.signature, r.engine == LLMGW_ENGINE) {
                (None, true) => {
                    return Err(ManifestError::Inconsistent(format!(
                        "llmgw release {} {} carries no signature; an llmgw release is only \
                         accepted with its signed SHA256SUMS",
                        r.repo, r.tag
                    )));
                }
                (Some(s), _) => {
                    for name in [&s.sums, &s.minisig] {
                        if !asset_names.contains(name.as_str()) {
                            return Err(ManifestError::Inconsistent(format!(
                                "release {} {} names {name} as its signature file but does not carry it",
                                r.repo, r.tag
                            )));
                        }
                    }
                }
                (None, false) => {}
            }
        }
        let mut seen_repos = std::collections::BTreeSet::new();
        for repo in &self.repos {
            names::check_repo_id("repository id", &repo.id)?;
            names::check_ref_name("revision", &repo.revision)?;
            if !names::is_sha1_hex(&repo.commit) {
                return Err(ManifestError::BadValue {
                    what: format!("commit of {}", repo.id),
                    expected: "40 lower-case hex digits",
                    found: repo.commit.clone(),
                });
            }
            if !seen_repos.insert((repo.kind, &repo.id, &repo.commit)) {
                return Err(ManifestError::Inconsistent(format!(
                    "repository {} at {} is listed twice",
                    repo.id, repo.commit
                )));
            }
            let mut paths = std::collections::BTreeSet::new();
            for f in &repo.files {
                names::check_relative_path("file path", &f.path)?;
                let who = format!("{} {}", repo.id, f.path);
                if !paths.insert(f.path.as_str()) {
                    return Err(ManifestError::Inconsistent(format!(
                        "{who} is listed twice"
                    )));
                }
                check_sha256(&format!("sha256 of {who}"), &f.sha256)?;
                if !names::is_sha1_hex(&f.git_oid) {
                    return Err(ManifestError::BadValue {
                        what: format!("git_oid of {who}"),
                        expected: "40 lower-case hex digits",
                        found: f.git_oid.clone(),
                    });
                }
                let git = (!f.lfs).then_some(f.git_oid.as_str());
                check_digests(&who, &f.publisher_digests, &f.sha256, git)?;
                claim(&f.sha256, f.size, who)?;
            }
        }
        Ok(())
    }
}

fn check_sha256(what: &str, value: &str) -> Result<(), ManifestError> {
    if names::is_sha256_hex(value) {
        Ok(())
    } else {
        Err(ManifestError::BadValue {
            what: what.to_string(),
            expected: "64 lower-case hex digits",
            found: value.to_string(),
        })
    }
}

/// Every publisher digest must be well formed and agree with the bytes'
/// own digests: the bundler only records a digest it checked, so one that
/// disagrees means the manifest was edited.
fn check_digests(
    who: &str,
    digests: &[PublisherDigest],
    sha256: &str,
    git_blob_sha1: Option<&str>,
) -> Result<(), ManifestError> {
    if digests.is_empty() {
        return Err(ManifestError::Inconsistent(format!(
            "{who} has no publisher digest; nothing unverified may be carried"
        )));
    }
    for d in digests {
        let ok = if d.source.is_sha256() {
            names::is_sha256_hex(&d.value)
        } else {
            names::is_sha1_hex(&d.value)
        };
        if !ok {
            return Err(ManifestError::BadValue {
                what: format!("{:?} digest of {who}", d.source),
                expected: if d.source.is_sha256() {
                    "64 lower-case hex digits"
                } else {
                    "40 lower-case hex digits"
                },
                found: d.value.clone(),
            });
        }
        let agrees = if d.source.is_sha256() {
            d.value == sha256
        } else {
            git_blob_sha1 == Some(d.value.as_str())
        };
        if !agrees {
            return Err(ManifestError::Inconsistent(format!(
                "{who}: its {:?} publisher digest {} does not match the file's own digest",
                d.source, d.value
            )));
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::digest::{git_blob_sha1_hex, sha256_hex};

    fn asset(name: &str, body: &[u8]) -> Asset {
        let sha = sha256_hex(body);
        Asset {
            name: name.into(),
            size: body.len() as u64,
            sha256: sha.clone(),
            publisher_digests: vec![PublisherDigest {
                source: DigestSource::GithubAssetDigest,
                value: sha,
            }],
            content_type: None,
        }
    }

    fn sample() -> Manifest {
        let mut m = Manifest::new(vec!["arm64".into(), "amd64".into()], 0);
        m.releases.push(Release {
            repo: "ggml-org/llama.cpp".into(),
            tag: "b6123".into(),
            engine: "llamacpp".into(),
            version: "b6123".into(),
            builds: vec![BuildRef {
                arch: "amd64".into(),
                variant: "cpu".into(),
                assets: vec!["b.tar.gz".into()],
            }],
            assets: vec![asset("b.tar.gz", b"bbb"), asset("a.tar.gz", b"aaa")],
            signature: None,
        });
        m.repos.push(HfRepo {
            kind: RepoKind::Model,
            id: "acme/tiny".into(),
            revision: "main".into(),
            commit: "0123456789abcdef0123456789abcdef01234567".into(),
            patterns: vec![],
            files: vec![HfFile {
                path: "config.json".into(),
                size: 2,
                sha256: sha256_hex(b"{}"),
                git_oid: git_blob_sha1_hex(b"{}"),
                lfs: false,
                publisher_digests: vec![PublisherDigest {
                    source: DigestSource::GitBlobSha1,
                    value: git_blob_sha1_hex(b"{}"),
                }],
            }],
        });
        m
    }

    #[test]
    fn canonical_round_trip() {
        let m = sample();
        let bytes = m.to_canonical_json();
        let back = Manifest::from_json_bytes(&bytes).unwrap();
        assert_eq!(back.to_canonical_json(), bytes);
        assert_eq!(back.arches, vec!["amd64", "arm64"]);
        assert_eq!(back.releases[0].assets[0].name, "a.tar.gz");
        assert_eq!(m.blobs().len(), 3);
        assert_eq!(m.total_bytes(), 8);
    }

    #[test]
    fn order_of_discovery_does_not_change_bytes() {
        let a = sample();
        let mut b = sample();
        b.releases[0].assets.reverse();
        b.arches.reverse();
        assert_eq!(a.to_canonical_json(), b.to_canonical_json());
    }

    fn refused(m: &Manifest) -> String {
        let bytes = serde_json::to_vec(m).unwrap();
        Manifest::from_json_bytes(&bytes).unwrap_err().to_string()
    }

    #[test]
    fn unsafe_names_are_refused() {
        let mut m = sample();
        m.repos[0].files[0].path = "../../etc/passwd".into();
        assert!(refused(&m).contains("'..'"));
        let mut m = sample();
        m.releases[0].assets[0].name = "/abs".into();
        assert!(refused(&m).contains("absolute"));
        let mut m = sample();
        m.releases[0].repo = "a\\b/c".into();
        assert!(refused(&m).contains("release repository"));
    }

    #[test]
    fn a_newer_format_is_named() {
        let mut v: serde_json::Value =
            serde_json::from_slice(&sample().to_canonical_json()).unwrap();
        v["format_version"] = 2.into();
        v["new_field"] = 1.into();
        let err = Manifest::from_json_bytes(&serde_json::to_vec(&v).unwrap()).unwrap_err();
        assert!(err.to_string().contains("bundle format 2"), "{err}");
    }

    #[test]
    fn unknown_fields_are_refused() {
        let mut v: serde_json::Value =
            serde_json::from_slice(&sample().to_canonical_json()).unwrap();
        v["extra"] = 1.into();
        let err = Manifest::from_json_bytes(&serde_json::to_vec(&v).unwrap()).unwrap_err();
        assert!(err.to_string().contains("unknown field"), "{err}");
    }

    #[test]
    fn inconsistencies_are_refused() {
        let mut m = sample();
        m.releases[0].assets[1].size = 99; // a.tar.gz
        let mut dup = m.releases[0].assets[1].clone();
        dup.name = "c".into();
        dup.size = 3;
        m.releases[0].assets.push(dup);
        assert!(refused(&m).contains("same sha256"), "{}", refused(&m));

        let mut m = sample();
        m.releases[0].assets[0].publisher_digests.clear();
        assert!(refused(&m).contains("no publisher digest"));

        let mut m = sample();
        m.releases[0].assets[0].publisher_digests[0].value = "f".repeat(64);
        assert!(refused(&m).contains("does not match"));

        let mut m = sample();
        m.repos[0].commit = "main".into();
        assert!(refused(&m).contains("40 lower-case hex"));

        let mut m = sample();
        m.releases[0].engine = LLMGW_ENGINE.into();
        assert!(refused(&m).contains("carries no signature"));

        let mut m = sample();
        let dup = m.releases[0].assets[0].clone();
        m.releases[0].assets.push(dup);
        assert!(refused(&m).contains("listed twice"));
    }

    #[test]
    fn minisign_verified_source_is_kebab_case() {
        let s = serde_json::to_string(&DigestSource::MinisignVerified).unwrap();
        assert_eq!(s, "\"minisign-verified\"");
        assert!(DigestSource::MinisignVerified.is_sha256());
    }

    #[test]
    fn oversize_manifest_is_refused_unread() {
        let big = vec![b' '; (MAX_MANIFEST_BYTES + 1) as usize];
        let err = Manifest::from_json_bytes(&big).unwrap_err();
        assert!(err.to_string().contains("at most"), "{err}");
    }
}
