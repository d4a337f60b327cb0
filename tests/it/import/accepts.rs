//! What import accepts and what it says it proved: every bundle kind, a
//! format-1 bundle, the JSON summary, a later bundle carrying only what is
//! new, and `bundle verify` / `inspect`, which write nothing.

use super::common::*;
use crate::bundle_kit::*;

#[test]
fn imports_tar_zst_and_dir_and_says_what_was_proven() {
    let env = Env::new();
    let kit = good_kit(&env.key);
    let sha = kit.sha256();
    for (i, fmt) in ["tar", "tar.zst", "dir"].iter().enumerate() {
        let p = env.path(&format!("good.{fmt}"));
        match *fmt {
            "tar" => write_tar(&p, &kit.entries()),
            "tar.zst" => write_tar_zst(&p, &kit.entries()),
            _ => write_dir(&p, &kit.entries()),
        }
        let o = env.import(&p, &sha);
        let out = stdout(&o);
        assert!(o.status.success(), "{fmt}: {}", stderr(&o));
        if i == 0 {
            let last = out.lines().last().unwrap();
            assert!(last.starts_with("proven: manifest sha256 "), "{last}");
            assert!(last.contains(&sha), "{last}");
            assert!(
                last.contains(&format!("signed by trusted key {}", env.key.id)),
                "{last}"
            );
            let bytes = kit.manifest.total_bytes();
            assert!(
                last.contains(&format!("6 blobs ({bytes} bytes) hashed and matched")),
                "{last}"
            );
            assert!(last.ends_with("bundles now held: 2"), "{last}");
            assert!(out.contains("acme/tiny@main"), "{out}");
        } else {
            // The same bundle again, in another shape: a no-op that says so.
            assert!(out.contains("already imported"), "{fmt}: {out}");
        }
    }
    // Every blob is where the store layout says, read-only, named by its hash.
    for (sha, body) in &kit.blobs {
        let p = env.store.join("blobs/sha256").join(&sha[..2]).join(sha);
        assert_eq!(&std::fs::read(&p).unwrap(), body);
        use std::os::unix::fs::PermissionsExt;
        assert_eq!(
            std::fs::metadata(&p).unwrap().permissions().mode() & 0o777,
            0o444
        );
    }
    let manifest = std::fs::read(env.store.join(format!("bundles/{sha}.json"))).unwrap();
    assert_eq!(manifest, kit.manifest_bytes());
    assert!(
        std::fs::read_dir(env.store.join("tmp"))
            .unwrap()
            .next()
            .is_none()
    );

    // Re-import: a no-op that says so, and changes nothing.
    let before = snapshot(&env.store);
    let o = import_bundle(&env.path("good.tar"), &sha, &env.store, &["--json"]);
    assert!(o.status.success());
    let v: serde_json::Value = serde_json::from_slice(&o.stdout).unwrap();
    assert_eq!(v["status"], "already-imported");
    assert_eq!(v["bundles_held"], 2);
    assert_eq!(before, snapshot(&env.store));

    // mirror list, text and JSON.
    let o = run(&["mirror", "list", "--store", s(&env.store), "--json"]);
    let v: serde_json::Value = serde_json::from_slice(&o.stdout).unwrap();
    assert_eq!(v.as_array().unwrap().len(), 2);
    let o = llmgw()
        .args(["mirror", "list"])
        .env("LLMGW_STORE", &env.store)
        .output()
        .unwrap();
    assert!(stdout(&o).contains("2 bundles held"), "{}", stdout(&o));
}

/// A bundle the previous release wrote (manifest format 1: none of format
/// 2's parts) still imports, stays format 1 in the store, and is served.
#[test]
fn a_format_1_bundle_still_imports_and_is_served() {
    let env = Env::new();
    let mut kit = good_kit(&env.key);
    kit.manifest.format_version = 1;
    let bytes = kit.manifest_bytes();
    assert!(
        String::from_utf8_lossy(&bytes).contains("\"format_version\": 1"),
        "the kit did not write format 1"
    );
    let p = env.path("old.tar");
    write_tar(&p, &kit.entries());
    let o = import_bundle(&p, &kit.sha256(), &env.store, &[]);
    assert!(o.status.success(), "{}", stderr(&o));
    let held = env
        .store
        .join("bundles")
        .join(format!("{}.json", kit.sha256()));
    assert_eq!(
        std::fs::read(&held).unwrap(),
        bytes,
        "the manifest was rewritten"
    );

    let server = Server::start(&env.store);
    let body = server.wait_for("/api/models/acme/tiny/revision/main", 200);
    let v: serde_json::Value = serde_json::from_slice(&body).unwrap();
    assert_eq!(v["id"], "acme/tiny", "{v}");
}

