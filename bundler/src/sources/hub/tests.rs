//! The Hub source's pure parts: globs, path encoding, tree entries.
use super::*;

#[test]
fn globs_match_like_fnmatch() {
    let spec = RepoSpec {
        kind: RepoKind::Model,
        id: "org/m".into(),
        revision: "main".into(),
        patterns: vec!["*.Q4_K_M.gguf".into(), "config.json".into()],
        variants: Vec::new(),
        nodes: Vec::new(),
    };
    let g = glob_set(&spec).unwrap().unwrap();
    assert!(g.is_match("m.Q4_K_M.gguf"));
    assert!(g.is_match("sub/m.Q4_K_M.gguf"));
    assert!(g.is_match("config.json"));
    assert!(!g.is_match("m.Q8_0.gguf"));
    assert!(!g.is_match("sub/config.json.bak"));
}

/// #48: an LFS file's `xetHash` is recorded as listed; one that is
/// not 64 hex digits refuses the listing, shown bounded and escaped.
#[test]
fn an_lfs_files_xet_hash_is_kept_and_a_bad_one_refused() {
    let spec = RepoSpec {
        kind: RepoKind::Model,
        id: "org/m".into(),
        revision: "main".into(),
        patterns: vec![],
        variants: Vec::new(),
        nodes: Vec::new(),
    };
    let entry = |xet: &str| -> TreeEntry {
        serde_json::from_value(serde_json::json!({
            "type": "file", "path": "w.bin", "size": 3, "oid": "a".repeat(40),
            "lfs": {"oid": "b".repeat(64), "size": 3}, "xetHash": xet,
        }))
        .unwrap()
    };
    let good = "0123456789abcdef".repeat(4);
    let (file, _) = planned_file(&spec, &entry(&good)).unwrap();
    assert_eq!(file.xet_hash.unwrap().as_str(), good);
    let bad = format!("{}\u{1b}[2J", "z".repeat(200));
    let e = planned_file(&spec, &entry(&bad)).unwrap_err().to_string();
    assert!(e.contains("w.bin: the tree lists its xetHash as"), "{e}");
    assert!(
        e.contains("not 64 hex digits") && !e.contains('\u{1b}'),
        "{e}"
    );
    assert!(e.len() < 400, "{e}");
}

#[test]
fn resolve_paths_keep_slashes() {
    assert_eq!(
        utf8_percent_encode("sub/dir/a b+c.txt", PATH).to_string(),
        "sub/dir/a%20b%2Bc.txt"
    );
    assert_eq!(
        utf8_percent_encode("refs/pr/1", SEGMENT).to_string(),
        "refs%2Fpr%2F1"
    );
}
