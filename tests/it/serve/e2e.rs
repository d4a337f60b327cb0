//! The whole chain with the real binary: `bundle create` from the fixture
//! upstream -> `bundle trust add` + `bundle import` -> `mirror serve` ->
//! `hf download` (huggingface_hub 2.4.0) and curl, every byte checked
//! against the manifest.

use std::io::{BufRead, BufReader};
use std::path::{Path, PathBuf};
use std::process::{Command, Output, Stdio};

use assert_cmd::cargo::CommandCargoExt;
use llmgw_fixture::{Fixture, FixtureOptions, TINY_COMMIT};
use llmgw_shared::manifest::Manifest;
use sha2::{Digest, Sha256};

fn llmgw() -> Command {
    let mut c = Command::cargo_bin("llmgw").unwrap();
    c.env_remove("HF_TOKEN")
        .env_remove("HF_ENDPOINT")
        .env_remove("LLMGW_STORE")
        .env("RUST_LOG", "warn");
    c
}

#[track_caller]
fn ok(o: Output) -> String {
    assert!(
        o.status.success(),
        "exit {:?}\nstdout: {}\nstderr: {}",
        o.status.code(),
        String::from_utf8_lossy(&o.stdout),
        String::from_utf8_lossy(&o.stderr)
    );
    String::from_utf8_lossy(&o.stdout).into_owned()
}

fn sha256_file(p: &Path) -> String {
    hex::encode(Sha256::digest(std::fs::read(p).unwrap()))
}

fn venv_bin(name: &str) -> PathBuf {
    let dir = std::env::var_os("LLMGW_VENV")
        .map(PathBuf::from)
        .unwrap_or_else(|| Path::new(env!("CARGO_MANIFEST_DIR")).join(".venv"));
    let p = dir.join("bin").join(name);
    assert!(
        p.exists(),
        "{} is missing: run scripts/setup.sh (or set LLMGW_VENV)",
        p.display()
    );
    p
}

