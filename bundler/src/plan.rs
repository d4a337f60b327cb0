//! What a run will carry, worked out before any large download: the
//! manifest's entries (with every digest the publishers gave), the
//! downloads that fill them, and the gaps.
//!
//! Invariant: each distinct content is one download, and the Hub's
//! evidence is one entry per repository commit, however many revisions
//! the request names it by.

use std::collections::BTreeMap;
use std::path::PathBuf;

use llmgw_shared::manifest::{
    DigestSource, Gap, HfFile, HfRepo, PublisherDigest, PythonEnv, RefKind, Release, RepoEvidence,
    RepoKind,
};
use llmgw_shared::{GitOid, Sha256};

use crate::cache::Expect;
use crate::error::{CreateError, HubError};
use crate::fetch::Download;

#[derive(Debug, Default)]
pub struct Plan {
    pub releases: Vec<Release>,
    /// Hub repositories: a file known only by its git blob sha1 becomes a
    /// manifest entry once it is fetched and its sha256 known.
    pub repos: Vec<PlannedRepo>,
    pub gaps: Vec<Gap>,
    /// Python environments, resolved and checked (their files are among
    /// `downloads`, their locks and `.metadata` files among `stored`).
    pub python_envs: Vec<PythonEnv>,
    /// Container images (format 3): their configs and layers are among
    /// `downloads`, their manifests among `stored`.
    pub images: Vec<llmgw_shared::manifest::OciImage>,
    /// Helm charts (format 3), planned as images are.
    pub charts: Vec<llmgw_shared::manifest::HelmChart>,
    /// Each distinct content once.
    pub downloads: Vec<Download>,
    index: BTreeMap<Expect, usize>,
    /// Small verified files already put in the cache (llmgw's signed
    /// SHA256SUMS and its signature, locks, image manifests).
    pub stored: Vec<Stored>,
    /// What the Hub said about each planned repository (its licence tag,
    /// its scan verdicts, its safetensors and GGUF files): the manifest's
    /// `evidence.repos`, one per commit ([`Plan::add_evidence`]).
    pub repo_evidence: Vec<RepoEvidence>,
    /// The engines' runtime extras (their bytes among `downloads`).
    pub extras: Vec<llmgw_shared::manifest::Extra>,
    /// Parts that cannot be had without `--allow-missing` (each a
    /// `CreateError::Part` naming its flags): planning goes on past each,
    /// as `--allow-missing` would, and [`Plan::finish`] reports them all.
    pub stops: Vec<CreateError>,
    /// Publishers' attestations verified, and artifacts let in unsigned
    /// (format 7's `evidence.signatures`).
    pub signatures: crate::attest::Gathered,
}

/// A Hub repository pinned to a commit, as planned: an [`HfRepo`] whose
/// files' sha256 is not all known yet.
#[derive(Debug)]
pub struct PlannedRepo {
    /// Whether the repository is a model, a dataset or a kernel.
    pub kind: RepoKind,
    /// `org/name`.
    pub id: String,
    /// The revision asked for.
    pub revision: String,
    /// Whether the revision is a branch, a tag or a commit.
    pub ref_kind: Option<RefKind>,
    /// The commit it resolved to.
    pub commit: GitOid,
    /// The globs the files were chosen with.
    pub patterns: Vec<String>,
    /// The files chosen.
    pub files: Vec<PlannedFile>,
    /// A kernel's build folders and publisher, as the manifest records them.
    pub kernel: Option<llmgw_shared::manifest::KernelRepo>,
}

/// A file of a Hub repository, as planned.
#[derive(Debug)]
pub struct PlannedFile {
    /// Path inside the repository.
    pub path: String,
    /// Its length in bytes.
    pub size: u64,
    /// The git blob sha1 the Hub lists as its `oid`.
    pub git_oid: GitOid,
    /// For an LFS file, the sha256 the Hub gives; for another file none:
    /// its sha256 is learnt by fetching it.
    pub lfs_sha256: Option<Sha256>,
    /// For an LFS file the Hub stores in Xet, the Xet hash its tree lists
    /// (recorded; import checks it against the bytes).
    pub xet_hash: Option<llmgw_shared::XetHash>,
}

