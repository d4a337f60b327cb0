//! What the mirror serves, as lookup tables built from the manifests held.
//!
//! Every route answers from these tables: a URL names a release, a repo,
//! a revision and a path, and the tables give back a blob's sha256 and
//! size. The sha256 is the only thing that ever becomes a path on disk
//! (through [`crate::store::Store::blob_path`]), so nothing a client sends
//! can reach a file the manifests do not name.
//!
//! The index is immutable; a new one is built whenever `bundles/` changes
//! and swapped in whole (see [`super::state`]).
//!
//! Bundles are merged in the store's import order ([`crate::store::state`]):
//! where bundles disagree about what a branch or tag names, the later
//! import wins — never the bundle with the later `created` date, which is
//! whatever its maker wrote — unless it stands lower than the bundle that
//! serves the name now: every name changes hands only where
//! [`Authority::moves`] says so (a signed series the store follows over
//! other series, any signed series over unsigned bundles). Repository ids
//! are merged case-insensitively ([`llmgw_shared::repo_key`]), as GitHub
//! and the Hub match them.

pub mod entries;
pub mod made;
pub mod models;
pub mod oci;
pub mod pypi;
pub mod referrers;
pub mod route;
pub mod snapshot;

use std::collections::{BTreeMap, HashMap, HashSet};
use std::sync::Arc;

use llmgw_shared::manifest::{Manifest, RefKind, RepoKind};
use llmgw_shared::repo_key;
use sha2::Digest;
use sha2::Sha256;

use crate::store::series::follow::Authority;
pub use entries::{AssetEntry, Blob, BundleInfo, ReleaseEntry, natural_cmp};
pub use snapshot::{FilePool, HubFile, HubRepo, Snapshot, TreeEntry};

/// Everything the store holds, ready to answer requests.
#[derive(Debug, Clone, Default)]
pub struct Index {
    /// Which build of the index this is (answers cached from an older
    /// one are not reused).
    pub generation: u64,
    pub bundles: Vec<BundleInfo>,
    /// By (lower-case `owner/repo`, tag): GitHub names are case-insensitive.
    pub releases: BTreeMap<(String, String), ReleaseEntry>,
    /// By (kind, lower-case `org/name`).
    pub repos: HashMap<(RepoKind, String), HubRepo>,
    /// How many distinct blobs the bundles name, and their bytes (counted
    /// while building, not kept: a table of every blob cost 125 bytes a
    /// file held and answered nothing else).
    pub blob_count: usize,
    pub blob_bytes: u64,
    /// Python environments and interpreters.
    pub pypi: super::index::pypi::PypiIndex,
    /// Container images and Helm charts (built with the store at hand:
    /// [`oci::OciIndex::build`] reads carried manifests).
    pub oci: oci::OciIndex,
    /// By lower-case `owner/repo`: the tag `latest` names
    /// ([`super::freshness::latest`], by [`Authority::moves`]).
    pub latest: HashMap<String, String>,
    /// Who signed each held signed bundle (key id, channel), for the
    /// front page.
    pub signers: super::freshness::Signers,
    /// Runtime extras by (host, path) (`/extras/<host>/<path>`), with the
    /// engines that fetch each; the first bundle to carry one keeps it
    /// (its bytes are pinned by the recipe table, so all agree).
    pub extras: BTreeMap<(String, String), (Blob, Vec<String>)>,
}

/// A number for GitHub's `id` fields that stays the same across restarts
/// and mirrors: the first 6 bytes of a sha256 (below 2^53, so JavaScript
/// clients read it exactly).
pub fn stable_id(parts: &[&str]) -> u64 {
    let mut h = Sha256::new();
    for p in parts {
        h.update(p.as_bytes());
        h.update([0]);
    }
    let d = h.finalize();
    let mut n = 0u64;
    for b in &d[..6] {
        n = (n << 8) | u64::from(*b);
    }
    n.max(1)
}

