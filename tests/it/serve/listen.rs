//! `mirror serve` on what `--store` may point at, and `--listen` by name:
//! a missing, unreadable or non-store path refuses to start (exit 1, the
//! reason, nothing created); an empty store starts and says so on stderr
//! and in /readyz.

use std::process::Child;

use crate::bundle_kit::{serve_args, spawn_serve};
use crate::cli::common::*;

/// `mirror serve` that must refuse to start.
fn serve_refused(store: &std::path::Path, expect: &[&str]) -> String {
    let o = serve_args(&mut llmgw(), "127.0.0.1:0", store.as_os_str())
        .output()
        .unwrap();
    assert!(o.stdout.is_empty(), "{}", stdout(&o));
    refused(&o, 1, expect, &["being read"])
}

/// A running `mirror serve`, stopped when dropped; its URL from stdout.
struct Serving {
    child: Child,
    url: String,
    stderr: std::path::PathBuf,
}

impl Drop for Serving {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

fn serve(store: &std::path::Path, listen: &str, log: &std::path::Path) -> Serving {
    let mut cmd = llmgw();
    serve_args(&mut cmd, listen, store.as_os_str());
    let (child, url) = spawn_serve(cmd.stderr(std::fs::File::create(log).unwrap()));
    assert!(url.starts_with("http://127.0.0.1:"), "{url}");
    Serving {
        child,
        url,
        stderr: log.to_path_buf(),
    }
}

fn readyz(url: &str) -> (u16, String) {
    let o = std::process::Command::new("curl")
        .args(["-s", "-w", "\n%{http_code}", &format!("{url}/readyz")])
        .output()
        .unwrap();
    let text = stdout(&o);
    let (body, code) = text.rsplit_once('\n').unwrap();
    (code.parse().unwrap(), body.to_string())
}

#[test]
fn a_missing_or_unreadable_path_or_one_that_is_no_store_refuses_to_start() {
    let d = tempfile::tempdir().unwrap();
    let before = snapshot(d.path());

    // A mistyped path: refused, and not created.
    let missing = d.path().join("mirorr/store");
    serve_refused(&missing, &["does not exist", "--store"]);
    assert_eq!(snapshot(d.path()), before);

    // A file.
    let file = d.path().join("file");
    std::fs::write(&file, b"x").unwrap();
    serve_refused(&file, &["is not a folder"]);

    // A folder of other things: a bundle folder, which import takes.
    let bundle = d.path().join("bundle");
    std::fs::create_dir_all(bundle.join("blobs/sha256")).unwrap();
    std::fs::write(bundle.join("manifest.json"), b"{}").unwrap();
    let err = serve_refused(
        &bundle,
        &[
            "is not a mirror store",
            "\"manifest.json\"",
            "llmgw bundle import",
        ],
    );
    assert_eq!(err.lines().count(), 1, "{err}");

    // A store whose bundles/ cannot be read (a file where the folder goes,
    // which even root cannot list).
    let broken = d.path().join("broken");
    std::fs::create_dir_all(broken.join("blobs")).unwrap();
    std::fs::write(broken.join("bundles"), b"not a folder").unwrap();
    serve_refused(
        &broken,
        &["cannot read the store", "bundles", "Not a directory"],
    );
    assert!(!d.path().join("mirorr").exists());
}

#[test]
fn an_empty_store_starts_and_says_so_and_listen_takes_a_host_name() {
    let d = tempfile::tempdir().unwrap();
    let store = d.path().join("store");
    std::fs::create_dir(&store).unwrap();
    let srv = serve(&store, "localhost:0", &d.path().join("serve.log"));
    let (code, body) = readyz(&srv.url);
    assert_eq!(code, 200, "{body}");
    assert!(
        body.contains("holds no bundles yet") && body.contains("llmgw bundle import"),
        "{body}"
    );
    let log = std::fs::read_to_string(&srv.stderr).unwrap();
    assert!(log.contains("holds no bundles yet"), "{log}");
    assert!(
        log.contains(&format!("--store {}", store.display())),
        "{log}"
    );
    // Nothing was written into it.
    assert_eq!(snapshot(&store).len(), 0);
    drop(srv);

    // A store with a bundle: ready, counting it.
    let fx = fixture();
    let (bundle, sha) = signed_release_bundle(&fx, d.path(), "b.tar");
    let held = d.path().join("held");
    ok(&run(&[
        "bundle",
        "trust",
        "add",
        s(fx.trust_key_path()),
        "--store",
        s(&held),
    ]));
    ok(&import_bundle(&bundle, s(&sha), &held, &[]));
    let srv = serve(&held, "127.0.0.1:0", &d.path().join("serve2.log"));
    assert_eq!(readyz(&srv.url), (200, "ready: 1 bundle\n".to_string()));
    let log = std::fs::read_to_string(&srv.stderr).unwrap();
    assert!(!log.contains("no bundles"), "{log}");
}

#[test]
fn listen_without_a_port_or_with_an_unknown_host_says_to_give_an_address() {
    let d = tempfile::tempdir().unwrap();
    for (listen, expect) in [
        ("localhost", "has no port"),
        (
            "nosuchhost.invalid:8080",
            "cannot resolve \"nosuchhost.invalid\"",
        ),
        (":8080", "is not an address and port"),
    ] {
        let o = run(&[
            "mirror",
            "serve",
            "--store",
            s(d.path()),
            "--listen",
            listen,
        ]);
        refused(&o, 2, &[expect, "give ADDRESS:PORT", "127.0.0.1:8080"], &[]);
    }
}
