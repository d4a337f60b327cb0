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

mod blob_count;
mod build;
pub mod entries;
pub mod hub;
pub mod latest;
pub mod oci;
pub mod pypi;
pub mod xet;

use std::collections::{BTreeMap, HashMap};
use std::sync::Arc;

use llmgw_shared::manifest::RepoKind;
use llmgw_shared::repo_key;
use sha2::Digest;
use sha2::Sha256;

pub use build::{Unreadable, Whole};
pub use entries::{AssetEntry, Blob, BundleInfo, ReleaseEntry, natural_cmp};
pub use hub::snapshot::{HubFile, HubRepo, Snapshot, TreeEntry};

/// The Hub repositories by (kind, lower-case `org/name`).
pub type HubRepos = HashMap<(RepoKind, String), Arc<HubRepo>>;

/// Everything the store holds, ready to answer requests.
#[derive(Debug, Clone, Default)]
pub struct Index {
    /// Which build of the index this is (answers cached from an older
    /// one are not reused).
    pub generation: u64,
    pub bundles: Vec<BundleInfo>,
    /// By (lower-case `owner/repo`, tag): GitHub names are case-insensitive.
    pub releases: BTreeMap<(String, String), ReleaseEntry>,
    /// By (kind, lower-case `org/name`); each shared with the index
    /// before wherever an import left it unchanged ([`Index::build_from`]).
    pub repos: HubRepos,
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
    /// ([`latest::latest`], by [`Authority::moves`](crate::store::series::follow::Authority::moves)).
    pub latest: HashMap<String, String>,
    /// Who signed each held signed bundle (key id, channel), for the
    /// front page.
    pub signers: latest::Signers,
    /// Runtime extras by (host, path) (`/extras/<host>/<path>`), with the
    /// engines that fetch each; the first bundle to carry one keeps it
    /// (its bytes are pinned by the recipe table, so all agree).
    pub extras: BTreeMap<(String, String), (Blob, Vec<String>)>,
    /// The Hub files served over Xet (built with the store at hand:
    /// [`xet::XetTable::build`] reads the records' heads).
    pub xet: Arc<xet::XetTable>,
    /// The held bundles' gaps that are runtime extras left out, by what
    /// (`runtime extra <host>/<path>`) with the first bundle's reason: what
    /// `/-/env` tells a node it will not find here.
    pub extras_left_out: BTreeMap<String, String>,
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
        self.repos.get(&(kind, repo_key(id))).map(|r| &**r)
    }

    /// Whether the Hub named `owner` a trusted kernel publisher, as the
    /// bundles carrying its kernels recorded it (any of them saying so);
    /// `None` when no kernel of that owner is held.
    pub fn kernel_publisher(&self, owner: &str) -> Option<bool> {
        let owner = repo_key(owner);
        self.repos
            .iter()
            .filter(|((kind, key), _)| {
                *kind == RepoKind::Kernel && key.split('/').next() == Some(owner.as_str())
            })
            .map(|(_, r)| r.trusted_publisher)
            .reduce(|a, b| a || b)
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
                xet_hash: None,
            }],
            kernel: None,
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

    /// #51: a full ref names what its short name names, a branch only as
    /// `refs/heads/`, a tag only as `refs/tags/`.
    #[test]
    fn full_refs_name_branches_and_tags_as_on_the_hub() {
        use llmgw_shared::manifest::RefKind;
        let main = at_commit("acme/k", &"1".repeat(40), "2020-01-01T00:00:00Z");
        let mut tagged = at_commit("acme/k", &"2".repeat(40), "2020-01-01T00:00:00Z");
        tagged.repos[0].revision = "v1.0".into();
        tagged.repos[0].ref_kind = Some(RefKind::Tag);
        let all = Authority::default();
        let index = Index::build(&[held("x", main), held("y", tagged)], &all);
        let repo = index.repo(RepoKind::Model, "acme/k").unwrap();
        let commit = |rev: &str| repo.resolve(rev).map(|s| s.commit.clone());
        assert_eq!(commit("refs/heads/main"), commit("main"));
        assert_eq!(commit("main"), Some("1".repeat(40)));
        assert_eq!(commit("refs/tags/v1.0"), Some("2".repeat(40)));
        assert_eq!(commit("refs/heads/v1.0"), None);
        assert_eq!(commit("refs/tags/main"), None);
        assert_eq!(commit("refs/pr/1"), None);
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

    /// Issue 35's "no doubling during a rebuild": an import that touches
    /// repository `a` only leaves `b`'s part the very same allocation in the
    /// new index, and `a`'s part is built again, as a build from nothing
    /// makes it.
    #[test]
    fn a_rebuild_shares_the_repositories_an_import_did_not_touch() {
        let a = at_commit("acme/a", &"1".repeat(40), "2020-01-01T00:00:00Z");
        let b = at_commit("acme/b", &"1".repeat(40), "2020-01-01T00:00:00Z");
        let mut a_next = at_commit("acme/a", &"2".repeat(40), "2021-01-01T00:00:00Z");
        let mut more = a_next.repos[0].files[0].clone();
        more.path = "more.bin".into();
        more.sha256 = "c".repeat(64).parse().unwrap();
        a_next.repos[0].files.push(more);
        let all = Authority::default();
        let held_before = [held("x", a), held("y", b)];
        let before = Index::build(&held_before, &all);
        let mut held_after = held_before.to_vec();
        held_after.push(held("z", a_next));
        let after = Index::build_from(&held_after, &all, Some(&before), &Whole).unwrap();
        let part = |ix: &Index, id: &str| ix.repos[&(RepoKind::Model, id.to_string())].clone();
        assert!(Arc::ptr_eq(
            &part(&before, "acme/b"),
            &part(&after, "acme/b")
        ));
        let (a_before, a_after) = (part(&before, "acme/a"), part(&after, "acme/a"));
        assert!(!Arc::ptr_eq(&a_before, &a_after));
        assert_eq!(a_after.refs["main"], "2".repeat(40));
        let paths = |r: &HubRepo, commit: &str| -> Vec<String> {
            r.snapshots[commit]
                .files()
                .map(|f| f.path.to_string())
                .collect()
        };
        assert_eq!(paths(&a_after, &"1".repeat(40)), ["w.bin"]);
        assert_eq!(paths(&a_after, &"2".repeat(40)), ["more.bin", "w.bin"]);
        // What was kept and what was built again are what a build from
        // nothing makes.
        let fresh = Index::build(&held_after, &all);
        for id in ["acme/a", "acme/b"] {
            let (kept, new) = (part(&after, id), part(&fresh, id));
            assert_eq!(kept.version, new.version);
            assert_eq!(kept.refs, new.refs);
            for (commit, snap) in &new.snapshots {
                let kept_files: Vec<_> = kept.snapshots[commit].files().collect();
                assert_eq!(kept_files, snap.files().collect::<Vec<_>>());
                assert_eq!(kept.snapshots[commit].last_modified, snap.last_modified);
            }
        }
        // A removal is a change too: `a` without `z` is built again, not
        // taken from the index that had `z`.
        let removed = Index::build_from(&held_before, &all, Some(&after), &Whole).unwrap();
        assert!(!Arc::ptr_eq(&part(&removed, "acme/a"), &a_after));
        assert_eq!(part(&removed, "acme/a").refs["main"], "1".repeat(40));
    }
}