/// A repository's [`HubRepo::version`]. Its snapshots (which files each
/// commit lists, the first bundle carrying a path giving it; each commit's
/// time, from the last bundle carrying it) are a function of the bundles
/// that carry it, in index order, whose ids are their manifests' sha256: so
/// `carried_by` stands for them. Which commit each name serves also depends
/// on the store's policy and signatures (`Authority`), so the names are
/// hashed as they came out. Every Hub answer about the repository is built
/// from these alone (`hub/shapes.rs`).
fn repo_version(
    mut carried_by: Sha256,
    id: &str,
    refs: &BTreeMap<String, String>,
    tags: &std::collections::BTreeSet<String>,
    default_commit: &str,
) -> [u8; 32] {
    let mut field = |s: &str| {
        carried_by.update(s.as_bytes());
        carried_by.update([0]);
    };
    field(id);
    field(default_commit);
    for (name, commit) in refs {
        field(name);
        field(commit);
    }
    field("\u{1}tags");
    for t in tags {
        field(t);
    }
    carried_by.finalize().into()
}

impl Index {
    /// Builds the index from the manifests held, given in index order
    /// (oldest import first, a signed series by sequence), so that a later
    /// bundle's revision names win where `authority` lets it move them.
    pub fn build(bundles: &[(String, Manifest)], authority: &Authority) -> Self {
        let mut index = Index {
            pypi: super::index::pypi::PypiIndex::build(bundles, authority),
            ..Index::default()
        };
        // (kind, key) -> (id, commit -> (last_modified, files by path), refs)
        // A commit's files: path -> number in the repository's pool.
        type Files<'m> = BTreeMap<&'m str, u32>;
        /// A file as the manifests say it, borrowed from them.
        type FileKey<'m> = (
            &'m str,
            &'m llmgw_shared::Sha256,
            &'m llmgw_shared::GitOid,
            bool,
        );
        struct RepoAcc<'m> {
            kind: RepoKind,
            id: String,
            /// Every distinct file of every commit, held once.
            pool: FilePool,
            numbers: HashMap<FileKey<'m>, u32>,
            commits: BTreeMap<String, (String, Files<'m>)>,
            refs: BTreeMap<String, String>,
            tags: std::collections::BTreeSet<String>,
            /// The commit of the latest import carrying the repo.
            latest: String,
            /// The bundle each ref, and `latest`, is served from now.
            holders: HashMap<Option<String>, String>,
            /// The bundles carrying the repo, in index order.
            carried_by: Sha256,
        }
        // The bundle each release tag's asset list is served from now.
        let mut release_holders: HashMap<(String, String), &str> = HashMap::new();
        let mut repos: HashMap<(RepoKind, String), RepoAcc> = HashMap::new();

