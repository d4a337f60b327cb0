//! The state an import of volumes keeps between runs
//! (`STORE/tmp/import-<sha>/volumes.json`), found too large, malformed or
//! naming what the bundle does not have: refused by name, with what to do,
//! never a panic — and the import goes through once the folder is removed.

use std::path::{Path, PathBuf};
use std::process::Output;

use crate::bundle_kit::{llmgw, stderr, stdout};

use super::kit::{self, create, s};

fn import(store: &Path, sha: &str, files: &[&PathBuf]) -> Output {
    let mut c = llmgw();
    c.args(["bundle", "import", "--store", s(store), "--sha256", sha]);
    c.args(files.iter().map(|p| s(p)));
    c.output().unwrap()
}

/// The run is refused (exit 1, no panic), naming the state file, the
/// reason, and the folder to remove.
fn assert_refused(o: &Output, state: &Path, dir: &Path, reason: &str) {
    let err = stderr(o);
    assert_eq!(o.status.code(), Some(1), "{}\n{err}", stdout(o));
    assert!(!err.contains("panicked"), "{err}");
    assert!(err.contains(&state.display().to_string()), "{err}");
    assert!(err.contains(reason), "{err}");
    assert!(
        err.contains(&format!(
            "remove the folder {} and import the volumes again",
            dir.display()
        )),
        "{err}"
    );
    assert!(
        !err.contains('\u{1b}'),
        "an escape reached the terminal: {err:?}"
    );
}

