//! What a branch names follows the order bundles were imported in — the
//! trusted state of this store — never the `created` date a bundle claims.

use crate::signed_store::*;

fn commit_of(server: &Server, path: &str) -> String {
    let body = server.wait_for(path, 200);
    let v: serde_json::Value = serde_json::from_slice(&body).unwrap();
    v["sha"].as_str().unwrap().to_string()
}

/// Waits until the server's `main` is `commit`.
fn wait_main(server: &Server, commit: &str) {
    for _ in 0..100 {
        if commit_of(server, "/api/models/acme/tiny/revision/main") == commit {
            assert_eq!(commit_of(server, "/api/models/acme/tiny"), commit);
            return;
        }
        std::thread::sleep(std::time::Duration::from_millis(100));
    }
    panic!("main never became {commit}");
}

fn at_commit(commit: &str, created: &str, file: &[u8]) -> Kit {
    let mut k = Kit::new();
    k.model_file("acme/tiny", "model.gguf", file);
    k.manifest.repos[0].commit = commit.into();
    k.manifest.created = created.into();
    k
}

/// The probe's case: a bundle dated 9999-12-31 took `main` over. Here the
/// far-future bundle is imported first and a bundle dated 2020 after it:
/// `main` is the 2020 bundle's commit. Removing the future bundle and
/// importing it again makes it the latest import, and `main` follows —
/// without a restart.
#[test]
fn main_follows_import_order_not_the_claimed_date() {
    let env = Env::empty();
    let future = at_commit(&"f".repeat(40), "9999-12-31T23:59:59Z", b"future weights");
    let past = at_commit(&"1".repeat(40), "2020-01-01T00:00:00Z", b"past weights");
    env.import_kit("future", &future);
    env.import_kit("past", &past);
    let server = Server::start(&env.store);
    wait_main(&server, &"1".repeat(40));

    let o = run(&[
        "mirror",
        "remove",
        &future.sha256(),
        "--store",
        s(&env.store),
    ]);
    assert!(o.status.success(), "{}", stderr(&o));
    env.import_kit("future again", &future);
    wait_main(&server, &"f".repeat(40));

    // The order is kept in the store's state, not in the bundles.
    let state: serde_json::Value =
        serde_json::from_slice(&std::fs::read(env.store.join("state/imports.json")).unwrap())
            .unwrap();
    let n = |id: &str| state["bundles"][id].as_u64().unwrap();
    assert!(n(&future.sha256()) > n(&past.sha256()), "{state}");
    // `mirror list` shows the bundles in import order too.
    let o = run(&["mirror", "list", "--store", s(&env.store)]);
    let out = stdout(&o);
    let (p, f) = (
        out.find(&past.sha256()).unwrap(),
        out.find(&future.sha256()).unwrap(),
    );
    assert!(p < f, "{out}");
}

/// A store made before the import order was kept: no state file. Its
/// bundles are ordered by the time import wrote their manifests, and the
/// first import after freezes that order.
#[test]
fn an_old_store_falls_back_to_manifest_file_times() {
    let env = Env::empty();
    let future = at_commit(&"f".repeat(40), "9999-12-31T23:59:59Z", b"future weights");
    let past = at_commit(&"1".repeat(40), "2020-01-01T00:00:00Z", b"past weights");
    env.import_kit("future", &future);
    std::thread::sleep(std::time::Duration::from_millis(50));
    env.import_kit("past", &past);
    std::fs::remove_file(env.store.join("state/imports.json")).unwrap();
    let server = Server::start(&env.store);
    wait_main(&server, &"1".repeat(40));
    drop(server);
    let mut other = Kit::new();
    other.model_file("acme/other", "x.bin", b"x");
    env.import_kit("other", &other);
    let state: serde_json::Value =
        serde_json::from_slice(&std::fs::read(env.store.join("state/imports.json")).unwrap())
            .unwrap();
    let n = |id: &str| state["bundles"][id].as_u64().unwrap();
    assert!(n(&future.sha256()) < n(&past.sha256()), "{state}");
    assert!(n(&past.sha256()) < n(&other.sha256()), "{state}");
}