/// Kills the server if the test fails half-way.
struct Child(std::process::Child);
impl Drop for Child {
    fn drop(&mut self) {
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
}

#[test]
fn create_import_serve_download() {
    let fx = Fixture::start_blocking(FixtureOptions::default()).expect("start the fixture");
    let d = tempfile::tempdir().unwrap();
    let bundle = d.path().join("site.tar.zst");
    let store = d.path().join("store");

    let report = ok(llmgw()
        .args(["bundle", "create", "--arch", "amd64", "--github-api"])
        .arg(fx.github_api_url())
        .arg("--hf-endpoint")
        .arg(fx.hf_endpoint())
        .arg("--llmgw-api")
        .arg(fx.llmgw_api_url())
        .args(["--llmgw", "v0.5.0", "--trust"])
        .arg(fx.trust_key_path())
        .args(["--engine", "llamacpp=b6123", "--model", "acme/tiny@main"])
        .args(["--dataset", "acme/data", "--json", "--cache"])
        .arg(d.path().join("cache"))
        .arg("--out")
        .arg(&bundle)
        .output()
        .unwrap());
    let report: serde_json::Value = serde_json::from_str(&report).unwrap();
    let sha = report["manifest_sha256"].as_str().unwrap().to_string();

    ok(llmgw()
        .args(["bundle", "trust", "add"])
        .arg(fx.trust_key_path())
        .arg("--store")
        .arg(&store)
        .output()
        .unwrap());
    ok(llmgw()
        .args(["bundle", "import"])
        .arg(&bundle)
        .args(["--sha256", &sha, "--store"])
        .arg(&store)
        .output()
        .unwrap());
    let manifest = Manifest::from_json_bytes(
        &std::fs::read(store.join("bundles").join(format!("{sha}.json"))).unwrap(),
    )
    .unwrap();

    // The server prints its URL on stdout once it listens.
    let mut child = Child(
        llmgw()
            .args(["mirror", "serve", "--listen", "127.0.0.1:0"])
            .env("LLMGW_STORE", &store)
            .env("RUST_LOG", "info")
            .stdout(Stdio::piped())
            .stderr(std::fs::File::create(d.path().join("serve.log")).unwrap())
            .spawn()
            .unwrap(),
    );
    let mut line = String::new();
    BufReader::new(child.0.stdout.take().unwrap())
        .read_line(&mut line)
        .unwrap();
    let url = line
        .trim()
        .rsplit(' ')
        .next()
        .filter(|u| u.starts_with("http://"))
        .unwrap_or_else(|| panic!("no URL in {line:?}"))
        .to_string();
    let curl = |args: &[&str]| {
        let o = Command::new("curl")
            .args(["-sS", "-f"])
            .args(args)
            .output()
            .unwrap();
        ok(o)
    };
    for _ in 0..100 {
        if Command::new("curl")
            .args(["-sf", &format!("{url}/readyz")])
            .status()
            .unwrap()
            .success()
        {
            break;
        }
        std::thread::sleep(std::time::Duration::from_millis(50));
    }

    // hf download, then hf cache verify, then each byte against the manifest.
    let cache = d.path().join("hf-cache");
    let hf = |args: &[&str]| {
        ok(Command::new(venv_bin("hf"))
            .args(args)
            .arg("--cache-dir")
            .arg(&cache)
            .env("HF_ENDPOINT", &url)
            .env("HF_HOME", d.path().join("hf-home"))
            .env("HF_HUB_DISABLE_TELEMETRY", "1")
            .env_remove("HF_TOKEN")
            .output()
            .unwrap())
    };
    hf(&["download", "acme/tiny"]);
    hf(&["cache", "verify", "acme/tiny"]);
    let tiny = manifest.repos.iter().find(|r| r.id == "acme/tiny").unwrap();
    assert_eq!(tiny.commit, TINY_COMMIT);
    let snap = cache.join("models--acme--tiny/snapshots").join(TINY_COMMIT);
    for f in &tiny.files {
        assert_eq!(sha256_file(&snap.join(&f.path)), f.sha256, "{}", f.path);
    }
    assert!(!tiny.files.is_empty());

    // curl: every llama.cpp asset through the GitHub routes.
    let llama = manifest
        .releases
        .iter()
        .find(|r| r.repo == "ggml-org/llama.cpp")
        .unwrap();
    let api: serde_json::Value = serde_json::from_str(&curl(&[&format!(
        "{url}/api/v3/repos/ggml-org/llama.cpp/releases/tags/{}",
        llama.tag
    )]))
    .unwrap();
    for a in &llama.assets {
        let out = d.path().join(&a.name);
        let dl = api["assets"]
            .as_array()
            .unwrap()
            .iter()
            .find(|x| x["name"] == a.name.as_str())
            .unwrap();
        assert_eq!(dl["digest"], format!("sha256:{}", a.sha256));
        curl(&[
            "-o",
            out.to_str().unwrap(),
            dl["browser_download_url"].as_str().unwrap(),
        ]);
        assert_eq!(sha256_file(&out), a.sha256, "{}", a.name);
    }

    // SIGTERM: a clean stop, exit 0.
    let pid = child.0.id().to_string();
    assert!(
        Command::new("kill")
            .args(["-TERM", &pid])
            .status()
            .unwrap()
            .success()
    );
    let status = child.0.wait().unwrap();
    assert_eq!(status.code(), Some(0));

    // One structured line per request: method, route, status, bytes, ms.
    let log = std::fs::read_to_string(d.path().join("serve.log")).unwrap();
    let line = log
        .lines()
        .find(|l| l.contains("route=\"github_download\"") || l.contains("route=github_download"))
        .unwrap_or_else(|| panic!("no access line for a download in:\n{log}"));
    for field in ["method=GET", "status=200", "bytes=", "ms="] {
        assert!(line.contains(field), "{field} missing from {line}");
    }
    // A small file is asked for (HEAD), then fetched by GET; an LFS one,
    // whose tree entry names its `xetHash`, is rebuilt over Xet (a
    // reconstruction, then its xorbs) with no resolve at all, as
    // huggingface_hub 2.x does on the Hub.
    let count = |what: &str| log.lines().filter(|l| l.contains(what)).count();
    let heads = count("method=HEAD route=hub_resolve");
    let gets = count("method=GET route=hub_resolve");
    let rebuilt = count("route=xet_reconstruction status=200");
    let lfs = tiny.files.iter().filter(|f| f.lfs).count();
    assert!(heads >= tiny.files.len() - lfs, "{heads} HEADs in:\n{log}");
    assert!(rebuilt >= lfs && lfs > 0, "{rebuilt} over Xet in:\n{log}");
    assert!(gets >= tiny.files.len() - lfs, "{gets} GETs in:\n{log}");
}

#[test]
fn serve_usage_and_refusals_have_exit_codes() {
    let d = tempfile::tempdir().unwrap();
    // Usage errors: 2.
    let o = llmgw()
        .args(["mirror", "serve", "--store"])
        .arg(d.path())
        .args(["--tls-cert", "c.pem"])
        .output()
        .unwrap();
    assert_eq!(o.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&o.stderr).contains("--tls-key"));
    let o = llmgw()
        .args(["mirror", "serve", "--listen", "not-an-address", "--store"])
        .arg(d.path())
        .output()
        .unwrap();
    assert_eq!(o.status.code(), Some(2));
    let o = llmgw().args(["mirror", "serve"]).output().unwrap();
    assert_eq!(o.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&o.stderr).contains("--store"));
    // Refusals: 1, with the reason.
    let o = llmgw()
        .args(["mirror", "serve", "--store"])
        .arg(d.path().join("missing"))
        .output()
        .unwrap();
    assert_eq!(o.status.code(), Some(1));
    let err = String::from_utf8_lossy(&o.stderr);
    assert!(err.contains("does not exist"), "{err}");
    let o = llmgw()
        .args(["mirror", "serve", "--listen", "127.0.0.1:0", "--token-file"])
        .arg(d.path().join("no-token"))
        .env("LLMGW_STORE", d.path())
        .output()
        .unwrap();
    assert_eq!(o.status.code(), Some(1));
    assert!(String::from_utf8_lossy(&o.stderr).contains("cannot read the token file"));
}
