//! The store under damage and interruption: a repaired manifest is served
//! without a restart, one damaged manifest does not hide the rest, a failed
//! commit leaves nothing behind, verify never reports a concurrent gc as
//! damage, and blobs an interrupted commit left are named.

use crate::signed_store::*;

fn model_kit(name: &str, body: &[u8]) -> Kit {
    let mut k = Kit::new();
    k.model_file("acme/tiny", name, body);
    k
}

/// The probe's case: a damaged manifest is skipped by the server; the same
/// import run again repairs it, and the server serves it at once — the
/// set of bundle ids never changed, but the manifest's file did.
#[test]
fn a_repaired_manifest_is_served_without_a_restart() {
    let env = Env::empty();
    let kit = model_kit("model.gguf", b"weights");
    let id = env.import_kit("model", &kit);
    let held = env.store.join(format!("bundles/{id}.json"));
    let path = "/acme/tiny/resolve/main/model.gguf";

    let server = Server::start(&env.store);
    assert_eq!(server.wait_for(path, 200), b"weights");
    std::fs::write(&held, b"{\"damaged\": true}").unwrap();
    server.wait_for(path, 404);
    env.import_kit("model again", &kit);
    assert_eq!(server.wait_for(path, 200), b"weights");
    drop(server);

    // Damaged before the server starts, repaired while it runs.
    std::fs::write(&held, b"{}").unwrap();
    let server = Server::start(&env.store);
    server.wait_for(path, 404);
    env.import_kit("model once more", &kit);
    assert_eq!(server.wait_for(path, 200), b"weights");
}

/// One damaged manifest: `mirror list` still lists the others, names the
/// damaged one on stderr and exits 1.
#[test]
fn list_shows_the_rest_and_names_a_damaged_manifest() {
    let env = Env::new();
    let kit = model_kit("model.gguf", b"weights");
    let id = env.import_kit("model", &kit);
    std::fs::write(env.store.join(format!("bundles/{id}.json")), b"not json").unwrap();
    let o = run(&["mirror", "list", "--store", s(&env.store)]);
    assert_eq!(o.status.code(), Some(1), "{}", stderr(&o));
    assert!(
        stdout(&o).contains(&format!("bundle {}", env.signed_id)),
        "{}",
        stdout(&o)
    );
    assert!(stdout(&o).contains("1 bundle held"), "{}", stdout(&o));
    let err = stderr(&o);
    assert!(err.contains(&format!("DAMAGED bundle {id}")), "{err}");
    assert!(err.contains("import each again to repair it"), "{err}");
    let o = run(&["mirror", "list", "--store", s(&env.store), "--json"]);
    let v: serde_json::Value = serde_json::from_slice(&o.stdout).unwrap();
    assert_eq!(v.as_array().unwrap().len(), 1, "{v}");
}

/// A commit that fails at its last step (here: something is in the way of
/// the manifest's name) takes back every blob, folder and import number it
/// added: the store is exactly as before, with no empty `blobs/sha256/xx/`.
#[test]
fn a_failed_commit_leaves_no_empty_folders() {
    let env = Env::new();
    let kit = model_kit("model.gguf", b"weights for a commit that fails");
    let sha = llmgw_shared::sha256_hex(b"weights for a commit that fails");
    let fan = env.store.join("blobs/sha256").join(&sha[..2]);
    assert!(!fan.exists(), "pick other bytes: {} is taken", &sha[..2]);
    let in_the_way = env.store.join(format!("bundles/{}.json", kit.sha256()));
    std::fs::create_dir_all(in_the_way.join("x")).unwrap();
    let p = env.path("fails.tar");
    write_tar(&p, &kit.entries());
    env.refuse(
        "failed commit",
        &p,
        &kit.sha256(),
        &[
            "the bundle verified, but adding it to the store failed",
            "the store was left as before",
        ],
    );
    assert!(!fan.exists());
}

/// `mirror verify` holds the store lock shared: while a writer holds it,
/// verify says so instead of reporting blobs gc removes as damage.
#[test]
fn verify_waits_for_no_writer() {
    use std::os::unix::io::AsRawFd;
    let env = Env::new();
    let lock = std::fs::File::open(env.store.join("lock")).unwrap();
    assert_eq!(unsafe { libc::flock(lock.as_raw_fd(), libc::LOCK_EX) }, 0);
    let o = run(&["mirror", "verify", "--store", s(&env.store)]);
    assert_eq!(o.status.code(), Some(1));
    assert!(stderr(&o).contains("the store is busy"), "{}", stderr(&o));
    assert!(stderr(&o).contains("mirror verify"), "{}", stderr(&o));
    drop(lock);
    let o = run(&["mirror", "verify", "--store", s(&env.store)]);
    assert!(o.status.success(), "{}", stdout(&o));
}

