//! End-to-end tests of `llmgw bundle import | verify | inspect | trust` and
//! `llmgw mirror list | gc | remove | verify`, running the real binary on
//! bundles made by `bundle_kit` (good ones and damaged ones).

mod bundle_kit;

use std::path::{Path, PathBuf};
use std::process::Output;

use bundle_kit::*;

/// A store that trusts one key and already holds one small bundle, so
/// "unchanged" is checked against a store with content.
struct Env {
    _dir: tempfile::TempDir,
    root: PathBuf,
    store: PathBuf,
    key: Key,
}

impl Env {
    fn new() -> Self {
        let dir = tempfile::tempdir().unwrap();
        let root = dir.path().to_path_buf();
        let store = root.join("store");
        let key = Key::new();
        let pubf = key.write_pub(&root);
        let o = run(&["bundle", "trust", "add", s(&pubf), "--store", s(&store)]);
        assert!(o.status.success(), "{}", stderr(&o));
        let env = Self {
            _dir: dir,
            root,
            store,
            key,
        };
        let mut first = Kit::new();
        first.model_file("acme/first", "weights.bin", b"the first bundle's only file");
        let p = env.path("first.tar");
        write_tar(&p, &first.entries());
        let o = env.import(&p, &first.sha256());
        assert!(o.status.success(), "{}", stderr(&o));
        env
    }

    fn path(&self, name: &str) -> PathBuf {
        self.root.join(name)
    }

    fn import(&self, bundle: &Path, sha: &str) -> Output {
        run(&[
            "bundle",
            "import",
            s(bundle),
            "--sha256",
            sha,
            "--store",
            s(&self.store),
        ])
    }

    /// Imports `entries` as a tar and checks the refusal: exit code 1,
    /// every `expect` in the message, and the store exactly as before with
    /// no staging left behind.
    fn refuse_entries(&self, case: &str, entries: &[Entry], sha: &str, expect: &[&str]) {
        let p = self.path(&format!("{}.tar", case.replace(' ', "-")));
        write_tar(&p, entries);
        self.refuse(case, &p, sha, expect);
    }

    fn refuse(&self, case: &str, bundle: &Path, sha: &str, expect: &[&str]) {
        assert_refused(case, &self.store, expect, || self.import(bundle, sha));
    }
}

fn s(p: &Path) -> &str {
    p.to_str().unwrap()
}

/// A bundle like create makes: llmgw's signed release and a model.
fn good_kit(key: &Key) -> Kit {
    let mut k = Kit::new();
    k.llmgw_release(
        key,
        &[
            ("llmgw-linux-amd64.tar.gz", b"llmgw for amd64"),
            ("llmgw-linux-arm64.tar.gz", b"llmgw for arm64"),
        ],
    );
    let weights: Vec<u8> = (0..300_000u32).map(|i| (i % 251) as u8).collect();
    k.model_file("acme/tiny", "model.gguf", &weights);
    k.model_file("acme/tiny", "config.json", b"{\"hidden\": 8}");
    k
}

fn blob_entry_index(entries: &[Entry], sha: &str) -> usize {
    entries
        .iter()
        .position(|e| matches!(e, Entry::File { name, .. } if name.ends_with(sha)))
        .unwrap()
}

fn model_sha(k: &Kit) -> String {
    k.manifest.repos[0]
        .files
        .iter()
        .find(|f| f.path == "model.gguf")
        .unwrap()
        .sha256
        .clone()
}

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
    let o = run(&[
        "bundle",
        "import",
        s(&env.path("good.tar")),
        "--sha256",
        &sha,
        "--store",
        s(&env.store),
        "--json",
    ]);
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
    let o = run(&[
        "bundle",
        "import",
        s(&p),
        "--sha256",
        &kit.sha256(),
        "--store",
        s(&env.store),
    ]);
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
    let o = run(&[
        "bundle",
        "import",
        s(&p),
        "--sha256",
        "nothex",
        "--store",
        s(&env.store),
    ]);
    assert_eq!(o.status.code(), Some(2), "{}", stderr(&o));
    assert!(stderr(&o).contains("64 hex digits"), "{}", stderr(&o));
}