#[test]
fn a_damaged_state_file_is_refused_by_name_and_the_import_can_start_over() {
    let fx = kit::fixture();
    let tmp = tempfile::tempdir().unwrap();
    let dir = tmp.path();
    let set = create(&fx, dir, "site", &[]);
    let n = set.data.len();
    assert!(n >= 3, "{n}");
    let store = dir.join("store");
    let staging = store.join(format!("tmp/import-{}", set.sha256));
    let state = staging.join("volumes.json");

    // The first runs take in volumes one by one, until one leaves a blob
    // whose first chunks came (in order) and whose last ones are to come.
    let mut taken = 0;
    let (good, v) = loop {
        assert!(taken < n - 1, "no volume ends inside a cut blob");
        let o = import(&store, &set.sha256, &[&set.data[taken]]);
        assert!(o.status.success(), "{}", stderr(&o));
        taken += 1;
        let good = std::fs::read_to_string(&state).unwrap();
        let v: serde_json::Value = serde_json::from_str(&good).unwrap();
        let seen: Vec<u64> = (1..=taken as u64).collect();
        assert_eq!(v["whole"], serde_json::json!(seen), "{good}");
        if v.get("running").is_some() {
            break (good, v);
        }
    };

    let with = |text: &str| {
        std::fs::write(&state, text).unwrap();
        import(&store, &set.sha256, &[&set.data[taken]])
    };
    // Too large: valid JSON padded with 1 MiB of spaces, refused by the
    // bound before it is parsed.
    let padded = format!("{good}{}", " ".repeat(1 << 20));
    assert_refused(
        &with(&padded),
        &state,
        &staging,
        "more than a state of this bundle ever takes",
    );
    // Not JSON, cut short, or a field no state has (its name escaped).
    assert_refused(
        &with("\u{0}\u{ff}garbage"),
        &state,
        &staging,
        "is not a state of an import of volumes",
    );
    assert_refused(
        &with(&good[..good.len() / 2]),
        &state,
        &staging,
        "is not a state",
    );
    let foreign = good.replacen("\"whole\"", "\"\\u001b[31mwhole\"", 1);
    assert_refused(&with(&foreign), &state, &staging, "unknown field");
    // Well-formed, but naming what the bundle does not have.
    let mut bad = v.clone();
    bad["verified"] = serde_json::json!([[999_999, 0]]);
    assert_refused(
        &with(&bad.to_string()),
        &state,
        &staging,
        "names chunk 0 of file 999999",
    );
    let mut bad = v.clone();
    bad["whole"] = serde_json::json!([n + 1]);
    assert_refused(
        &with(&bad.to_string()),
        &state,
        &staging,
        &format!(
            "names data volume {}; the bundle has volumes 1 to {n}",
            n + 1
        ),
    );
    let mut bad = v.clone();
    bad["manifest_sha256"] = serde_json::json!("0".repeat(64));
    assert_refused(
        &with(&bad.to_string()),
        &state,
        &staging,
        "it records bundle 0000",
    );
    // The hash of a blob carried over between runs (its first chunks came
    // in order): refused when it is no hash state or covers chunks not
    // verified.
    let running = v["running"].as_object().unwrap_or_else(|| panic!("{good}"));
    let (blob, resume) = running.iter().next().unwrap();
    let next = resume["next"].as_u64().unwrap();
    let mut bad = v.clone();
    bad["running"][blob]["state"] = serde_json::json!("zz\u{1b}");
    assert_refused(
        &with(&bad.to_string()),
        &state,
        &staging,
        "is not a sha256 state (zz\\u{1b})",
    );
    let mut bad = v.clone();
    bad["running"][blob]["next"] = serde_json::json!(next + 1);
    assert_refused(
        &with(&bad.to_string()),
        &state,
        &staging,
        "which it does not list as verified",
    );
    let mut bad = v.clone();
    bad["running"][blob]["next"] = serde_json::json!(99);
    assert_refused(&with(&bad.to_string()), &state, &staging, "up to chunk 99");

    // A hash state that decodes but is not the blob's: it is never taken
    // on its word (#28 item 3: chunks an earlier run verified are hashed
    // again from disk), so the blob, whose bytes are intact, is published
    // right and verifies.
    let mut forged = v.clone();
    let hex = resume["state"].as_str().unwrap();
    let flipped = if hex.starts_with('0') { "1" } else { "0" };
    forged["running"][blob]["state"] = serde_json::json!(format!("{flipped}{}", &hex[1..]));
    std::fs::write(&state, forged.to_string()).unwrap();
    let rest: Vec<&PathBuf> = set.data[taken..].iter().collect();
    let o = import(&store, &set.sha256, &rest);
    assert!(o.status.success(), "{}\n{}", stdout(&o), stderr(&o));
    assert!(!stdout(&o).contains("accepted so far"), "{}", stdout(&o));
    let all: Vec<&PathBuf> = set.data.iter().collect();
    let o = import(&store, &set.sha256, &all);
    assert!(o.status.success(), "{}\n{}", stdout(&o), stderr(&o));
    assert!(!stdout(&o).contains("accepted so far"), "{}", stdout(&o));
    let o = llmgw()
        .args(["mirror", "verify", "--store", s(&store)])
        .output()
        .unwrap();
    assert!(o.status.success(), "{}", stderr(&o));
    std::fs::remove_dir_all(&store).unwrap();
    for volume in &set.data[..=taken] {
        let o = import(&store, &set.sha256, &[volume]);
        assert!(o.status.success(), "{}", stderr(&o));
    }

    // Not a file at all.
    std::fs::remove_file(&state).unwrap();
    std::fs::create_dir(&state).unwrap();
    let o = import(&store, &set.sha256, &[&set.data[1]]);
    assert_refused(&o, &state, &staging, "cannot be read");
    assert!(
        !store.join("bundles").exists()
            || std::fs::read_dir(store.join("bundles"))
                .unwrap()
                .next()
                .is_none()
    );

    // As the message says: remove the folder, import again — one volume a
    // run, in order, so cut blobs are hashed on from the state each time.
    std::fs::remove_dir_all(&staging).unwrap();
    for (k, volume) in set.data.iter().enumerate() {
        let o = import(&store, &set.sha256, &[volume]);
        assert!(o.status.success(), "{}\n{}", stdout(&o), stderr(&o));
        let done = !stdout(&o).contains("accepted so far");
        assert_eq!(done, k == n - 1, "{}", stdout(&o));
    }
    let o = llmgw()
        .args(["mirror", "verify", "--store", s(&store)])
        .output()
        .unwrap();
    assert!(o.status.success(), "{}", stderr(&o));
}
