//! `llmgw mirror policy model-files`: each rule refuses exactly the files
//! it should, naming each (and the safetensors variant), leaves the store
//! as it was, and accepts the rest.

use std::path::Path;

use super::kit::{create, fails, fixture, llmgw, ok};

pub(super) fn policy(store: &Path, rule: &str) -> String {
    ok(&llmgw()
        .args(["mirror", "policy", "model-files", rule, "--store"])
        .arg(store)
        .output()
        .unwrap())
}

pub(super) fn import(store: &Path, bundle: &Path, sha: &str) -> std::process::Output {
    llmgw()
        .args(["bundle", "import", "--sha256", sha, "--store"])
        .arg(store)
        .arg(bundle)
        .output()
        .unwrap()
}

/// Names in a store folder (none when it does not exist).
fn names(dir: &Path) -> Vec<String> {
    let mut v: Vec<String> = std::fs::read_dir(dir)
        .map(|r| {
            r.map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
                .collect()
        })
        .unwrap_or_default();
    v.sort();
    v
}

pub(super) fn unchanged(store: &Path) {
    assert!(names(&store.join("bundles")).is_empty());
    assert!(names(&store.join("blobs/sha256")).is_empty());
    assert!(
        names(&store.join("tmp"))
            .iter()
            .all(|n| !n.starts_with("import-"))
    );
}

#[test]
fn each_model_file_rule_refuses_exactly_what_it_should() {
    let fx = fixture();
    let d = tempfile::tempdir().unwrap();
    let cache = d.path().join("c");
    let all = d.path().join("all");
    let all_sha = create(&fx, &cache, &all, &["--model", "acme/pickled"]);
    let safe = d.path().join("safe");
    let safe_sha = create(
        &fx,
        &cache,
        &safe,
        &[
            "--model",
            "acme/pickled:model.safetensors,config.json",
            "--model",
            "acme/tiny",
        ],
    );

    let store = d.path().join("no-pickle");
    assert!(policy(&store, "no-pickle").contains("model-files no-pickle"));
    let err = fails(&import(&store, &all, &all_sha), 1);
    for refused in [
        "pytorch_model.bin: loads with pickle (its extension is .bin, and it is a zip holding the pickle archive/data.pkl)",
        "optimizer.pt: loads with pickle (its extension is .pt, and it starts with pickle protocol 2's opcode)",
        "extra/scaler.pkl: loads with pickle (its extension is .pkl",
        "legacy/model.data: loads with pickle (it is a zip holding the pickle archive/data.pkl)",
        "state.dat: loads with pickle (it starts with pickle protocol 2's opcode)",
    ] {
        assert!(err.contains(refused), "{refused} not in:\n{err}");
    }
    for accepted in ["model.safetensors:", "config.json:", "README.md:"] {
        assert!(!err.contains(accepted), "{accepted} refused:\n{err}");
    }
    assert!(
        err.contains("acme/pickled has model.safetensors at the same commit: bundle that instead"),
        "{err}"
    );
    assert!(err.contains("Nothing was added to the store"), "{err}");
    unchanged(&store);
    ok(&import(&store, &safe, &safe_sha));

    let store = d.path().join("scanned-clean");
    policy(&store, "scanned-clean");
    let err = fails(&import(&store, &all, &all_sha), 1);
    assert!(
        err.contains(
            "optimizer.pt: the Hub marked it unsafe; imports __builtin__.exec (dangerous)"
        ),
        "{err}"
    );
    assert!(
        err.contains("extra/scaler.pkl: the Hub never finished scanning it (status unscanned)"),
        "{err}"
    );
    assert_eq!(
        err.matches("acme/pickled@").count(),
        2,
        "only those two:\n{err}"
    );
    unchanged(&store);
    ok(&import(&store, &safe, &safe_sha));

    let store = d.path().join("allow");
    policy(&store, "scanned-clean");
    assert!(policy(&store, "allow").contains("model-files allow"));
    ok(&import(&store, &all, &all_sha));

    let o = llmgw()
        .args(["mirror", "policy", "model-files", "no-pickles", "--store"])
        .arg(&store)
        .output()
        .unwrap();
    let err = fails(&o, 2);
    assert!(err.contains("allow, no-pickle or scanned-clean"), "{err}");
}
