//! The JSON answer cache across imports: an import costs the answers of
//! the Hub repositories it touched only, and a touched repository never
//! answers what it served before the import.

use llmgw_shared::manifest::{HfRepo, Manifest, RepoKind};

use crate::common::*;

/// A bundle carrying model `id` at `commit` as `main`, with `files`.
fn bundle(
    id: &str,
    commit: &str,
    files: &[(&str, &[u8])],
    created: u64,
) -> (Manifest, Vec<Vec<u8>>) {
    let mut m = Manifest::new(vec!["amd64".into()], created);
    m.repos.push(HfRepo {
        kind: RepoKind::Model,
        id: id.parse().unwrap(),
        revision: "main".into(),
        ref_kind: None,
        commit: commit.into(),
        patterns: vec![],
        files: files.iter().map(|(p, b)| hf_file(p, b, false)).collect(),
        kernel: None,
    });
    (m, files.iter().map(|(_, b)| b.to_vec()).collect())
}

/// Imports the bundle; its manifest's file.
fn put(store: &std::path::Path, (m, blobs): (Manifest, Vec<Vec<u8>>)) -> std::path::PathBuf {
    let refs: Vec<&[u8]> = blobs.iter().map(Vec::as_slice).collect();
    let id = import(store, &m, &refs);
    store.join("bundles").join(format!("{id}.json"))
}

/// `llmgw_mirror_json_builds_total` of one route.
fn builds(srv: &Server, route: &str) -> u64 {
    let metrics = get(srv.addr, "/metrics").text();
    let prefix = format!("llmgw_mirror_json_builds_total{{route=\"{route}\"}} ");
    metrics
        .lines()
        .find_map(|l| l.strip_prefix(&prefix))
        .map_or(0, |n| n.trim().parse().unwrap())
}

/// Reads the store again now, as the index thread would within 100 ms.
fn reload(srv: &Server) {
    let state = &srv.running.as_ref().unwrap().state;
    let before = state.generation();
    state.refresh(true);
    assert!(state.generation() > before, "the store was not read again");
}

/// The paths a tree answer lists.
fn paths(r: &Reply) -> Vec<String> {
    r.json()
        .as_array()
        .unwrap()
        .iter()
        .map(|e| e["path"].as_str().unwrap().to_string())
        .collect()
}

const TREE_A: &str = "/api/models/acme/a/tree/main?recursive=true";
const TREE_B: &str = "/api/models/acme/b/tree/main?recursive=true";
const REV_A: &str = "/api/models/acme/a/revision/main";
const REV_B: &str = "/api/models/acme/b/revision/main";

#[test]
fn an_import_keeps_the_answers_of_repositories_it_did_not_touch() {
    let d = tempfile::tempdir().unwrap();
    let store = d.path().join("store");
    put(
        &store,
        bundle("acme/a", COMMIT, &[("a.txt", b"a")], 1_780_000_000),
    );
    put(
        &store,
        bundle("acme/b", COMMIT, &[("b.txt", b"b")], 1_780_000_000),
    );
    let srv = serve(&store);
    let b_tree = get(srv.addr, TREE_B);
    let b_rev = get(srv.addr, REV_B);
    assert_eq!(paths(&get(srv.addr, TREE_A)), ["a.txt"]);
    assert_eq!(get(srv.addr, REV_A).json()["sha"], COMMIT);
    let (trees, revisions) = (builds(&srv, "hub_tree"), builds(&srv, "hub_revision"));
    assert_eq!((trees, revisions), (2, 2));

    // The same commit of acme/a again, with a file more: the answers of
    // acme/a change though its commit did not.
    put(
        &store,
        bundle(
            "acme/a",
            COMMIT,
            &[("a.txt", b"a"), ("more.txt", b"m")],
            1_780_000_100,
        ),
    );
    reload(&srv);
    assert_eq!(get(srv.addr, TREE_B).body, b_tree.body);
    assert_eq!(get(srv.addr, REV_B).body, b_rev.body);
    assert_eq!(
        (builds(&srv, "hub_tree"), builds(&srv, "hub_revision")),
        (trees, revisions),
        "acme/b's answers were built again after an import that did not touch it"
    );
    assert_eq!(paths(&get(srv.addr, TREE_A)), ["a.txt", "more.txt"]);
    let siblings = get(srv.addr, REV_A).json()["siblings"]
        .as_array()
        .unwrap()
        .len();
    assert_eq!(
        siblings, 2,
        "acme/a's revision answer is the one from before the import"
    );
    assert_eq!(builds(&srv, "hub_tree"), trees + 1);

    // acme/a's main moves to another commit: its answers follow, acme/b's
    // are still kept.
    let moved = put(
        &store,
        bundle("acme/a", COMMIT2, &[("new.txt", b"n")], 1_780_000_200),
    );
    reload(&srv);
    assert_eq!(get(srv.addr, REV_A).json()["sha"], COMMIT2);
    assert_eq!(paths(&get(srv.addr, TREE_A)), ["new.txt"]);
    let at_old = get(srv.addr, &format!("/api/models/acme/a/tree/{COMMIT}"));
    assert_eq!(paths(&at_old), ["a.txt", "more.txt"]);
    assert_eq!(get(srv.addr, TREE_B).body, b_tree.body);
    assert_eq!(builds(&srv, "hub_tree"), trees + 3);

    // A bundle removed: what it alone carried is no longer listed.
    std::fs::remove_file(&moved).unwrap();
    reload(&srv);
    assert_eq!(get(srv.addr, REV_A).json()["sha"], COMMIT);
    assert_eq!(paths(&get(srv.addr, TREE_A)), ["a.txt", "more.txt"]);
    assert_eq!(get(srv.addr, TREE_B).body, b_tree.body);
}
