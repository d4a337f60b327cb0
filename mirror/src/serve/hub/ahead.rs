//! Makes the large answers of the Hub repositories an index build changed,
//! on the index thread before that index is served ([`make`]), so no
//! request after an import pays the build of a 100 000-file revision JSON
//! (issue 35's latency goal: no request over 50 ms while imports run).
//!
//! Invariant: what is made is the bytes the route builds
//! ([`shapes::info_json`] through [`respond::json_body`]) from the part it
//! is kept in, so a made answer and a built one never differ; a part kept
//! from the last index keeps what was made for it, and is not made again.

use crate::serve::http::respond;
use crate::serve::index::hub::ahead::{Ahead, Made};
use crate::serve::index::{HubRepo, Index};

use super::shapes;

/// Makes, for every repository of `index` not made for yet, the revision
/// JSON of each revision it serves (its branches and tags, and its default
/// commit) that lists `from_files` files or more. Gives how many were made.
pub fn make(index: &Index, from_files: usize) -> usize {
    let mut made = 0;
    for repo in index.repos.values() {
        if repo.ahead.get().is_some() {
            continue;
        }
        let ahead = of_repo(repo, from_files);
        made += ahead.len();
        // Only the index thread sets it, before the index is served.
        let _ = repo.ahead.set(ahead);
    }
    made
}

fn of_repo(repo: &HubRepo, from_files: usize) -> Ahead {
    let mut ahead = Ahead::default();
    let served = repo
        .refs
        .values()
        .chain(std::iter::once(&repo.default_commit));
    for commit in served {
        if ahead.revision(commit).is_some() {
            continue;
        }
        let Some(snap) = repo.snapshots.get(commit) else {
            continue;
        };
        if snap.file_count() < from_files {
            continue;
        }
        let (body, etag) = respond::json_body(&shapes::info_json(repo, snap, false));
        ahead.add_revision(commit.clone(), Made { body, etag });
    }
    ahead
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::store::series::follow::Authority;
    use crate::test_ids::held;
    use llmgw_shared::manifest::{HfFile, HfRepo, Manifest, RepoKind};
    use std::sync::Arc;

    /// A bundle of `id` at `commit` (as `main`) with `n` files.
    fn bundle(id: &str, commit: char, n: usize) -> Manifest {
        let files = (0..n)
            .map(|i| HfFile {
                path: format!("d{}/f{i}.bin", i % 7),
                size: i as u64,
                sha256: llmgw_shared::Sha256::of(format!("{id}{i}").as_bytes()),
                git_oid: format!("{:040x}", i).parse().unwrap(),
                lfs: false,
                publisher_digests: vec![],
                xet_hash: None,
            })
            .collect();
        let mut m = Manifest::new(vec!["amd64".into()], 0);
        m.created = "2026-01-01T00:00:00Z".into();
        m.repos.push(HfRepo {
            kind: RepoKind::Model,
            id: id.parse().unwrap(),
            revision: "main".into(),
            ref_kind: None,
            commit: commit.to_string().repeat(40),
            patterns: vec![],
            files,
            kernel: None,
        });
        m
    }

    /// The large repository's revision JSON is made before the index is
    /// served, the same bytes the route builds; a small one's is not; a
    /// rebuild that keeps a part keeps what was made for it, and a part
    /// built again gets answers of its new files.
    #[test]
    fn the_large_revisions_are_made_ahead_as_the_route_builds_them() {
        let all = Authority::default();
        let held_before = [
            held("x", bundle("acme/big", '1', 50)),
            held("y", bundle("acme/small", '1', 3)),
        ];
        let before = Index::build(&held_before, &all);
        assert_eq!(make(&before, 10), 1);
        let repo = |ix: &Index, id: &str| ix.repos[&(RepoKind::Model, id.to_string())].clone();
        let big = repo(&before, "acme/big");
        let made = big.ahead.get().unwrap().revision(&"1".repeat(40)).unwrap();
        let snap = big.default_snapshot().unwrap();
        let built = respond::json_body(&shapes::info_json(&big, snap, false));
        assert_eq!((&made.body, &made.etag), (&built.0, &built.1));
        assert!(repo(&before, "acme/small").ahead.get().unwrap().is_empty());

        let mut held_after = held_before.to_vec();
        held_after.push(held("z", bundle("acme/big", '2', 60)));
        let after = Index::build_from(
            &held_after,
            &all,
            Some(&before),
            &crate::serve::index::Whole,
        )
        .unwrap();
        assert!(Arc::ptr_eq(
            &repo(&before, "acme/small"),
            &repo(&after, "acme/small")
        ));
        assert!(repo(&after, "acme/big").ahead.get().is_none());
        assert_eq!(make(&after, 10), 1, "only the changed repository's");
        let big = repo(&after, "acme/big");
        let made = big.ahead.get().unwrap().revision(&"2".repeat(40)).unwrap();
        let v: serde_json::Value = serde_json::from_slice(&made.body).unwrap();
        assert_eq!(v["sha"], "2".repeat(40));
        assert_eq!(v["siblings"].as_array().unwrap().len(), 60);
        // Commit 1 is held but served by no name: not made.
        assert!(big.ahead.get().unwrap().revision(&"1".repeat(40)).is_none());
    }
}