        let mut blobs = HashSet::new();
        for (id, m) in bundles {
            index.bundles.push(BundleInfo {
                id: id.clone(),
                created: m.created.clone(),
                tool: m.tool.clone(),
                arches: m.arches.clone(),
                channel: m.channel.clone(),
                sequence: m.sequence,
                expires: m.expires.clone(),
                bytes: m.total_bytes(),
                sbom: m.evidence.as_ref().map(|e| Blob {
                    sha256: e.sbom.sha256.clone(),
                    size: e.sbom.size,
                }),
            });
            for e in &m.extras {
                index
                    .extras
                    .entry((e.host.clone(), e.path.clone()))
                    .or_insert_with(|| {
                        let blob = Blob {
                            sha256: e.sha256.clone(),
                            size: e.size,
                        };
                        (blob, e.engines.clone())
                    });
            }
            for (sha, size) in m.blobs() {
                if blobs.insert(sha) {
                    index.blob_count += 1;
                    index.blob_bytes += size;
                }
            }
            for r in &m.releases {
                let key = (repo_key(&r.repo), r.tag.clone());
                let holder = release_holders.get(&key).copied();
                if !authority.moves(holder, id) {
                    continue;
                }
                if holder.is_some_and(|h| authority.standing(h) < authority.standing(id)) {
                    // Taken over: the tag lists what the new holder's
                    // standing carries, nothing of the bundles below it.
                    index.releases.remove(&key);
                }
                release_holders.insert(key.clone(), id);
                let entry = index.releases.entry(key).or_insert_with(|| ReleaseEntry {
                    repo: r.repo.to_string(),
                    tag: r.tag.clone(),
                    engine: r.engine.clone(),
                    version: r.version.clone(),
                    created: m.created.clone(),
                    id: stable_id(&[&repo_key(&r.repo), &r.tag]),
                    assets: BTreeMap::new(),
                });
                for a in &r.assets {
                    // The first bundle to carry a name keeps it: import
                    // checked both, and a name never changes bytes upstream
                    // without a new tag.
                    entry
                        .assets
                        .entry(a.name.clone())
                        .or_insert_with(|| AssetEntry {
                            name: a.name.clone(),
                            blob: Blob {
                                sha256: a.sha256.clone(),
                                size: a.size,
                            },
                            content_type: a.content_type.clone(),
                            id: stable_id(&[&repo_key(&r.repo), &r.tag, &a.name]),
                        });
                }
            }
            for r in &m.repos {
                let acc = repos
                    .entry((r.kind, repo_key(&r.id)))
                    .or_insert_with(|| RepoAcc {
                        kind: r.kind,
                        id: r.id.to_string(),
                        pool: FilePool::default(),
                        numbers: HashMap::new(),
                        commits: BTreeMap::new(),
                        refs: BTreeMap::new(),
                        tags: Default::default(),
                        latest: String::new(),
                        holders: HashMap::new(),
                        carried_by: Sha256::new(),
                    });
                acc.carried_by.update(id.as_bytes());
                acc.carried_by.update([0]);
                if authority.moves(acc.holders.get(&None).map(String::as_str), id) {
                    acc.latest = r.commit.clone();
                    acc.holders.insert(None, id.clone());
                }
                let (last, files) = acc
                    .commits
                    .entry(r.commit.clone())
                    .or_insert_with(|| (m.created.clone(), BTreeMap::new()));
                *last = m.created.clone();
                for f in &r.files {
                    if files.contains_key(f.path.as_str()) {
                        continue;
                    }
                    let key = (f.path.as_str(), &f.sha256, &f.git_oid, f.lfs);
                    let pool = &mut acc.pool;
                    let n = *acc.numbers.entry(key).or_insert_with(|| {
                        let blob = Blob {
                            sha256: f.sha256.clone(),
                            size: f.size,
                        };
                        pool.push(&f.path, blob, f.git_oid.clone(), f.lfs)
                    });
                    files.insert(f.path.as_str(), n);
                }
                let rev = Some(r.revision.clone());
                if r.revision != r.commit
                    && r.ref_kind != Some(RefKind::Commit)
                    && authority.moves(acc.holders.get(&rev).map(String::as_str), id)
                {
                    acc.holders.insert(rev, id.clone());
                    acc.refs.insert(r.revision.clone(), r.commit.clone());
                    if r.ref_kind == Some(RefKind::Tag) {
                        acc.tags.insert(r.revision.clone());
                    } else {
                        acc.tags.remove(&r.revision);
                    }
                }
            }
        }

