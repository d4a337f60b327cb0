//! A cache filled online, then pointed at the mirror (#48): since
//! huggingface_hub 1.22 a snapshot download caches the commit's tree
//! (`trees/<commit>.json`), and with `hf_xet` a file whose cached entry has
//! a `xetHash` is fetched with no HEAD: the client asks
//! `/api/models/{repo}/xet-read-token/{commit}` and the content server it
//! names. Here the cache is filled from the fixture Hub (which lists
//! `xetHash`, plain HTTP for the file it fetched), then the same cache,
//! pointed at the mirror, fetches the rest of the snapshot over Xet.

use std::process::Command;

use crate::bundle_kit::{Server, import_bundle, ok_for as ok, venv_python};
use crate::create::common::{create, fixture_with, run, sha256_file};
use llmgw_fixture::{FixtureOptions, TINY_COMMIT};

/// `snapshot_download` of acme/tiny from `endpoint` into `hf_home`,
/// printing `path sha256` of every file it has.
fn snapshot(endpoint: &str, hf_home: &std::path::Path, xet: bool, only: Option<&str>) -> String {
    let script = r#"
import hashlib, os, sys
from huggingface_hub import snapshot_download
only = sys.argv[1] or None
p = snapshot_download("acme/tiny", allow_patterns=[only] if only else None)
for root, _, names in os.walk(p):
    for n in sorted(names):
        f = os.path.join(root, n)
        print(os.path.relpath(f, p), hashlib.sha256(open(f, "rb").read()).hexdigest())
"#;
    let mut c = Command::new(venv_python());
    c.arg("-c")
        .arg(script)
        .arg(only.unwrap_or(""))
        .env("HF_ENDPOINT", endpoint)
        .env("HF_HOME", hf_home)
        .env("HF_XET_CACHE", hf_home.join("xet"))
        .env("HF_HUB_OFFLINE", "0")
        .env_remove("HF_TOKEN");
    if xet {
        c.env_remove("HF_HUB_DISABLE_XET");
    } else {
        c.env("HF_HUB_DISABLE_XET", "1");
    }
    ok("snapshot_download", &c.output().unwrap())
}

#[test]
fn a_cache_filled_online_fetches_new_files_from_the_mirror_over_xet() {
    let fx = fixture_with(FixtureOptions {
        xet_hashes: true,
        ..FixtureOptions::default()
    });
    let d = tempfile::tempdir().unwrap();
    let bundle = d.path().join("b");
    let mut c = create(&fx, d.path());
    c.args(["--arch", "amd64", "--model", "acme/tiny@main"])
        .arg("--out")
        .arg(&bundle);
    let o = run(&mut c);
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    let store = d.path().join("store");
    let sha = sha256_file(&bundle.join("manifest.json"));
    ok("import", &import_bundle(&bundle, &sha, &store, &[]));
    let log = d.path().join("serve.log");
    let server = Server::start_logged(&store, &log);
    server.wait_for("/readyz", 200);

    // Online: one small file, the commit's tree cached with its xetHash.
    let hf_home = d.path().join("hf");
    snapshot(&fx.hf_endpoint(), &hf_home, false, Some("config.json"));
    let tree = hf_home.join(format!("hub/models--acme--tiny/trees/{TINY_COMMIT}.json"));
    let cached = std::fs::read_to_string(&tree)
        .unwrap_or_else(|e| panic!("{}: {e} (huggingface_hub caches the tree)", tree.display()));
    assert!(cached.contains("xet"), "{cached}");
    drop(fx);

    // Offline, the same cache pointed at the mirror: the rest over Xet.
    let listed = snapshot(&server.url, &hf_home, true, None);
    let log_text = std::fs::read_to_string(&log).unwrap();
    assert!(
        log_text.contains(&format!(
            "path=\"/api/models/acme/tiny/xet-read-token/{TINY_COMMIT}\""
        )) && log_text.contains("route=hub_xet_token status=200"),
        "{log_text}"
    );
    assert!(
        log_text.contains("route=xet_reconstruction status=200"),
        "{log_text}"
    );
    // From the cached tree: the mirror's tree is never listed, and no Xet
    // file is asked by HEAD or GET of resolve.
    assert!(!log_text.contains("route=hub_tree"), "{log_text}");
    assert!(
        !log_text
            .lines()
            .any(|l| l.contains("route=hub_resolve") && l.contains(".safetensors")),
        "{log_text}"
    );
    // Every file of the repository, each with the bytes the bundle carried.
    let m = crate::create::common::manifest_of_dir(&bundle);
    let files = &m.repos[0].files;
    assert_eq!(listed.lines().count(), files.len(), "{listed}");
    for line in listed.lines() {
        let (path, sha) = line.rsplit_once(' ').unwrap();
        let f = files.iter().find(|f| f.path == path).unwrap();
        assert_eq!(sha, f.sha256.as_str(), "{path}");
    }
    assert!(files.iter().any(|f| f.lfs && f.xet_hash.is_some()));
}