/// An import killed after renaming blobs into `blobs/` and before writing
/// its manifest leaves verified blobs no manifest names (this sets up that
/// state on disk). They are never served; `mirror verify` names them as
/// unreferenced (not damage); running the import again uses them; `gc`
/// names and removes what stays unreferenced.
#[test]
fn blobs_an_interrupted_commit_left_are_named() {
    let env = Env::new();
    let kit = model_kit("model.gguf", b"weights of an interrupted commit");
    let sha = llmgw_shared::sha256_hex(b"weights of an interrupted commit");
    let blob = env.store.join("blobs/sha256").join(&sha[..2]).join(&sha);
    std::fs::create_dir_all(blob.parent().unwrap()).unwrap();
    std::fs::write(&blob, b"weights of an interrupted commit").unwrap();

    let server = Server::start(&env.store);
    let (code, _) = server.get("/acme/tiny/resolve/main/model.gguf");
    assert_eq!(code, 404);
    drop(server);

    let o = run(&["mirror", "verify", "--store", s(&env.store)]);
    assert!(o.status.success(), "{}", stdout(&o));
    assert!(
        stdout(&o).contains(&format!("UNREFERENCED {}", blob.display())),
        "{}",
        stdout(&o)
    );
    let o = run(&["mirror", "gc", "--store", s(&env.store), "--dry-run"]);
    assert!(
        stdout(&o).contains(&format!("would remove {}", blob.display())),
        "{}",
        stdout(&o)
    );

    let p = env.path("again.tar");
    write_tar(&p, &kit.entries());
    let o = import_bundle(&p, &kit.sha256(), &env.store, &["--json"]);
    assert!(o.status.success(), "{}", stderr(&o));
    let v: serde_json::Value = serde_json::from_slice(&o.stdout).unwrap();
    assert_eq!(v["blobs_reused"], 1, "{v}");
    let o = run(&["mirror", "verify", "--store", s(&env.store)]);
    assert!(!stdout(&o).contains("UNREFERENCED"), "{}", stdout(&o));
}

/// A tmpfs mounted for one test, unmounted when dropped (even on a panic).
struct Tmpfs(std::path::PathBuf);

impl Tmpfs {
    fn mount(at: &std::path::Path, size: &str) -> Self {
        std::fs::create_dir_all(at).unwrap();
        let o = std::process::Command::new("mount")
            .args(["-t", "tmpfs", "-o", &format!("size={size}"), "tmpfs", s(at)])
            .output()
            .unwrap();
        assert!(
            o.status.success(),
            "mount -t tmpfs (the tests run as root): {}",
            stderr(&o)
        );
        Self(at.to_path_buf())
    }

    /// Bytes free, from `df` (what import's own check sees too).
    fn available(&self) -> u64 {
        let o = std::process::Command::new("df")
            .args(["-B1", "--output=avail", s(&self.0)])
            .output()
            .unwrap();
        stdout(&o).lines().nth(1).unwrap().trim().parse().unwrap()
    }
}

impl Drop for Tmpfs {
    fn drop(&mut self) {
        let _ = std::process::Command::new("umount").arg(&self.0).status();
    }
}

/// The disk fills just before the commit (#28 item 5): the new bundle's
/// blobs are all held already, and the disk is full, so writing the import
/// order fails, and so does putting it back. The import is refused naming
/// the file and the full disk, and "the store was left as before" is
/// exactly true: nothing of the state write is left in `STORE/tmp/`, and
/// with room again the import goes through and is served.
#[test]
fn a_disk_that_fills_before_the_commit_leaves_the_store_as_it_was() {
    let dir = tempfile::tempdir().unwrap();
    let fs = Tmpfs::mount(&dir.path().join("disk"), "4m");
    let store = fs.0.join("store");
    let first = model_kit("a.bin", b"weights");
    let p = dir.path().join("first.tar");
    write_tar(&p, &first.entries());
    let o = import_bundle(&p, &first.sha256(), &store, &[]);
    assert!(o.status.success(), "{}", stderr(&o));

    let second = model_kit("b.bin", b"weights");
    let p = dir.path().join("second.tar");
    write_tar(&p, &second.entries());
    let filler = fs.available();
    std::fs::write(fs.0.join("filler"), vec![0u8; filler as usize]).unwrap();
    assert_eq!(fs.available(), 0);
    let err = assert_refused("disk full at commit", &store, &["No space left"], || {
        import_bundle(&p, &second.sha256(), &store, &[])
    });
    assert!(
        err.contains("imports.json") && err.contains("the store was left as before"),
        "{err}"
    );

    // With room again, the same import goes through.
    std::fs::remove_file(fs.0.join("filler")).unwrap();
    let o = import_bundle(&p, &second.sha256(), &store, &[]);
    assert!(o.status.success(), "{}", stderr(&o));
    let server = Server::start(&store);
    assert_eq!(
        server.wait_for("/acme/tiny/resolve/main/b.bin", 200),
        b"weights"
    );
    assert_eq!(
        server.wait_for("/acme/tiny/resolve/main/a.bin", 200),
        b"weights"
    );
}
