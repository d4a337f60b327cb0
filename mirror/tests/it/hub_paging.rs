//! Tree listings a page at a time, as the Hub pages them (1 000 entries,
//! `Link: <…>; rel="next"`), judged by the real `huggingface_hub` 2.4.0 and
//! 0.36.2; and each JSON answer built once however many clients ask for it
//! at the same moment.

use std::sync::Barrier;

use llmgw_shared::manifest::{HfRepo, Manifest, RepoKind};

use crate::common::*;

/// Files in the big repository: five pages and a bit.
const FILES: usize = 5_000;

/// The path of file `i`: spread over seven folders, so a folder listing
/// pages too.
fn path_of(i: usize) -> String {
    format!("shard-{}/part-{i:05}.bin", i % 7)
}

/// A store holding model `acme/many` of [`FILES`] small files.
fn store_of_many() -> (tempfile::TempDir, std::path::PathBuf) {
    let d = tempfile::tempdir().unwrap();
    let store = d.path().join("store");
    let mut m = Manifest::new(vec!["amd64".into()], 1_780_000_000);
    let bodies: Vec<Vec<u8>> = (0..FILES)
        .map(|i| format!("file {i}").into_bytes())
        .collect();
    let files = (0..FILES)
        .map(|i| hf_file(&path_of(i), &bodies[i], false))
        .collect();
    m.repos.push(HfRepo {
        kind: RepoKind::Model,
        id: "acme/many".parse().unwrap(),
        revision: "main".into(),
        ref_kind: None,
        commit: COMMIT.into(),
        patterns: vec![],
        files,
        kernel: None,
    });
    let refs: Vec<&[u8]> = bodies.iter().map(|b| b.as_slice()).collect();
    import(&store, &m, &refs);
    (d, store)
}

/// What both clients must list: every file once, the tree's folders too.
const SCRIPT: &str = r#"
from huggingface_hub import HfApi
from huggingface_hub.hf_api import RepoFile
api = HfApi()
files = api.list_repo_files("acme/many")
assert len(files) == len(set(files)), "a file listed twice"
tree = [e for e in api.list_repo_tree("acme/many", recursive=True) if isinstance(e, RepoFile)]
paths = [e.path for e in tree]
assert len(paths) == len(set(paths)), "a tree entry listed twice"
assert sorted(paths) == sorted(files)
folder = [e.path for e in api.list_repo_tree("acme/many", path_in_repo="shard-3")]
print(len(files), len(folder))
"#;

#[test]
fn a_5000_file_tree_pages_through_both_hub_clients() {
    let (d, store) = store_of_many();
    let srv = serve(&store);
    let in_shard_3 = (0..FILES).filter(|i| i % 7 == 3).count();
    for py in [hf24(), hf036()] {
        let out = python(&py, &srv.url, &d.path().join("home"), SCRIPT);
        assert_eq!(out.trim(), format!("{FILES} {in_shard_3}"), "{py:?}");
    }
    // The first page is a page: 1 000 entries and the next one's link.
    let first = get(srv.addr, "/api/models/acme/many/tree/main?recursive=true");
    assert_eq!(first.status, 200);
    assert_eq!(first.json().as_array().unwrap().len(), 1_000);
    let link = first.header("link").expect("a Link to the next page");
    assert!(
        link.starts_with(&format!(
            "<{}/api/models/acme/many/tree/main?recursive=true&cursor=",
            srv.url
        )) && link.ends_with(">; rel=\"next\""),
        "{link}"
    );
}

#[test]
fn a_cursor_the_mirror_did_not_write_is_refused() {
    let (_d, store) = store_of_many();
    let srv = serve(&store);
    for cursor in ["!!", "Li4veA" /* "../x" */, &"A".repeat(9_000)] {
        let r = get(
            srv.addr,
            &format!("/api/models/acme/many/tree/main?recursive=true&cursor={cursor}"),
        );
        assert_eq!(r.status, 400, "{cursor}");
        assert!(
            r.text().contains("is not one this mirror gave"),
            "{}",
            r.text()
        );
    }
}

#[test]
fn clients_asking_at_once_cost_one_build() {
    let (_d, store) = store_of_many();
    let srv = serve(&store);
    const CLIENTS: usize = 8;
    let start = Barrier::new(CLIENTS);
    let bodies: Vec<Vec<u8>> = std::thread::scope(|s| {
        let handles: Vec<_> = (0..CLIENTS)
            .map(|_| {
                s.spawn(|| {
                    start.wait();
                    get(srv.addr, "/api/models/acme/many/tree/main?recursive=true").body
                })
            })
            .collect();
        handles.into_iter().map(|h| h.join().unwrap()).collect()
    });
    assert!(bodies.iter().all(|b| b == &bodies[0] && !b.is_empty()));
    let metrics = get(srv.addr, "/metrics").text();
    let builds = metrics
        .lines()
        .find(|l| l.starts_with("llmgw_mirror_json_builds_total{route=\"hub_tree\"}"))
        .unwrap_or_else(|| panic!("no hub_tree builds counted:\n{metrics}"));
    assert!(
        builds.ends_with(" 1"),
        "{CLIENTS} clients at once: {builds}"
    );
}
