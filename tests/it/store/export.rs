//! `llmgw mirror export` (#50): a held bundle written again for the next
//! enclave. The manifest's bytes, signature, channel and sequence are the
//! ones carried, so a second store that trusts the same site key imports
//! the export exactly as the first store imported the original (its series
//! at the same sequence). A bundle whose blobs the store lacks or holds
//! damaged is refused by name, and nothing is left at `--out`. The cascade
//! keeps the series rules: an older export after a newer one is a rollback.

use std::process::{Command, Stdio};

use crate::signed_store::*;

/// A site key made by the real minisign CLI in `env`'s folder, trusted for
/// bundles by `store`.
fn trust_site_key(env: &Env, store: &std::path::Path) {
    if !env.path("site.key").exists() {
        let o = Command::new("minisign")
            .args(["-G", "-W", "-p", "site.pub", "-s", "site.key"])
            .current_dir(&env.root)
            .stdin(Stdio::null())
            .output()
            .unwrap_or_else(|e| panic!("minisign not runnable ({e}): run scripts/setup.sh"));
        assert!(o.status.success(), "{}", stderr(&o));
    }
    ok(&llmgw()
        .args(["bundle", "trust", "add", s(&env.path("site.pub"))])
        .args(["--role", "bundle", "--store", s(store)])
        .output()
        .unwrap());
}

/// The next enclave's store at `next`: it trusts the site's key and
/// requires every bundle signed.
fn next_enclave(env: &Env, next: &std::path::Path) {
    trust_site_key(env, next);
    ok(&run(&[
        "mirror",
        "policy",
        "require-signature",
        "on",
        "--store",
        s(next),
    ]));
}

fn export(store: &std::path::Path, id: &str, out: &std::path::Path) -> std::process::Output {
    llmgw()
        .args(["mirror", "export", id, "--store", s(store), "--out", s(out)])
        .output()
        .unwrap()
}

#[test]
fn an_exported_bundle_imports_elsewhere_as_the_original_did() {
    let env = Env::new();
    trust_site_key(&env, &env.store);
    let id = signed_bundle(&env, "original", 7, ("w.bin", b"weights of the model"));
    let series = |store: &std::path::Path| -> String {
        std::fs::read_to_string(store.join("state/series.json")).unwrap()
    };
    assert!(
        series(&env.store).contains("\"stable\""),
        "{}",
        series(&env.store)
    );

    for name in ["next.tar.zst", "next.tar", "next-dir"] {
        let out = env.path(name);
        let text = ok(&export(&env.store, &id[..12], &out));
        assert!(text.contains(&format!("exported bundle {id}")), "{text}");
        let carried = std::fs::read_to_string(env.path(&format!("{name}.sha256"))).unwrap();
        assert_eq!(carried.trim(), id);
        // The next enclave: a store trusting the same keys and requiring
        // signed bundles.
        let next = env.path(&format!("store-{name}"));
        ok(&run(&[
            "bundle",
            "trust",
            "add",
            s(&env.key.write_pub(&env.root)),
            "--store",
            s(&next),
        ]));
        next_enclave(&env, &next);
        ok(&import_bundle(&out, &id, &next, &[]));
        assert!(next.join(format!("bundles/{id}.json")).exists());
        assert!(next.join(format!("bundles/{id}.json.minisig")).exists());
        assert_eq!(series(&next), series(&env.store), "{name}");
    }

    // Nothing replaced; an unknown bundle named.
    let err = fails(&export(&env.store, &id, &env.path("next.tar")), 1);
    assert!(
        err.contains("exists; export never replaces a file"),
        "{err}"
    );
    let err = fails(&export(&env.store, "ffff", &env.path("x.tar")), 1);
    assert!(
        err.contains("no bundle in the store matches \"ffff\""),
        "{err}"
    );

    // A held blob damaged (same size, other bytes): refused by name,
    // nothing at --out.
    let sha = llmgw_shared::Sha256::of(b"weights of the model").to_string();
    let blob = env.store.join(format!("blobs/sha256/{}/{sha}", &sha[..2]));
    std::fs::write(&blob, b"WEIGHTS of the model").unwrap();
    for name in ["damaged.tar", "damaged-dir"] {
        let out = env.path(name);
        let err = fails(&export(&env.store, &id, &out), 1);
        assert!(
            err.contains(&format!("blob {sha} is damaged")) && err.contains("llmgw mirror verify"),
            "{name}: {err}"
        );
        assert!(!out.exists(), "{name}");
        let partial = format!(".{name}.partial-");
        let left: Vec<_> = std::fs::read_dir(&env.root)
            .unwrap()
            .filter_map(|e| e.ok())
            .filter(|e| e.file_name().to_string_lossy().starts_with(&partial))
            .collect();
        assert!(left.is_empty(), "{name}: {left:?}");
    }
    let out = env.path("damaged.tar");
    // Gone (as after a gc): refused naming what is missing.
    std::fs::remove_file(&blob).unwrap();
    let err = fails(&export(&env.store, &id, &out), 1);
    assert!(
        err.contains("the store lacks 1 of its blobs") && err.contains(&sha),
        "{err}"
    );
    assert!(!out.exists());
}

