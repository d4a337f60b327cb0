//! The store's other commands: `bundle trust` (keys made by this tool and by
//! the real minisign CLI), `mirror remove | gc | verify`.

use std::path::Path;

use super::common::*;
use crate::bundle_kit::*;

#[test]
fn remove_gc_and_dry_run() {
    let env = Env::new();
    let shared: &[u8] = b"a file both bundles carry";
    let mut a = Kit::new();
    a.model_file("acme/a", "only-a.bin", b"only in a");
    a.model_file("acme/a", "shared.bin", shared);
    let mut b = Kit::new();
    b.model_file("acme/b", "only-b.bin", b"only in b");
    b.model_file("acme/b", "shared.bin", shared);
    for (name, k) in [("a.tar", &a), ("b.tar", &b)] {
        let p = env.path(name);
        write_tar(&p, &k.entries());
        assert!(env.import(&p, &k.sha256()).status.success());
    }
    let blob = |body: &[u8]| {
        let h = llmgw_shared::sha256_hex(body);
        env.store.join("blobs/sha256").join(&h[..2]).join(h)
    };

    // Remove by unique prefix; unknown and ambiguous prefixes are refused.
    let o = run(&["mirror", "remove", "zz", "--store", s(&env.store)]);
    assert_eq!(o.status.code(), Some(1));
    assert!(
        stderr(&o).contains("no bundle in the store matches"),
        "{}",
        stderr(&o)
    );
    let o = run(&["mirror", "remove", "", "--store", s(&env.store)]);
    assert_eq!(o.status.code(), Some(1));
    let o = run(&[
        "mirror",
        "remove",
        &a.sha256()[..12],
        "--store",
        s(&env.store),
    ]);
    assert!(o.status.success(), "{}", stderr(&o));
    assert!(stdout(&o).contains(&a.sha256()));
    assert!(
        !env.store
            .join(format!("bundles/{}.json", a.sha256()))
            .exists()
    );
    assert!(blob(b"only in a").exists(), "blobs stay until gc");

    // A dry run names what would go and changes nothing.
    let before = snapshot(&env.store);
    let o = run(&["mirror", "gc", "--store", s(&env.store), "--dry-run"]);
    assert!(o.status.success(), "{}", stderr(&o));
    let out = stdout(&o);
    assert!(
        out.contains(&format!("would remove {}", blob(b"only in a").display())),
        "{out}"
    );
    assert!(out.contains("would remove 1 blob ("), "{out}");
    assert_eq!(before, snapshot(&env.store));

    let o = run(&["mirror", "gc", "--store", s(&env.store), "--json"]);
    let v: serde_json::Value = serde_json::from_slice(&o.stdout).unwrap();
    assert_eq!(v["blobs_removed"].as_array().unwrap().len(), 1);
    assert_eq!(v["bundles_kept"], 2);
    assert!(!blob(b"only in a").exists());
    assert!(blob(shared).exists());
    assert!(blob(b"only in b").exists());
    let o = run(&["mirror", "verify", "--store", s(&env.store)]);
    assert!(o.status.success(), "{}", stdout(&o));
    assert!(stdout(&o).contains("all intact"));
}

#[test]
fn mirror_verify_names_each_damaged_file() {
    let env = Env::new();
    let kit = good_kit(&env.key);
    let p = env.path("b.tar");
    write_tar(&p, &kit.entries());
    assert!(env.import(&p, &kit.sha256()).status.success());
    let o = run(&["mirror", "verify", "--store", s(&env.store)]);
    assert!(o.status.success(), "{}", stdout(&o));

    let msha = model_sha(&kit);
    let rotten = env.store.join("blobs/sha256").join(&msha[..2]).join(&msha);
    let mut bytes = std::fs::read(&rotten).unwrap();
    bytes[77] ^= 0x10;
    std::fs::remove_file(&rotten).unwrap();
    std::fs::write(&rotten, &bytes).unwrap();
    let gone_sha = llmgw_shared::sha256_hex(b"{\"hidden\": 8}");
    let gone = env
        .store
        .join("blobs/sha256")
        .join(&gone_sha[..2])
        .join(&gone_sha);
    std::fs::remove_file(&gone).unwrap();

    let stray = env.store.join("blobs/sha256/ab/notes.txt");
    std::fs::create_dir_all(stray.parent().unwrap()).unwrap();
    std::fs::write(&stray, b"hand-made").unwrap();
    let o = run(&["mirror", "verify", "--store", s(&env.store)]);
    assert_eq!(o.status.code(), Some(1));
    let out = stdout(&o);
    assert!(
        out.contains(&format!("DAMAGED {}: is not a blob", stray.display())),
        "{out}"
    );
    assert!(
        out.contains(&format!(
            "DAMAGED {}: its bytes hash to sha256",
            rotten.display()
        )),
        "{out}"
    );
    assert!(
        out.contains(&format!("DAMAGED {}: is missing", gone.display())),
        "{out}"
    );
    assert!(stderr(&o).contains("3 damaged file(s)"), "{}", stderr(&o));
}

