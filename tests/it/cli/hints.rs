//! Refusals that say what to do in the words of the command at hand:
//! a key create or verify does not trust (`--trust KEY.pub`), a key import
//! does not (`bundle trust add`), an upstream that cannot be reached, a
//! `.tar.zst` cut short, a mistyped `--store`, and Ctrl-C during create.

use std::process::Stdio;
use std::time::{Duration, Instant};

use llmgw_fixture::TINY_COMMIT;

use super::common::*;

#[test]
fn a_key_mismatch_names_the_fix_of_each_command() {
    let fx = fixture();
    let d = tempfile::tempdir().unwrap();

    // create, told to trust another key than the release's.
    let out = d.path().join("k.tar.zst");
    let o = create(&fx, d.path())
        .args(["--llmgw", "v0.5.0", "--llmgw-api"])
        .arg(fx.llmgw_api_url())
        .arg("--trust")
        .arg(fx.other_key_path())
        .args(["--engine", "llamacpp=b6123", "--out"])
        .arg(&out)
        .output()
        .unwrap();
    refused(
        &o,
        1,
        &["not trusted here", "--trust KEY.pub"],
        &["trust add"],
    );
    let left: Vec<_> = snapshot(d.path())
        .into_keys()
        .filter(|p| !p.starts_with("cache"))
        .collect();
    assert!(left.is_empty(), "create left {left:?}");

    // verify, with the wrong key.
    let (bundle, sha) = signed_release_bundle(&fx, d.path(), "b.tar.zst");
    let o = run(&[
        "bundle",
        "verify",
        s(&bundle),
        "--sha256",
        s(&sha),
        "--trust",
        s(fx.other_key_path()),
    ]);
    refused(
        &o,
        1,
        &["not trusted here", "--trust KEY.pub"],
        &["trust add"],
    );

    // import, into a store that trusts no key: the store command.
    let store = d.path().join("store");
    ok(&run(&[
        "bundle",
        "trust",
        "add",
        s(fx.other_key_path()),
        "--store",
        s(&store),
    ]));
    let before = snapshot(&store);
    let o = import_bundle(&bundle, s(&sha), &store, &[]);
    refused(
        &o,
        1,
        &[
            "not trusted here",
            &format!("llmgw bundle trust add KEY.pub --store {}", store.display()),
        ],
        &["--trust KEY.pub"],
    );
    assert_eq!(snapshot(&store), before, "the store changed");
}

#[test]
fn an_unreachable_upstream_is_named_once_with_the_retries_and_what_to_check() {
    let d = tempfile::tempdir().unwrap();
    // A port nothing listens on.
    let port = std::net::TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap()
        .port();
    let api = format!("http://127.0.0.1:{port}");
    let out = d.path().join("u.tar");
    let o = llmgw()
        .args([
            "bundle",
            "create",
            "--arch",
            "amd64",
            "--engine",
            "llamacpp=b6123",
        ])
        .args([
            "--github-api",
            &api,
            "--cache",
            s(&d.path().join("cache")),
            "--out",
            s(&out),
        ])
        .env("RUST_LOG", "warn")
        .output()
        .unwrap();
    let err = refused(
        &o,
        1,
        &[
            &format!("{api}/repos/ggml-org/llama.cpp/releases/tags/b6123: cannot connect"),
            "connection refused",
            "check the URL, DNS",
            "proxy",
        ],
        &[
            "error sending request",
            "client error",
            "os error",
            "tcp connect",
        ],
    );
    let last = err.lines().last().unwrap();
    assert_eq!(last.matches(&api).count(), 1, "{last}");
    // A refused connection is not tried again (#53 item 2): nothing
    // listens there, and eight tries only delayed the hint.
    assert!(!last.contains("tried"), "{last}");
    assert!(!out.exists());
}

