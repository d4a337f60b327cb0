//! The Hub's `xetHash` recorded (#48): a fixture Hub that lists each LFS
//! file's Xet hash, as the Hub does for the files it stores in Xet. Create
//! records it (format 6), import checks it against the hash of the bytes,
//! and the mirror serves each file under it (`X-Xet-Hash`). A bundle whose
//! recorded hash is not its bytes' is refused naming the file, and the
//! store is left as it was.

use super::common::*;
use crate::bundle_kit::{Server, import_bundle, snapshot};
use llmgw_fixture::FixtureOptions;

/// `X-Xet-Hash` of a file of acme/tiny at main, as the mirror answers HEAD.
fn served_xet_hash(server: &Server, path: &str) -> String {
    let o = std::process::Command::new("curl")
        .args(["-sI"])
        .arg(format!("{}/acme/tiny/resolve/main/{path}", server.url))
        .output()
        .expect("curl");
    let head = String::from_utf8_lossy(&o.stdout).to_ascii_lowercase();
    head.lines()
        .find_map(|l| l.strip_prefix("x-xet-hash:"))
        .map(|v| v.trim().to_string())
        .unwrap_or_else(|| panic!("no X-Xet-Hash for {path}: {head}"))
}

#[test]
fn the_hubs_xet_hash_is_recorded_checked_at_import_and_served_under() {
    let fx = fixture_with(FixtureOptions {
        xet_hashes: true,
        ..FixtureOptions::default()
    });
    let tmp = tempfile::tempdir().unwrap();
    let out = tmp.path().join("b");
    let mut c = create(&fx, tmp.path());
    c.args(["--arch", "amd64", "--model", "acme/tiny@main"])
        .arg("--out")
        .arg(&out);
    ok(&run(&mut c));
    let mut m = manifest_of_dir(&out);
    assert_eq!(m.format_version, llmgw_shared::manifest::FORMAT_XET);
    let files = &m.repos[0].files;
    let lfs: Vec<_> = files.iter().filter(|f| f.lfs).collect();
    assert!(lfs.len() >= 2, "{files:?}");
    assert!(lfs.iter().all(|f| f.xet_hash.is_some()), "{files:?}");
    assert!(
        files
            .iter()
            .filter(|f| !f.lfs)
            .all(|f| f.xet_hash.is_none())
    );

    let manifest_path = out.join("manifest.json");
    let sha = sha256_file(&manifest_path);
    let store = tmp.path().join("store");
    ok(&import_bundle(&out, &sha, &store, &[]));
    let server = Server::start(&store);
    for f in &lfs {
        let recorded = f.xet_hash.as_ref().unwrap().to_string();
        assert_eq!(served_xet_hash(&server, &f.path), recorded, "{}", f.path);
    }
    drop(server);

    // The recorded hash of one file swapped for another's: the Hub's
    // listing and the bytes disagree. Refused before anything is stored.
    let (a, b) = (lfs[0].path.clone(), lfs[1].xet_hash.clone());
    let i = files.iter().position(|f| f.path == a).unwrap();
    let wrong = b.as_ref().unwrap().to_string();
    m.repos[0].files[i].xet_hash = b;
    let bytes = m.to_canonical_json();
    std::fs::remove_file(&manifest_path).unwrap();
    std::fs::write(&manifest_path, &bytes).unwrap();
    let sha = llmgw_shared::Sha256::of(&bytes).to_string();
    let fresh = tmp.path().join("fresh");
    std::fs::create_dir(&fresh).unwrap();
    let before = snapshot(&fresh);
    let err = fails(&import_bundle(&out, &sha, &fresh, &[]), 1);
    assert!(
        err.contains(&format!(
            "file {a}: the bundle records the Hub's Xet hash {wrong}"
        )) && err.contains("Nothing was added to the store"),
        "{err}"
    );
    let after = snapshot(&fresh);
    // The store made for the import, but no file in it: no blob, no
    // bundle, no record.
    let files_after: Vec<_> = after
        .iter()
        .filter(|(k, v)| *v != "dir" && *k != "lock")
        .collect();
    assert!(files_after.is_empty(), "{before:?} -> {after:?}");
}