#[test]
fn json_summary_and_sha256_file() {
    let env = Env::new();
    let kit = good_kit(&env.key);
    let p = env.path("b.tar.zst");
    write_tar_zst(&p, &kit.entries());
    // What create writes beside the bundle: `<hex>  <name>`.
    let shaf = env.path("b.tar.zst.sha256");
    std::fs::write(&shaf, format!("{}  manifest.json\n", kit.sha256())).unwrap();
    let o = llmgw()
        .args(["bundle", "import", s(&p), "--sha256", s(&shaf), "--json"])
        .env("LLMGW_STORE", &env.store)
        .output()
        .unwrap();
    assert!(o.status.success(), "{}", stderr(&o));
    let v: serde_json::Value = serde_json::from_slice(&o.stdout).unwrap();
    assert_eq!(v["status"], "imported");
    assert_eq!(v["manifest_sha256"], kit.sha256());
    assert_eq!(v["format"], "tar.zst");
    assert_eq!(v["signatures"][0]["key_id"], env.key.id.as_str());
    assert_eq!(v["blobs_hashed"], 6);
    assert_eq!(v["blobs_added"], 6);
    assert_eq!(v["bundle"]["repos"][0]["id"], "acme/tiny");

    // A --sha256 that is neither hex nor a readable file is a usage error.
    let o = import_bundle(&p, "nothex", &env.store, &[]);
    assert_eq!(o.status.code(), Some(2), "{}", stderr(&o));
    assert!(stderr(&o).contains("64 hex digits"), "{}", stderr(&o));
}

#[test]
fn later_bundles_may_carry_only_what_is_new() {
    let env = Env::new();
    let kit = good_kit(&env.key);
    let p = env.path("full.tar");
    write_tar(&p, &kit.entries());
    assert!(env.import(&p, &kit.sha256()).status.success());

    // The same content plus one new file; the bundle carries only the new one.
    let mut next = kit.clone();
    let new_sha = next.model_file("acme/tiny", "tokenizer.json", b"{\"vocab\": []}");
    let only_new: Vec<Entry> = next
        .entries()
        .into_iter()
        .filter(|e| match e {
            Entry::File { name, .. } => name == "manifest.json" || name.ends_with(&new_sha),
            _ => true,
        })
        .collect();
    let p2 = env.path("delta.tar");
    write_tar(&p2, &only_new);
    let o = env.import(&p2, &next.sha256());
    assert!(o.status.success(), "{}", stderr(&o));
    let last = stdout(&o).lines().last().unwrap().to_string();
    assert!(last.contains("1 blob (13 bytes) hashed"), "{last}");
    let reused = format!(
        "6 blobs ({} bytes) verified earlier",
        kit.manifest.total_bytes()
    );
    assert!(last.contains(&reused), "{last}");

    // Into a store that lacks the rest, the same delta is refused.
    let other = Env::new();
    other.refuse("delta into empty", &p2, &next.sha256(), &["lacks 6 blob"]);
}

#[test]
fn verify_writes_nothing_and_inspect_is_marked_unverified() {
    let env = Env::new();
    let kit = good_kit(&env.key);
    let p = env.path("b.tar.zst");
    write_tar_zst(&p, &kit.entries());
    let pubf = env.key.write_pub(&env.root);
    let o = run(&[
        "bundle",
        "verify",
        s(&p),
        "--sha256",
        &kit.sha256(),
        "--trust",
        s(&pubf),
    ]);
    assert!(o.status.success(), "{}", stderr(&o));
    assert!(stdout(&o).contains("nothing was written"), "{}", stdout(&o));
    assert!(
        stdout(&o).contains(&format!("signed by trusted key {}", env.key.id)),
        "{}",
        stdout(&o)
    );
    // Without the key, refused; with a damaged blob, refused.
    let o = run(&["bundle", "verify", s(&p), "--sha256", &kit.sha256()]);
    assert_eq!(o.status.code(), Some(1));
    assert!(stderr(&o).contains("trusted: none"), "{}", stderr(&o));
    let mut e = kit.entries();
    let mi = blob_entry_index(&e, &model_sha(&kit));
    if let Entry::File { data, .. } = &mut e[mi] {
        data[0] ^= 0xff;
    }
    let bad = env.path("bad.tar");
    write_tar(&bad, &e);
    let o = run(&[
        "bundle",
        "verify",
        s(&bad),
        "--sha256",
        &kit.sha256(),
        "--trust",
        s(&pubf),
    ]);
    assert_eq!(o.status.code(), Some(1));
    assert!(stderr(&o).contains("is damaged"), "{}", stderr(&o));

    let o = run(&["bundle", "inspect", s(&p)]);
    assert!(o.status.success(), "{}", stderr(&o));
    let out = stdout(&o);
    assert!(out.starts_with("UNVERIFIED"), "{out}");
    assert!(out.contains("acme/llmgw v1.0.0 (llmgw 1.0.0)"), "{out}");
    assert!(out.contains(&kit.sha256()), "{out}");
    let o = run(&["bundle", "inspect", s(&bad), "--json"]);
    let v: serde_json::Value = serde_json::from_slice(&o.stdout).unwrap();
    assert_eq!(v["verified"], false);
    assert_eq!(v["repos"][0]["files"], 2);
    assert_eq!(v["arches"][0], "amd64");
}