#[test]
fn every_kind_of_damage_is_refused_and_the_store_is_unchanged() {
    let env = Env::new();
    let kit = good_kit(&env.key);
    let sha = kit.sha256();
    let good = kit.entries();
    let msha = model_sha(&kit);
    let mi = blob_entry_index(&good, &msha);
    let blob_name = format!("blobs/sha256/{msha}");

    // A flipped byte in a blob.
    let mut e = good.clone();
    if let Entry::File { data, .. } = &mut e[mi] {
        data[1000] ^= 1;
    }
    env.refuse_entries(
        "flipped byte",
        &e,
        &sha,
        &[&blob_name, "acme/tiny model.gguf", "is damaged", &msha],
    );

    // The wrong hash given.
    let wrong = "ab".repeat(32);
    env.refuse_entries(
        "wrong hash",
        &good,
        &wrong,
        &[&wrong, &sha, "not the bundle whose hash you were given"],
    );

    // llmgw's release signed by a key the store does not trust.
    let other = Key::new();
    let bad = good_kit(&other);
    env.refuse_entries(
        "other key",
        &bad.entries(),
        &bad.sha256(),
        &[
            &format!("signed by key {}", other.id),
            "not trusted here",
            &env.key.id,
        ],
    );

    // An unsigned llmgw release.
    let mut unsigned = good_kit(&env.key);
    unsigned.manifest.releases[0].signature = None;
    env.refuse_entries(
        "unsigned",
        &unsigned.entries(),
        &unsigned.sha256(),
        &["acme/llmgw v1.0.0 carries no signature"],
    );

    // SHA256SUMS, correctly signed, that disagrees with the manifest.
    let mut liar = Kit::new();
    let sums = sums_text(&[("llmgw-linux-amd64.tar.gz", b"something else")]);
    let sig = env.key.sign(sums.as_bytes());
    liar.llmgw_release_with(
        &[("llmgw-linux-amd64.tar.gz", b"llmgw for amd64")],
        sums.as_bytes(),
        &sig,
        &env.key.id,
    );
    env.refuse_entries(
        "sums disagree",
        &liar.entries(),
        &liar.sha256(),
        &[
            "asset llmgw-linux-amd64.tar.gz: the signed SHA256SUMS says sha256",
            &llmgw_shared::digest::sha256_hex(b"llmgw for amd64"),
        ],
    );

    // A `../` entry, an absolute path.
    let mut e = good.clone();
    e.insert(2, Entry::file("../escape", b"x"));
    env.refuse_entries("dotdot", &e, &sha, &["\"../escape\"", "'..'"]);
    let mut e = good.clone();
    e.insert(2, Entry::file("blobs/sha256/../../../etc/cron.d/x", b"x"));
    env.refuse_entries("dotdot inside", &e, &sha, &["'..'"]);
    let mut e = good.clone();
    e.insert(2, Entry::file("/etc/cron.d/evil", b"x"));
    env.refuse_entries("absolute", &e, &sha, &["\"/etc/cron.d/evil\"", "absolute"]);

    // A symlink and a hard link in place of a blob; a device.
    let mut e = good.clone();
    e[mi] = Entry::Symlink(blob_name.clone(), "/etc/passwd".into());
    env.refuse_entries(
        "symlink",
        &e,
        &sha,
        &[&blob_name, "symbolic link to \"/etc/passwd\""],
    );
    let mut e = good.clone();
    e[mi] = Entry::HardLink(blob_name.clone(), "manifest.json".into());
    env.refuse_entries(
        "hard link",
        &e,
        &sha,
        &[&blob_name, "hard link to \"manifest.json\""],
    );
    let mut e = good.clone();
    e.insert(2, Entry::CharDevice("blobs/sha256/null".into()));
    env.refuse_entries("device", &e, &sha, &["character device"]);

    // A truncated tar: inside a blob, and at an entry boundary.
    let bytes = tar_bytes(&good);
    let p = env.path("truncated.tar");
    std::fs::write(&p, &bytes[..bytes.len() / 2]).unwrap();
    env.refuse("truncated inside", &p, &sha, &["truncated"]);
    let whole: usize = good
        .iter()
        .map(|e| match e {
            Entry::File { data, .. } => 512 + data.len().div_ceil(512) * 512,
            _ => 512,
        })
        .sum();
    std::fs::write(&p, &bytes[..whole]).unwrap();
    env.refuse(
        "truncated at boundary",
        &p,
        &sha,
        &["truncated", "end-of-archive marker"],
    );
    let z = env.path("truncated.tar.zst");
    let comp = zstd::encode_all(&bytes[..], 3).unwrap();
    std::fs::write(&z, &comp[..comp.len() * 2 / 3]).unwrap();
    env.refuse("truncated zstd", &z, &sha, &["import of"]);

    // A duplicate entry.
    let mut e = good.clone();
    e.push(good[mi].clone());
    env.refuse_entries(
        "duplicate",
        &e,
        &sha,
        &[&format!("{blob_name} appears twice")],
    );
    let mut e = good.clone();
    e.push(good[0].clone());
    env.refuse_entries(
        "duplicate manifest",
        &e,
        &sha,
        &["manifest.json appears twice"],
    );

    // Extra files: an unknown name, a blob the manifest does not name, a
    // stray directory.
    let mut e = good.clone();
    e.push(Entry::file("README.txt", b"hello"));
    env.refuse_entries(
        "unknown file",
        &e,
        &sha,
        &["README.txt is not part of the bundle format"],
    );
    let extra = llmgw_shared::digest::sha256_hex(b"extra");
    let mut e = good.clone();
    e.push(Entry::file(&format!("blobs/sha256/{extra}"), b"extra"));
    env.refuse_entries("unlisted blob", &e, &sha, &[&extra, "does not name"]);
    let mut e = good.clone();
    e.insert(1, Entry::Dir("blobs/sha512".into()));
    env.refuse_entries("stray dir", &e, &sha, &["blobs/sha512 is a directory"]);

    // A manifest that lies about a size (consistently, so it parses).
    let mut liar = good_kit(&env.key);
    let f = liar.manifest.repos[0]
        .files
        .iter_mut()
        .find(|f| f.path == "model.gguf")
        .unwrap();
    f.size += 1;
    env.refuse_entries(
        "lying size",
        &liar.entries(),
        &liar.sha256(),
        &[
            &blob_name,
            "is 300000 bytes, but the manifest declares 300001 bytes",
        ],
    );
    // A tar header that claims more than the manifest declares.
    let mut e = good.clone();
    if let Entry::File { size, data, .. } = &mut e[mi] {
        *size = Some(data.len() as u64 * 2);
        data.resize(data.len() * 2, 0);
    }
    env.refuse_entries(
        "oversize entry",
        &e,
        &sha,
        &["is 600000 bytes, but the manifest declares 300000"],
    );

    // The manifest not first; a blob missing from the bundle and the store.
    let mut e = good.clone();
    e.swap(0, 1);
    env.refuse_entries(
        "manifest not first",
        &e,
        &sha,
        &["first entry of the bundle must be manifest.json"],
    );
    let mut e = good.clone();
    e.remove(mi);
    env.refuse_entries(
        "missing blob",
        &e,
        &sha,
        &["lacks 1 blob", &msha, "acme/tiny model.gguf"],
    );
    let mut nosig = good.clone();
    let sig_sha = kit.manifest.releases[0]
        .assets
        .iter()
        .find(|a| a.name == "SHA256SUMS.minisig")
        .unwrap()
        .sha256
        .clone();
    nosig.remove(blob_entry_index(&nosig, &sig_sha));
    env.refuse_entries(
        "missing signature",
        &nosig,
        &sha,
        &["lacks 1 blob", "SHA256SUMS.minisig"],
    );

    // Directory bundles get the same checks.
    let d = env.path("linked-dir");
    let mut e = good.clone();
    e[mi] = Entry::Symlink(blob_name.clone(), "/etc/passwd".into());
    write_dir(&d, &e);
    env.refuse("dir symlink", &d, &sha, &["symbolic link"]);
    let d = env.path("extra-dir");
    let mut e = good.clone();
    e.push(Entry::file("notes/x.txt", b"x"));
    write_dir(&d, &e);
    env.refuse("dir extra", &d, &sha, &["notes is a directory"]);
}