impl PlannedRepo {
    /// The manifest's entry, once every file's sha256 is known: `fetched`
    /// answers with what a file known only by its git blob sha1 hashed to.
    pub fn into_repo(
        self,
        fetched: impl Fn(&GitOid) -> Option<Sha256>,
    ) -> Result<HfRepo, CreateError> {
        let mut files = Vec::with_capacity(self.files.len());
        for f in self.files {
            let path = f.path.clone();
            let file = f.into_file(&fetched).ok_or_else(|| {
                CreateError::Hub(HubError::NotRecorded {
                    repo: self.id.clone(),
                    path,
                })
            })?;
            files.push(file);
        }
        Ok(HfRepo {
            kind: self.kind,
            id: llmgw_shared::RepoId::parse("repository id", &self.id)?,
            revision: self.revision,
            ref_kind: self.ref_kind,
            commit: self.commit.into(),
            patterns: self.patterns,
            files,
            kernel: self.kernel,
        })
    }
}

impl PlannedFile {
    /// `None` for a file known only by its git blob sha1 that `fetched`
    /// has no sha256 for.
    fn into_file(self, fetched: &impl Fn(&GitOid) -> Option<Sha256>) -> Option<HfFile> {
        let (sha256, lfs, digest) = match self.lfs_sha256 {
            Some(sha) => {
                let digest = PublisherDigest {
                    source: DigestSource::HfLfsSha256,
                    value: sha.to_string(),
                };
                (sha, true, digest)
            }
            None => {
                let sha = fetched(&self.git_oid)?;
                let digest = PublisherDigest {
                    source: DigestSource::GitBlobSha1,
                    value: self.git_oid.to_string(),
                };
                (sha, false, digest)
            }
        };
        Some(HfFile {
            path: self.path,
            size: self.size,
            sha256,
            git_oid: self.git_oid,
            lfs,
            publisher_digests: vec![digest],
            xet_hash: self.xet_hash,
        })
    }
}

/// A small file verified while planning and put in the cache then: it is
/// carried without a download.
#[derive(Debug, Clone)]
pub struct Stored {
    pub sha256: Sha256,
    /// Where the cache holds it.
    pub path: PathBuf,
    pub size: u64,
}

impl Plan {
    /// Carries `sha256` (in the cache at `path`) without a download.
    pub fn store(&mut self, sha256: Sha256, path: PathBuf, size: u64) {
        self.stored.push(Stored { sha256, path, size });
    }

    /// Adds a download unless the same content is already planned.
    pub fn download(&mut self, d: Download) {
        if self.index.contains_key(&d.expect) {
            return;
        }
        self.index.insert(d.expect.clone(), self.downloads.len());
        self.downloads.push(d);
    }

    /// The end of planning: `reached` (the hosts' check) and every part
    /// that stopped, all in one error when there are several.
    pub fn finish(&mut self, reached: Result<(), CreateError>) -> Result<(), CreateError> {
        let mut errors = std::mem::take(&mut self.stops);
        errors.extend(reached.err());
        match errors.len() {
            0 => Ok(()),
            1 => Err(errors.remove(0)),
            _ => Err(CreateError::Several { errors }),
        }
    }

    /// Keeps only the downloads `keep` answers true for.
    pub fn keep_downloads(&mut self, keep: impl Fn(&Download) -> bool) {
        self.downloads.retain(|d| keep(d));
        self.index = self
            .downloads
            .iter()
            .enumerate()
            .map(|(i, d)| (d.expect.clone(), i))
            .collect();
    }

    /// Total bytes of the distinct contents planned.
    pub fn total_bytes(&self) -> u64 {
        self.downloads.iter().map(|d| d.size).sum::<u64>()
            + self.stored.iter().map(|s| s.size).sum::<u64>()
    }

    /// Adds what the Hub said of a repository at a commit. The evidence is
    /// of the commit, one entry each: a commit planned again under another
    /// revision (`@main` and `@v1` naming one commit) adds only the
    /// verdicts of files not described yet.
    pub fn add_evidence(&mut self, e: RepoEvidence) {
        let same = |x: &&mut RepoEvidence| x.kind == e.kind && x.id == e.id && x.commit == e.commit;
        match self.repo_evidence.iter_mut().find(same) {
            Some(x) => {
                for f in e.files {
                    if !x.files.iter().any(|y| y.path == f.path) {
                        x.files.push(f);
                    }
                }
            }
            None => self.repo_evidence.push(e),
        }
    }

    /// Records something not carried.
    pub fn gap(&mut self, what: String, reason: String) {
        self.gaps.push(Gap { what, reason });
    }
}