#[test]
fn a_cut_short_tar_zst_says_copy_it_again_and_a_mistyped_store_is_not_left() {
    let fx = fixture();
    let d = tempfile::tempdir().unwrap();
    let (bundle, sha) = signed_release_bundle(&fx, d.path(), "b.tar.zst");
    let bytes = std::fs::read(&bundle).unwrap();
    let cut = d.path().join("cut.tar.zst");
    for len in [bytes.len() - 100, bytes.len() / 2, 3000] {
        std::fs::write(&cut, &bytes[..len]).unwrap();
        // The release's key trusted, so the cut is what is found whatever
        // the order of the blobs (the SBOM's digest changes with the time).
        let key = fx.trust_key_path();
        let o = run(&[
            "bundle",
            "verify",
            s(&cut),
            "--sha256",
            s(&sha),
            "--trust",
            s(key),
        ]);
        refused(
            &o,
            1,
            &["damaged or incomplete", "copy the file again"],
            &["frame", "zstd:"],
        );
        // Into a store path that does not exist yet: refused, and the
        // folders import made for it are gone again.
        let typo = d.path().join("srv/mirorr");
        let o = import_bundle(&cut, s(&sha), &typo, &[]);
        refused(
            &o,
            1,
            &[
                "damaged or incomplete",
                &format!("removed {}", d.path().join("srv").display()),
            ],
            &["frame"],
        );
        assert!(
            !d.path().join("srv").exists(),
            "len {len}: the typo's store was left"
        );
    }
    // An existing store is never removed, even empty.
    let store = d.path().join("store");
    std::fs::create_dir(&store).unwrap();
    let o = import_bundle(&cut, s(&sha), &store, &[]);
    refused(&o, 1, &["damaged or incomplete"], &["removed"]);
    assert!(store.join("bundles").is_dir());
    // trust add of a file that is no key, into a new store: nothing left.
    let typo = d.path().join("new-store");
    let o = run(&["bundle", "trust", "add", s(&cut), "--store", s(&typo)]);
    refused(&o, 1, &["is not a minisign public key"], &[]);
    assert!(!typo.exists());
}

#[test]
fn ctrl_c_during_create_says_how_to_resume_and_the_resumed_counts_add_up() {
    let fx = fixture();
    let d = tempfile::tempdir().unwrap();
    let path = format!("/acme/tiny/resolve/{TINY_COMMIT}/model.safetensors");
    // The big file's body is cut after 100000 bytes and every answer waits
    // 2 s: the run sits in its retry with that much written.
    fx.faults().cut_once(&path, 100_000);
    fx.faults().delay(&path, 2000);
    let out = d.path().join("b.tar");
    let partial = d.path().join(".b.tar.partial");
    let child = create(&fx, d.path())
        .args(["--model", "acme/tiny", "--out", s(&out)])
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let start = Instant::now();
    while std::fs::metadata(&partial).map_or(0, |m| m.len()) < 100_000 {
        assert!(
            start.elapsed() < Duration::from_secs(30),
            "no partial bundle"
        );
        std::thread::sleep(Duration::from_millis(20));
    }
    // SAFETY: sends SIGINT to the child this test started.
    let rc = unsafe { libc::kill(child.id() as libc::pid_t, libc::SIGINT) };
    assert_eq!(rc, 0);
    let o = child.wait_with_output().unwrap();
    refused(
        &o,
        130,
        &[
            "stopped; run the same command again to resume",
            &format!("what was written so far is in {}", partial.display()),
        ],
        &[],
    );
    assert!(o.stdout.is_empty());
    assert!(!out.exists() && partial.is_file());

    fx.faults().clear();
    let report = ok(&create(&fx, d.path())
        .args(["--model", "acme/tiny", "--json", "--out", s(&out)])
        .output()
        .unwrap());
    let report: serde_json::Value = serde_json::from_str(&report).unwrap();
    let total = report["bytes"].as_u64().unwrap();
    let fetched = report["bytes_downloaded"].as_u64().unwrap();
    let reused = report["bytes_reused"].as_u64().unwrap();
    assert!(reused >= 100_000, "{report}");
    // The SBOM (#33) is made here: neither downloaded nor reused.
    let head = std::process::Command::new("tar")
        .arg("-xOf")
        .arg(&out)
        .arg("manifest.json")
        .output()
        .unwrap();
    let m = llmgw_shared::manifest::Manifest::from_json_bytes(&head.stdout).unwrap();
    let made = m.evidence.map_or(0, |e| e.sbom.size);
    assert_eq!(fetched + reused + made, total, "{report}");
    assert!(out.is_file() && !partial.exists());
}