#[test]
fn no_trusted_key_is_refused_naming_the_signer() {
    let dir = tempfile::tempdir().unwrap();
    let store = dir.path().join("store");
    let key = Key::new();
    let kit = good_kit(&key);
    let p = dir.path().join("b.tar");
    write_tar(&p, &kit.entries());
    let o = run(&[
        "bundle",
        "import",
        s(&p),
        "--sha256",
        &kit.sha256(),
        "--store",
        s(&store),
    ]);
    assert_eq!(o.status.code(), Some(1));
    let err = stderr(&o);
    assert!(err.contains(&format!("signed by key {}", key.id)), "{err}");
    assert!(err.contains("trusted: none"), "{err}");
    assert!(err.contains("llmgw bundle trust add"), "{err}");
    // The store did not exist before this import: it is not left behind.
    assert!(!store.exists(), "{err}");
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
    assert!(last.contains("1 blobs (13 bytes) hashed"), "{last}");
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
        let h = llmgw_shared::digest::sha256_hex(body);
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
    assert!(out.contains("would remove 1 blobs"), "{out}");
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
    let gone_sha = llmgw_shared::digest::sha256_hex(b"{\"hidden\": 8}");
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

#[test]
fn a_busy_store_is_refused() {
    use std::os::unix::io::AsRawFd;
    let env = Env::new();
    let lock = std::fs::File::open(env.store.join("lock")).unwrap();
    assert_eq!(unsafe { libc::flock(lock.as_raw_fd(), libc::LOCK_EX) }, 0);
    let kit = good_kit(&env.key);
    let p = env.path("b.tar");
    write_tar(&p, &kit.entries());
    let o = env.import(&p, &kit.sha256());
    assert_eq!(o.status.code(), Some(1));
    assert!(stderr(&o).contains("the store is busy"), "{}", stderr(&o));
    let o = run(&["mirror", "gc", "--store", s(&env.store)]);
    assert!(stderr(&o).contains("the store is busy"), "{}", stderr(&o));
    drop(lock);
    assert!(env.import(&p, &kit.sha256()).status.success());
}

/// Offsets in the tar where each entry ends (tar_bytes writes 512-byte
/// headers and pads data to 512).
fn entry_ends(entries: &[Entry]) -> Vec<usize> {
    let mut at = 0;
    entries
        .iter()
        .map(|e| {
            at += 512
                + match e {
                    Entry::File { data, .. } => data.len().div_ceil(512) * 512,
                    _ => 0,
                };
            at
        })
        .collect()
}

fn wait_for(what: &str, mut cond: impl FnMut() -> bool) {
    let start = std::time::Instant::now();
    while !cond() {
        assert!(
            start.elapsed() < std::time::Duration::from_secs(60),
            "timed out waiting for {what}"
        );
        std::thread::sleep(std::time::Duration::from_millis(20));
    }
}

/// An import killed half-way leaves nothing visible; the same import run
/// again completes, reusing the blobs the killed run had verified.
#[test]
fn killed_import_leaves_nothing_visible_and_a_rerun_completes() {
    let env = Env::new();
    let kit = good_kit(&env.key);
    let sha = kit.sha256();
    let entries = kit.entries();
    let bytes = tar_bytes(&entries);
    let ends = entry_ends(&entries);
    let before = snapshot(&env.store);

    // Feed the bundle through a named pipe: the manifest and three blobs,
    // then nothing, so the import is stuck mid-bundle when it is killed.
    let fifo = env.path("bundle.fifo");
    let c = std::ffi::CString::new(s(&fifo)).unwrap();
    assert_eq!(unsafe { libc::mkfifo(c.as_ptr(), 0o600) }, 0);
    let mut child = llmgw()
        .args([
            "bundle",
            "import",
            s(&fifo),
            "--sha256",
            &sha,
            "--store",
            s(&env.store),
        ])
        .stdout(std::process::Stdio::null())
        .stderr(std::process::Stdio::null())
        .spawn()
        .unwrap();
    let (tx, rx) = std::sync::mpsc::channel::<()>();
    let prefix = bytes[..ends[3]].to_vec();
    let fifo2 = fifo.clone();
    let writer = std::thread::spawn(move || {
        use std::io::Write;
        let mut f = std::fs::OpenOptions::new().write(true).open(fifo2).unwrap();
        f.write_all(&prefix).unwrap();
        let _ = rx.recv();
    });
    let staging = env.store.join(format!("tmp/import-{sha}"));
    let staged: Vec<String> = entries[1..4]
        .iter()
        .map(|e| match e {
            Entry::File { name, .. } => name.rsplit('/').next().unwrap().to_string(),
            _ => unreachable!(),
        })
        .collect();
    wait_for("three staged blobs", || {
        staged.iter().all(|h| staging.join(h).exists())
    });
    child.kill().unwrap();
    child.wait().unwrap();
    tx.send(()).unwrap();
    writer.join().unwrap();

    // gc would clear the killed run's staging; a dry run only says so.
    let o = run(&["mirror", "gc", "--store", s(&env.store), "--dry-run"]);
    assert!(
        stdout(&o).contains(&format!("would remove staging {}", staging.display())),
        "{}",
        stdout(&o)
    );

    // Nothing visible: blobs/ and bundles/ as before; only tmp/ differs.
    let mut after = snapshot(&env.store);
    after.retain(|k, _| !k.starts_with("tmp/"));
    let mut before_visible = before.clone();
    before_visible.retain(|k, _| !k.starts_with("tmp/"));
    assert_eq!(before_visible, after);

    // Run again on the whole bundle: it completes and reuses the three.
    let p = env.path("whole.tar");
    std::fs::write(&p, &bytes).unwrap();
    let o = run(&[
        "bundle",
        "import",
        s(&p),
        "--sha256",
        &sha,
        "--store",
        s(&env.store),
        "--json",
    ]);
    assert!(o.status.success(), "{}", stderr(&o));
    let v: serde_json::Value = serde_json::from_slice(&o.stdout).unwrap();
    assert_eq!(v["blobs_reused"], 3, "{v}");
    assert_eq!(v["blobs_hashed"], 3, "{v}");
    assert_eq!(v["blobs_added"], 6, "{v}");
    assert!(!staging.exists());
    let o = run(&["mirror", "verify", "--store", s(&env.store)]);
    assert!(o.status.success(), "{}", stdout(&o));
}

/// While an import runs, a reader of the store (what `mirror serve` does:
/// start from bundles/, then open blobs) never sees a bundle whose blobs
/// are not all there.
#[test]
fn a_reader_never_sees_a_half_added_bundle() {
    let env = Env::new();
    let mut kit = Kit::new();
    for i in 0..300 {
        kit.model_file(
            "acme/many",
            &format!("part-{i:03}.bin"),
            format!("part {i}").as_bytes(),
        );
    }
    let p = env.path("many.tar");
    write_tar(&p, &kit.entries());
    let store = llmgw_mirror::store::Store::at(&env.store);
    let done = std::sync::Arc::new(std::sync::atomic::AtomicBool::new(false));
    let done2 = done.clone();
    let reader = std::thread::spawn(move || {
        let mut looks = 0;
        let mut saw_new = false;
        loop {
            let finished = done2.load(std::sync::atomic::Ordering::SeqCst);
            for (id, m) in store.read_bundles().unwrap() {
                for (sha, size) in m.blobs() {
                    assert!(
                        store.has_blob(&sha, size),
                        "bundle {id} visible before blob {sha}"
                    );
                }
                saw_new |= m.repos.iter().any(|r| r.id == "acme/many");
            }
            looks += 1;
            if finished {
                return (looks, saw_new);
            }
        }
    });
    let o = env.import(&p, &kit.sha256());
    assert!(o.status.success(), "{}", stderr(&o));
    done.store(true, std::sync::atomic::Ordering::SeqCst);
    let (looks, saw_new) = reader.join().unwrap();
    assert!(saw_new && looks > 1, "{looks} looks");
}

/// Runs a shell script in a private mount namespace where `$STORE` is a
/// 1 MiB tmpfs: a real full disk, without root on the host.
fn on_tiny_disk(env: &Env, bundle: &Path, sha: &str) -> (String, String, String) {
    let script = r#"
set -e
mount -t tmpfs -o size=1m tmpfs "$STORE"
"$LLMGW" bundle import "$FIRST" --sha256 "$FIRST_SHA" --store "$STORE" >/dev/null
snap() { (cd "$STORE" && find . -exec sh -c 'if [ -f "$1" ]; then sha256sum "$1"; else echo "dir $1"; fi' _ {} \; | sort); }
before=$(snap)
set +e
"$LLMGW" bundle import "$BUNDLE" --sha256 "$SHA" --store "$STORE" 2>&1
echo "rc=$?"
after=$(snap)
[ "$before" = "$after" ] && echo "store unchanged" || { echo "store changed"; echo "$before"; echo "$after"; }
"#;
    let mut first = Kit::new();
    first.model_file("acme/first", "weights.bin", b"the first bundle's only file");
    let fp = env.path("tiny-first.tar");
    write_tar(&fp, &first.entries());
    let o = std::process::Command::new("unshare")
        .args(["--user", "--map-root-user", "--mount", "sh", "-c", script])
        .env("STORE", env.path("tiny-store"))
        .env("LLMGW", env!("CARGO_BIN_EXE_llmgw"))
        .env("FIRST", &fp)
        .env("FIRST_SHA", first.sha256())
        .env("BUNDLE", bundle)
        .env("SHA", sha)
        .output()
        .expect("unshare (util-linux) must be runnable");
    std::fs::create_dir_all(env.path("tiny-store")).ok();
    (stdout(&o), stderr(&o), format!("{:?}", o.status))
}

#[test]
fn free_space_is_checked_first_and_a_full_disk_leaves_the_store_unchanged() {
    let env = Env::new();
    std::fs::create_dir_all(env.path("tiny-store")).unwrap();

    // More than the disk holds: refused before staging, with both numbers.
    let mut big = Kit::new();
    big.model_file("acme/big", "big.bin", &vec![7u8; 2 << 20]);
    let p = env.path("big.tar");
    write_tar(&p, &big.entries());
    let (out, err, status) = on_tiny_disk(&env, &p, &big.sha256());
    assert!(out.contains("rc=1"), "{out}\n{err}\n{status}");
    assert!(out.contains("not enough free space"), "{out}");
    assert!(out.contains("2097152 bytes of blobs"), "{out}");
    assert!(out.contains("store unchanged"), "{out}");

    // Small enough by bytes, but 400 files take a page each: the disk
    // fills while staging.
    let mut many = Kit::new();
    for i in 0..400 {
        many.model_file("acme/many", &format!("f{i}"), format!("{i}").as_bytes());
    }
    let p = env.path("many.tar");
    write_tar(&p, &many.entries());
    let (out, err, status) = on_tiny_disk(&env, &p, &many.sha256());
    assert!(out.contains("rc=1"), "{out}\n{err}\n{status}");
    assert!(out.contains("the disk filled up while writing"), "{out}");
    assert!(out.contains("the store is unchanged"), "{out}");
    assert!(out.contains("store unchanged"), "{out}");
}

#[test]
fn more_refusals_each_named() {
    let env = Env::new();
    let kit = good_kit(&env.key);
    let sha = kit.sha256();
    let good = kit.entries();

    // A manifest entry claiming more than the limit is refused unread.
    let mut e = good.clone();
    if let Entry::File { size, .. } = &mut e[0] {
        *size = Some(65 << 20);
    }
    let p = env.path("huge-manifest.tar");
    let mut bytes = tar_bytes(&e[..1]);
    bytes.truncate(1024);
    std::fs::write(&p, &bytes).unwrap();
    env.refuse(
        "huge manifest",
        &p,
        &sha,
        &["manifest.json is 68157440 bytes; at most 67108864"],
    );

    // The manifest as a symlink; an empty bundle; a name that is not UTF-8.
    env.refuse_entries(
        "manifest symlink",
        &[Entry::Symlink("manifest.json".into(), "/etc/passwd".into())],
        &sha,
        &["manifest.json is a symbolic link"],
    );
    let p = env.path("empty.tar");
    std::fs::write(&p, [0u8; 1024]).unwrap();
    env.refuse("empty", &p, &sha, &["is empty: expected manifest.json"]);
    let mut raw = tar_bytes(&good);
    let idx = (0..raw.len() - 512)
        .step_by(512)
        .rfind(|&o| raw[o..o + 13] == *b"blobs/sha256/")
        .unwrap();
    raw[idx + 13] = 0xff;
    let mut h = tar::Header::new_old();
    h.as_mut_bytes().copy_from_slice(&raw[idx..idx + 512]);
    h.set_cksum();
    raw[idx..idx + 512].copy_from_slice(h.as_bytes());
    let p = env.path("latin1.tar");
    std::fs::write(&p, &raw).unwrap();
    env.refuse("not utf-8", &p, &sha, &["an entry name is not UTF-8"]);

    // The manifest names the wrong signer (signed by a trusted key).
    let mut k = good_kit(&env.key);
    k.manifest.releases[0].signature.as_mut().unwrap().key_id = "ABCDEF".into();
    env.refuse_entries(
        "claimed key",
        &k.entries(),
        &k.sha256(),
        &[&format!(
            "signed by key {}, but the manifest says key ABCDEF",
            env.key.id
        )],
    );

    // A signed SHA256SUMS that is not a checksum file.
    let assets: &[(&str, &[u8])] = &[("llmgw-linux-amd64.tar.gz", b"x")];
    let sums = b"this is not a checksum file\n";
    let mut k = Kit::new();
    k.llmgw_release_with(assets, sums, &env.key.sign(sums), &env.key.id);
    env.refuse_entries(
        "bad sums",
        &k.entries(),
        &k.sha256(),
        &["SHA256SUMS line 1: expected `<64 hex digits>  <file name>`"],
    );

    // A signature file too big to be one is refused before it is read.
    let big_sums = vec![b'#'; 2 << 20];
    let mut k = Kit::new();
    k.llmgw_release_with(assets, &big_sums, &env.key.sign(&big_sums), &env.key.id);
    env.refuse_entries(
        "huge sums",
        &k.entries(),
        &k.sha256(),
        &["SHA256SUMS of release acme/llmgw v1.0.0 is 2097152 bytes; at most 1048576"],
    );

    // A signature that is not minisign at all.
    let mut k = Kit::new();
    k.llmgw_release_with(
        assets,
        sums,
        b"untrusted comment: x\nnot base64\n",
        &env.key.id,
    );
    env.refuse_entries(
        "garbage signature",
        &k.entries(),
        &k.sha256(),
        &["SHA256SUMS.minisig is not a minisign signature"],
    );
}

/// Running an import again repairs what it would have written: a blob or a
/// held manifest damaged since.
#[test]
fn importing_again_repairs_a_damaged_manifest_or_a_lost_blob() {
    let env = Env::new();
    let kit = good_kit(&env.key);
    let sha = kit.sha256();
    let p = env.path("b.tar");
    write_tar(&p, &kit.entries());
    assert!(env.import(&p, &sha).status.success());
    let held = env.store.join(format!("bundles/{sha}.json"));
    std::fs::write(&held, b"{}").unwrap();
    let msha = model_sha(&kit);
    let blob = env.store.join("blobs/sha256").join(&msha[..2]).join(&msha);
    std::fs::remove_file(&blob).unwrap();
    let o = env.import(&p, &sha);
    assert!(o.status.success(), "{}", stderr(&o));
    assert!(stdout(&o).starts_with("imported bundle"), "{}", stdout(&o));
    assert_eq!(std::fs::read(&held).unwrap(), kit.manifest_bytes());
    assert!(blob.exists());
    let o = env.import(&p, &sha);
    assert!(stdout(&o).contains("already imported"), "{}", stdout(&o));
}