        for (key, mut acc) in repos {
            acc.pool.shrink();
            let pool = Arc::new(acc.pool);
            let mut snapshots = BTreeMap::new();
            for (commit, (last, files)) in acc.commits {
                snapshots.insert(commit.clone(), snapshot::build(commit, last, &files, &pool));
            }
            let default_commit = acc.refs.get("main").cloned().unwrap_or(acc.latest);
            // A repo imported only at tags (or commits) still has a default
            // branch, since llama.cpp's -hf reads only branches: `main`, at
            // the default commit.
            let mut refs = acc.refs;
            if !default_commit.is_empty() && refs.keys().all(|r| acc.tags.contains(r)) {
                refs.insert("main".into(), default_commit.clone());
            }
            let version = repo_version(acc.carried_by, &acc.id, &refs, &acc.tags, &default_commit);
            index.repos.insert(
                key,
                HubRepo {
                    kind: acc.kind,
                    id: acc.id,
                    snapshots,
                    refs,
                    tags: acc.tags,
                    default_commit,
                    version,
                },
            );
        }
        index
    }

    /// A release by repo (any case) and tag.
    pub fn release(&self, repo: &str, tag: &str) -> Option<&ReleaseEntry> {
        self.releases.get(&(repo_key(repo), tag.to_string()))
    }

    /// Every release of one repo, newest first (by tag, compared as
    /// numbers where both have digits: b10828 after b6123), except that
    /// the release a signed series makes `latest` comes first.
    pub fn releases_of(&self, repo: &str) -> Vec<&ReleaseEntry> {
        let key = repo_key(repo);
        let mut out: Vec<&ReleaseEntry> = self
            .releases
            .iter()
            .filter(|((r, _), _)| *r == key)
            .map(|(_, e)| e)
            .collect();
        out.sort_by(|a, b| natural_cmp(&b.tag, &a.tag));
        // `latest` first: what the highest signed sequence carries.
        if let Some(at) = self
            .latest
            .get(&key)
            .and_then(|tag| out.iter().position(|r| &r.tag == tag))
        {
            out[..=at].rotate_right(1);
        }
        out
    }

    pub fn repo(&self, kind: RepoKind, id: &str) -> Option<&HubRepo> {
        self.repos.get(&(kind, repo_key(id)))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn at_commit(id: &str, commit: &str, created: &str) -> Manifest {
        use llmgw_shared::manifest::{DigestSource, HfFile, HfRepo, PublisherDigest};
        let sha = "a".repeat(64);
        let mut m = Manifest::new(vec!["amd64".into()], 0);
        m.created = created.into();
        m.repos.push(HfRepo {
            kind: RepoKind::Model,
            id: id.parse().unwrap(),
            revision: "main".into(),
            ref_kind: None,
            commit: commit.into(),
            patterns: vec![],
            files: vec![HfFile {
                path: "w.bin".into(),
                size: 1,
                sha256: sha.parse().unwrap(),
                git_oid: "b".repeat(40).parse().unwrap(),
                lfs: true,
                publisher_digests: vec![PublisherDigest {
                    source: DigestSource::HfLfsSha256,
                    value: sha,
                }],
            }],
        });
        m
    }

    #[test]
    fn the_later_import_names_main_whatever_the_dates_say() {
        let future = at_commit("acme/tiny", &"f".repeat(40), "9999-12-31T23:59:59Z");
        let past = at_commit("ACME/Tiny", &"1".repeat(40), "2020-01-01T00:00:00Z");
        let all = Authority::default();
        let index = Index::build(
            &[("x".into(), future.clone()), ("y".into(), past.clone())],
            &all,
        );
        let repo = index.repo(RepoKind::Model, "Acme/TINY").unwrap();
        assert_eq!(repo.snapshots.len(), 2);
        assert_eq!(repo.refs["main"], "1".repeat(40));
        assert_eq!(repo.default_commit, "1".repeat(40));
        let index = Index::build(&[("y".into(), past), ("x".into(), future)], &all);
        let repo = index.repo(RepoKind::Model, "acme/tiny").unwrap();
        assert_eq!(repo.default_commit, "f".repeat(40));
        assert_eq!(index.bundles[0].id, "y");
    }

    #[test]
    fn an_import_changes_the_version_of_the_repositories_it_carries_only() {
        let a = at_commit("acme/a", &"1".repeat(40), "2020-01-01T00:00:00Z");
        let b = at_commit("acme/b", &"1".repeat(40), "2020-01-01T00:00:00Z");
        let a_again = at_commit("acme/a", &"1".repeat(40), "2021-01-01T00:00:00Z");
        let all = Authority::default();
        let before = Index::build(&[("x".into(), a.clone()), ("y".into(), b.clone())], &all);
        let after = Index::build(
            &[("x".into(), a), ("y".into(), b), ("z".into(), a_again)],
            &all,
        );
        let version = |ix: &Index, id: &str| ix.repo(RepoKind::Model, id).unwrap().version;
        assert_eq!(version(&before, "acme/b"), version(&after, "acme/b"));
        assert_ne!(version(&before, "acme/a"), version(&after, "acme/a"));
    }
}