#[test]
fn trust_add_list_remove() {
    let dir = tempfile::tempdir().unwrap();
    let store = dir.path().join("store");
    let k1 = Key::new();
    let k2 = Key::new();
    let p1 = k1.write_pub(dir.path());
    let p2 = k2.write_pub(dir.path());
    let o = run(&["bundle", "trust", "add", s(&p1), "--store", s(&store)]);
    assert!(o.status.success(), "{}", stderr(&o));
    assert!(stdout(&o).contains(&k1.id));
    let saved = std::fs::read_to_string(store.join(format!("trust/{}.pub", k1.id))).unwrap();
    assert!(saved.ends_with(&format!("{}\n", k1.pub_text.lines().nth(1).unwrap())));
    let o = run(&["bundle", "trust", "add", s(&p1), "--store", s(&store)]);
    assert!(stdout(&o).contains("already trusted"), "{}", stdout(&o));
    let o = llmgw()
        .args(["bundle", "trust", "add", s(&p2)])
        .env("LLMGW_STORE", &store)
        .output()
        .unwrap();
    assert!(o.status.success());

    let o = run(&["bundle", "trust", "list", "--store", s(&store), "--json"]);
    let v: serde_json::Value = serde_json::from_slice(&o.stdout).unwrap();
    let mut ids: Vec<String> = v
        .as_array()
        .unwrap()
        .iter()
        .map(|k| k["key_id"].as_str().unwrap().to_string())
        .collect();
    ids.sort();
    let mut want = vec![k1.id.clone(), k2.id.clone()];
    want.sort();
    assert_eq!(ids, want);

    let o = run(&[
        "bundle",
        "trust",
        "remove",
        &k1.id.to_lowercase(),
        "--store",
        s(&store),
    ]);
    assert!(o.status.success(), "{}", stderr(&o));
    let o = run(&["bundle", "trust", "list", "--store", s(&store)]);
    assert!(!stdout(&o).contains(&k1.id) && stdout(&o).contains(&k2.id));
    let o = run(&["bundle", "trust", "remove", &k1.id, "--store", s(&store)]);
    assert_eq!(o.status.code(), Some(1));
    assert!(
        stderr(&o).contains("is not trusted by this store"),
        "{}",
        stderr(&o)
    );

    // Not a key; a key filed under another key's name.
    let junk = dir.path().join("junk.pub");
    std::fs::write(&junk, "untrusted comment: x\nnot a key\n").unwrap();
    let o = run(&["bundle", "trust", "add", s(&junk), "--store", s(&store)]);
    assert_eq!(o.status.code(), Some(1));
    assert!(
        stderr(&o).contains("is not a minisign public key"),
        "{}",
        stderr(&o)
    );
    std::fs::copy(&p1, store.join("trust/0000.pub")).unwrap();
    let o = run(&["bundle", "trust", "list", "--store", s(&store)]);
    assert_eq!(o.status.code(), Some(1));
    assert!(
        stderr(&o).contains(&format!("holds key {}", k1.id)),
        "{}",
        stderr(&o)
    );
}

/// The real minisign CLI (Debian package): a key it made and a SHA256SUMS
/// it signed are accepted; its legacy (`-l`) signature is refused.
#[test]
fn keys_and_signatures_made_by_the_minisign_cli() {
    let minisign = |args: &[&str], dir: &Path| {
        let o = std::process::Command::new("minisign")
            .args(args)
            .current_dir(dir)
            .stdin(std::process::Stdio::null())
            .output()
            .unwrap_or_else(|e| panic!("minisign not runnable ({e}): run scripts/setup.sh"));
        assert!(o.status.success(), "minisign {args:?}: {}", stderr(&o));
    };
    let env = Env::new();
    let work = env.path("minisign");
    std::fs::create_dir_all(&work).unwrap();
    minisign(&["-G", "-W", "-p", "k.pub", "-s", "k.key"], &work);
    let assets: &[(&str, &[u8])] = &[("llmgw-linux-amd64.tar.gz", b"real cli release")];
    let sums = sums_text(assets);
    std::fs::write(work.join("SHA256SUMS"), &sums).unwrap();
    minisign(
        &[
            "-S",
            "-s",
            "k.key",
            "-m",
            "SHA256SUMS",
            "-t",
            "llmgw v1.0.0",
        ],
        &work,
    );
    minisign(
        &[
            "-S",
            "-l",
            "-s",
            "k.key",
            "-m",
            "SHA256SUMS",
            "-x",
            "legacy.minisig",
        ],
        &work,
    );
    let pub_text = std::fs::read_to_string(work.join("k.pub")).unwrap();
    let key_id = llmgw_shared::signing::PublicKey::parse("k.pub", &pub_text)
        .unwrap()
        .key_id();
    // The id we print is the one minisign printed into the key's comment.
    assert!(
        pub_text.lines().next().unwrap().ends_with(&key_id),
        "{pub_text}"
    );

    let o = run(&[
        "bundle",
        "trust",
        "add",
        s(&work.join("k.pub")),
        "--store",
        s(&env.store),
    ]);
    assert!(o.status.success(), "{}", stderr(&o));

    let sig = std::fs::read(work.join("SHA256SUMS.minisig")).unwrap();
    let mut legacy_kit = Kit::new();
    let legacy = std::fs::read(work.join("legacy.minisig")).unwrap();
    legacy_kit.llmgw_release_with(assets, sums.as_bytes(), &legacy, &key_id);
    env.refuse_entries(
        "legacy signature",
        &legacy_kit.entries(),
        &legacy_kit.sha256(),
        &["legacy minisign signature", "sign again without -l"],
    );

    let mut kit = Kit::new();
    kit.llmgw_release_with(assets, sums.as_bytes(), &sig, &key_id);
    let p = env.path("cli.tar");
    write_tar(&p, &kit.entries());
    let o = env.import(&p, &kit.sha256());
    assert!(o.status.success(), "{}", stderr(&o));
    let last = stdout(&o).lines().last().unwrap().to_string();
    assert!(
        last.contains(&format!("signed by trusted key {key_id}")),
        "{last}"
    );
}
