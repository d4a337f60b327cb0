//! What the mirror serves, as lookup tables built from the manifests held.
//!
//! Every route answers from these tables: a URL names a release, a repo,
//! a revision and a path, and the tables give back a blob's sha256 and
//! size. The sha256 is the only thing that ever becomes a path on disk
//! (through [`crate::store::Store::blob_file`]), so nothing a client sends
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
//! [`Authority::moves`](crate::store::series::follow::Authority::moves) says so (a signed series the store follows over
//! other series, any signed series over unsigned bundles). Repository ids
//! are merged case-insensitively ([`llmgw_shared::repo_key`]), as GitHub
//! and the Hub match them.

mod build;
pub mod entries;
pub mod made;
pub mod models;
pub mod oci;
pub mod pypi;
pub mod referrers;
pub mod route;
pub mod snapshot;

use std::collections::{BTreeMap, HashMap};

use llmgw_shared::manifest::RepoKind;
use llmgw_shared::repo_key;
use sha2::Digest;
use sha2::Sha256;

pub use entries::{AssetEntry, Blob, BundleInfo, ReleaseEntry, natural_cmp};
pub use snapshot::{HubFile, HubRepo, Snapshot, TreeEntry};

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
    /// ([`super::freshness::latest`], by [`Authority::moves`](crate::store::series::follow::Authority::moves)).
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

impl Index {
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
    use crate::store::series::follow::Authority;
    use crate::test_ids::{held, id};
    use llmgw_shared::manifest::Manifest;

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
        let index = Index::build(&[held("x", future.clone()), held("y", past.clone())], &all);
        let repo = index.repo(RepoKind::Model, "Acme/TINY").unwrap();
        assert_eq!(repo.snapshots.len(), 2);
        assert_eq!(repo.refs["main"], "1".repeat(40));
        assert_eq!(repo.default_commit, "1".repeat(40));
        let index = Index::build(&[held("y", past), held("x", future)], &all);
        let repo = index.repo(RepoKind::Model, "acme/tiny").unwrap();
        assert_eq!(repo.default_commit, "f".repeat(40));
        assert_eq!(index.bundles[0].id, id("y").as_str());
    }

    #[test]
    fn an_import_changes_the_version_of_the_repositories_it_carries_only() {
        let a = at_commit("acme/a", &"1".repeat(40), "2020-01-01T00:00:00Z");
        let b = at_commit("acme/b", &"1".repeat(40), "2020-01-01T00:00:00Z");
        let a_again = at_commit("acme/a", &"1".repeat(40), "2021-01-01T00:00:00Z");
        let all = Authority::default();
        let before = Index::build(&[held("x", a.clone()), held("y", b.clone())], &all);
        let after = Index::build(&[held("x", a), held("y", b), held("z", a_again)], &all);
        let version = |ix: &Index, id: &str| ix.repo(RepoKind::Model, id).unwrap().version;
        assert_eq!(version(&before, "acme/b"), version(&after, "acme/b"));
        assert_ne!(version(&before, "acme/a"), version(&after, "acme/a"));
    }
}