/// `--have` (#50 item 4): the next enclave's have-list leaves out the blobs
/// it holds; the thin bundle keeps the same manifest sha256, imports there,
/// and a store without those blobs refuses it naming what it lacks.
#[test]
fn an_export_against_a_have_list_carries_only_what_the_next_enclave_lacks() {
    let env = Env::empty();
    let (a, b) = (
        b"weights held on both sides".as_slice(),
        b"weights only here".as_slice(),
    );
    let mut kit = Kit::new();
    kit.model_file("acme/two", "a.bin", a);
    kit.model_file("acme/two", "b.bin", b);
    let id = env.import_kit("two", &kit);

    // The next enclave holds `a` from another bundle, and says so.
    let next = env.path("next-store");
    let mut other = Kit::new();
    other.model_file("acme/one", "a.bin", a);
    let one = env.path("one.tar");
    write_tar(&one, &other.entries());
    ok(&import_bundle(&one, &other.sha256(), &next, &[]));
    let have = env.path("have.json");
    ok(&run(&[
        "mirror",
        "have",
        "--store",
        s(&next),
        "--out",
        s(&have),
    ]));

    let out = env.path("thin");
    let text = ok(&llmgw()
        .args(["mirror", "export", &id, "--store", s(&env.store)])
        .args(["--out", s(&out), "--have", s(&have)])
        .output()
        .unwrap());
    assert!(
        text.contains("1 blobs the have-list") && text.contains(&id),
        "{text}"
    );
    let blob = |bytes: &[u8]| {
        out.join("blobs/sha256")
            .join(llmgw_shared::Sha256::of(bytes).as_str())
    };
    assert!(
        !blob(a).exists(),
        "the blob the next enclave holds was left out"
    );
    assert!(blob(b).exists());
    assert_eq!(
        std::fs::read_to_string(env.path("thin.sha256"))
            .unwrap()
            .trim(),
        id
    );
    ok(&import_bundle(&out, &id, &next, &[]));
    assert!(next.join(format!("bundles/{id}.json")).exists());

    // A store that lacks `a` refuses it, naming the blob.
    let err = fails(&import_bundle(&out, &id, &env.path("empty-store"), &[]), 1);
    assert!(err.contains(llmgw_shared::Sha256::of(a).as_str()), "{err}");

    // A have-list that is not one is refused naming the file.
    std::fs::write(env.path("bad.json"), b"{\"kind\":\"nope\"}").unwrap();
    let err = fails(
        &llmgw()
            .args(["mirror", "export", &id, "--store", s(&env.store)])
            .args([
                "--out",
                s(&env.path("x")),
                "--have",
                s(&env.path("bad.json")),
            ])
            .output()
            .unwrap(),
        1,
    );
    assert!(
        err.contains("bad.json") && err.contains("mirror have"),
        "{err}"
    );
    assert!(!env.path("x").exists());
}

/// A signed bundle of one file of model `acme/tiny` at `sequence` of
/// channel `stable`, written at `NAME.tar` in `env` and imported into
/// `env.store`; its id.
fn signed_bundle(env: &Env, name: &str, sequence: u64, (file, bytes): (&str, &[u8])) -> String {
    let mut kit = Kit::new();
    kit.model_file("acme/tiny", file, bytes);
    kit.manifest.channel = Some("stable".into());
    kit.manifest.sequence = Some(sequence);
    let bundle = env.path(&format!("{name}.tar"));
    write_tar(&bundle, &kit.entries());
    ok(&llmgw()
        .args([
            "bundle",
            "sign",
            s(&bundle),
            "--key",
            s(&env.path("site.key")),
        ])
        .env_remove("LLMGW_SIGN_PASSWORD")
        .stdin(Stdio::null())
        .output()
        .unwrap());
    let id = kit.sha256();
    ok(&env.import(&bundle, &id));
    id
}

/// The cascade (#50): bundle → store A → export → store B, B trusting
/// only the site's key: the newer export imports at its sequence, and the
/// older one, exported after it, is refused by B as a rollback.
#[test]
fn an_older_export_is_refused_by_the_next_enclave_as_a_rollback() {
    let env = Env::new();
    trust_site_key(&env, &env.store);
    let older = signed_bundle(&env, "seven", 7, ("w-7.bin", b"weights 7"));
    let newer = signed_bundle(&env, "eight", 8, ("w-8.bin", b"weights 8"));
    let next = env.path("store-b");
    next_enclave(&env, &next);
    let (new_out, old_out) = (env.path("export-8.tar"), env.path("export-7.tar"));
    ok(&export(&env.store, &newer, &new_out));
    ok(&export(&env.store, &older, &old_out));
    ok(&import_bundle(&new_out, &newer, &next, &[]));
    let err = fails(&import_bundle(&old_out, &older, &next, &[]), 1);
    assert!(err.contains("rollback"), "{err}");
    assert!(!next.join(format!("bundles/{older}.json")).exists());
}
