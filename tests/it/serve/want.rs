//! The miss log writes the next bundle, end to end with the real clients:
//! a site's mirror holds part of a model and an environment; nodes ask it
//! through the real `huggingface_hub` (2.4.0) and the real `uv` for a file
//! and a project it lacks (404s, counted); `llmgw mirror misses --out`
//! writes the want-list; on the connected side `bundle create --want`
//! plans exactly those (and says which wants it could not meet, and why);
//! `bundle import` takes the bundle in, and the very same requests now
//! succeed from the running mirror, with the upstream's bytes. Then
//! `llmgw mirror env` (and `GET /-/env`, the same JSON) prints the block a
//! node sources, and a node shell with nothing but that block, in a network
//! namespace where only a mirror of the store answers, installs an
//! interpreter, the environment's projects and a Hub file from it.

use crate::bundle_kit;

use std::path::Path;
use std::process::{Command, Output};
use std::time::{Duration, Instant};

use bundle_kit::{
    Server, import_bundle, llmgw, mirror_in_node, ok_for as ok, uv_node, venv_python,
};
use llmgw_fixture::{Fixture, FixtureOptions, TINY_COMMIT};
use llmgw_shared::manifest::Manifest;
use sha2::{Digest, Sha256};

/// `bundle create --arch amd64` against the fixture with `args`, the
/// JSON report.
fn create(fx: &Fixture, work: &Path, out: &Path, args: &[&str]) -> serde_json::Value {
    let o = crate::python::create(fx, &fx.raw_github_url(), work, out)
        .arg("--json")
        .args(args)
        .arg("--hf-endpoint")
        .arg(fx.hf_endpoint())
        .env_remove("HF_TOKEN")
        .env_remove("HF_ENDPOINT")
        .output()
        .unwrap();
    serde_json::from_str(&ok("bundle create", &o)).unwrap()
}

fn import(bundle: &Path, report: &serde_json::Value, store: &Path) {
    let sha = report["manifest_sha256"].as_str().unwrap();
    ok("bundle import", &import_bundle(bundle, sha, store, &[]));
}

/// `hf_hub_download` of each file (or `snapshot_download` of a repo, for
/// `*`) through the mirror, as a node runs it; prints `OK sha256` or
/// `MISS ErrorType` per line.
fn hf(mirror: &str, work: &Path, asks: &[(&str, &str)]) -> Vec<String> {
    let script = r#"
import hashlib, sys
from huggingface_hub import hf_hub_download, snapshot_download
args = sys.argv[1:]
for repo, name in zip(args[0::2], args[1::2]):
    try:
        if name == "*":
            snapshot_download(repo)
            print("OK")
        else:
            p = hf_hub_download(repo, name)
            print("OK", hashlib.sha256(open(p, "rb").read()).hexdigest())
    except Exception as e:
        print("MISS", type(e).__name__)
"#;
    let mut c = Command::new(venv_python());
    c.arg("-c").arg(script);
    for (repo, name) in asks {
        c.args([repo, name]);
    }
    let o = c
        .env("HF_ENDPOINT", mirror)
        .env("HF_HOME", work.join("hf-home"))
        .env("HF_HUB_DISABLE_TELEMETRY", "1")
        .env("HF_HUB_ETAG_TIMEOUT", "5")
        .env_remove("HF_TOKEN")
        .env_remove("HF_HUB_OFFLINE")
        .output()
        .unwrap();
    ok("huggingface_hub", &o)
        .lines()
        .map(str::to_string)
        .collect()
}

/// uv as a node runs it: no config of this machine, the mirror's
/// environment index only.
fn uv(work: &Path) -> Command {
    let mut c = crate::python::node_uv(work);
    c.env("UV_CACHE_DIR", work.join("node-uv-cache"));
    c
}

fn uv_install(work: &Path, venv: &Path, index: &str, project: &str) -> Output {
    uv(work)
        .args(["pip", "install", "--no-cache", "--python"])
        .arg(venv.join("bin/python"))
        .args(["--index-url", index, project])
        .output()
        .unwrap()
}

/// Polls until `f` holds (the mirror reads a new import at its next tick).
pub(crate) fn eventually(what: &str, mut f: impl FnMut() -> bool) {
    let start = Instant::now();
    while !f() {
        assert!(
            start.elapsed() < Duration::from_secs(30),
            "{what}: not within 30 s"
        );
        std::thread::sleep(Duration::from_millis(200));
    }
}

/// Waits until the serving mirror has written misses naming each of
/// `words` into `store` (within 5 s it should), then writes them as a
/// want-list at `want` (`mirror misses --out`).
pub(crate) fn want_list_of_misses(store: &Path, words: &[&str], want: &Path) {
    eventually("the misses reach the store", || {
        let o = llmgw()
            .args(["mirror", "misses", "--json", "--store"])
            .arg(store)
            .output()
            .unwrap();
        let text = String::from_utf8_lossy(&o.stdout);
        words.iter().all(|w| text.contains(w))
    });
    ok(
        "mirror misses --out",
        &llmgw()
            .args(["mirror", "misses", "--store"])
            .arg(store)
            .arg("--out")
            .arg(want)
            .output()
            .unwrap(),
    );
}

#[test]
fn misses_through_real_clients_become_the_next_bundle() {
    let fx = Fixture::start_blocking(FixtureOptions::default()).expect("start the fixture");
    let d = tempfile::tempdir().unwrap();
    let store = d.path().join("store");
    let uv_engine = format!("uv={}", llmgw_shared::recipe::UV_VERSION);

    // The site holds acme/tiny's config.json only, and the environment
    // `tools` (click).
    let first = d.path().join("first.tar");
    let r1 = create(
        &fx,
        d.path(),
        &first,
        &[
            "--engine",
            &uv_engine,
            "--model",
            "acme/tiny@main:config.json",
            "--python-env",
            "tools=click",
        ],
    );
    import(&first, &r1, &store);
    let server = Server::start(&store);
    let index = format!("{}/pypi/tools-amd64/simple/", server.url);

    // Nodes ask for what it lacks: a file the Hub has, one it has not, a
    // repository it has not; uv for a project of the environment.
    let asks = [
        ("acme/tiny", "tiny-Q4_K_M.gguf"),
        ("acme/tiny", "no-such-file.bin"),
        ("acme/absent", "*"),
    ];
    let before = hf(&server.url, d.path(), &asks);
    assert!(
        before.iter().all(|l| l.starts_with("MISS")),
        "the mirror should hold none of these yet: {before:?}"
    );
    let venv = d.path().join("node-venv");
    ok(
        "uv venv",
        &uv(d.path())
            .args(["venv", "--python"])
            .arg(venv_python())
            .arg(&venv)
            .output()
            .unwrap(),
    );
    let o = uv_install(d.path(), &venv, &index, "attrs");
    assert!(!o.status.success(), "attrs is not in the environment yet");
    // And a release asset of an engine, as curl or a script fetches it.
    let asset = "/ggml-org/llama.cpp/releases/download/b6123/llama-b6123-bin-ubuntu-x64.tar.gz";
    let no_asset = "/ggml-org/llama.cpp/releases/download/b6123/no-such-asset.tar.gz";
    assert_eq!(server.get(asset).0, 404);
    assert_eq!(server.get(no_asset).0, 404);

    // The serving mirror writes its misses into the store within 5 s.
    let want = d.path().join("want.json");
    want_list_of_misses(
        &store,
        &["tiny-Q4_K_M.gguf", "/attrs/", "absent", "no-such-asset"],
        &want,
    );

    // Connected side: the same environment request, plus the want-list;
    // a dry run first says the same and writes nothing.
    let second = d.path().join("second.tar");
    let dry = create(
        &fx,
        d.path(),
        &second,
        &[
            "--engine",
            &uv_engine,
            "--python-env",
            "tools=click",
            "--want",
            want.to_str().unwrap(),
            "--dry-run",
        ],
    );
    assert!(!second.exists());
    let dry_gaps = dry["gaps"].to_string();
    for w in ["no-such-file.bin", "acme/absent", "no-such-asset"] {
        assert!(dry_gaps.contains(w), "{w} not in {dry_gaps}");
    }
    let r2 = create(
        &fx,
        d.path(),
        &second,
        &[
            "--engine",
            &uv_engine,
            "--python-env",
            "tools=click",
            "--want",
            want.to_str().unwrap(),
        ],
    );
    let gaps = r2["gaps"].as_array().unwrap();
    let gap = |needle: &str| {
        gaps.iter()
            .find(|g| g["what"].as_str().unwrap().contains(needle))
            .unwrap_or_else(|| panic!("no gap for {needle}: {gaps:?}"))["reason"]
            .as_str()
            .unwrap()
            .to_string()
    };
    let why = gap("no-such-file.bin");
    assert!(
        why.contains("has no file no-such-file.bin") && why.contains(TINY_COMMIT),
        "{why}"
    );
    let why = gap("acme/absent");
    assert!(why.contains("no such repository"), "{why}");
    let why = gap("no-such-asset");
    assert!(
        why.contains("release b6123 of ggml-org/llama.cpp has no asset no-such-asset.tar.gz"),
        "{why}"
    );
    assert_eq!(gaps.len(), 3, "{gaps:?}");
    import(&second, &r2, &store);
    // Exactly what was missed: the one file, not the repository.
    assert_eq!(
        manifest_files(&store, &r2),
        vec!["tiny-Q4_K_M.gguf".to_string()]
    );

    // The same requests, answered now.
    let upstream = sha256_url(&format!(
        "{}/acme/tiny/resolve/{TINY_COMMIT}/tiny-Q4_K_M.gguf",
        fx.hf_endpoint()
    ));
    eventually("the mirror serves the new bundle", || {
        hf(&server.url, d.path(), &asks[..1])[0] == format!("OK {upstream}")
    });
    ok(
        "uv pip install attrs",
        &uv_install(d.path(), &venv, &index, "attrs"),
    );
    let (status, body) = server.get(asset);
    assert_eq!(status, 200);
    assert_eq!(
        hex::encode(Sha256::digest(&body)),
        sha256_url(&format!("{}{asset}", fx.github_download_url()))
    );
    let o = Command::new(venv.join("bin/python"))
        .args([
            "-c",
            "import importlib.metadata as m; print(m.version('attrs'))",
        ])
        .output()
        .unwrap();
    assert_eq!(ok("attrs installed", &o).trim(), "25.4.0");

    node_set_up_from_mirror_env(&server, &store, d.path(), &fx.hf_endpoint());
}

/// `llmgw mirror env` and `GET /-/env` agree, and the shell block it
/// prints is all a node needs: in a network namespace where only a mirror
/// of the store answers (`unshare -rn`, loopback up), sourced as it is, uv
/// installs the carried interpreter through the mirror's list (only that
/// variable of the two) and the environment's projects, and huggingface_hub
/// reads the Hub.
fn node_set_up_from_mirror_env(server: &Server, store: &Path, work: &Path, upstream: &str) {
    let env = |json: bool| {
        let mut c = llmgw();
        c.args(["mirror", "env", "--store"])
            .arg(store)
            .args(["--url", &server.url]);
        if json {
            c.arg("--json");
        }
        ok("mirror env", &c.output().unwrap())
    };
    let (status, body) = server.get("/-/env");
    assert_eq!(status, 200);
    let served: serde_json::Value = serde_json::from_slice(&body).unwrap();
    let printed: serde_json::Value = serde_json::from_str(&env(true)).unwrap();
    assert_eq!(served, printed);
    let block = env(false);
    assert!(block.contains("export HF_ENDPOINT="), "{block}");
    assert!(!block.contains("UV_PYTHON_INSTALL_MIRROR="), "{block}");

    // The node: a network namespace where only loopback exists and a
    // mirror of the same store answers on it; the fixture is out of reach.
    // The block `mirror env` prints there is all the node is given.
    let script = format!(
        r#"{mirror}if curl -sf -o /dev/null {upstream}/api/models/acme/tiny; then echo "the upstream answers"; exit 1; fi
eval "$({llmgw} mirror env --store {store} --url "$url")"
uv venv --python 3.12 --managed-python node2
uv pip install --python node2/bin/python attrs click
node2/bin/python -c 'import attrs, click'
{py} -c 'from huggingface_hub import hf_hub_download as d; d("acme/tiny", "config.json")'
"#,
        mirror = mirror_in_node(store),
        llmgw = env!("CARGO_BIN_EXE_llmgw"),
        store = store.display(),
        py = venv_python().display(),
    );
    let o = uv_node(&script, work, "node2-uv-cache")
        .env("UV_PYTHON_INSTALL_DIR", work.join("node2-pythons"))
        .env("HF_HOME", work.join("node2-hf"))
        .env("HF_HUB_DISABLE_TELEMETRY", "1")
        .output()
        .unwrap();
    ok("the node's shell with the mirror env block", &o);
}

/// The Hub files a bundle carries, from its manifest as imported.
fn manifest_files(store: &Path, report: &serde_json::Value) -> Vec<String> {
    let sha = report["manifest_sha256"].as_str().unwrap();
    let m = Manifest::from_json_bytes(
        &std::fs::read(store.join("bundles").join(format!("{sha}.json"))).unwrap(),
    )
    .unwrap();
    let mut files: Vec<String> = m
        .repos
        .iter()
        .flat_map(|r| r.files.iter().map(|f| f.path.clone()))
        .collect();
    files.sort();
    files
}

/// The sha256 of what the upstream serves at `url`.
fn sha256_url(url: &str) -> String {
    let o = Command::new("curl").args(["-sSfL", url]).output().unwrap();
    assert!(o.status.success(), "curl {url}: {o:?}");
    hex::encode(Sha256::digest(&o.stdout))
}

/// A file that is not a want-list, or one of another format, is refused
/// before any network, naming the file and what was expected (exit 2).
#[test]
fn a_bad_want_list_is_a_usage_error_naming_the_file() {
    let d = tempfile::tempdir().unwrap();
    for (name, body, says) in [
        ("have.json", r#"{"kind":"llmgw-have"}"#, "not a want-list"),
        (
            "future.json",
            r#"{"format":"llmgw-want-list/9","misses":[]}"#,
            "llmgw-want-list/9",
        ),
        (
            "empty.json",
            r#"{"format":"llmgw-want-list/1","misses":[]}"#,
            "the want-list is empty",
        ),
    ] {
        let p = d.path().join(name);
        std::fs::write(&p, body).unwrap();
        let o = llmgw()
            .args(["bundle", "create", "--arch", "amd64", "--out"])
            .arg(d.path().join("b.tar"))
            .arg("--want")
            .arg(&p)
            .output()
            .unwrap();
        let err = String::from_utf8_lossy(&o.stderr);
        assert_eq!(o.status.code(), Some(2), "{name}: {err}");
        assert!(err.contains(name) && err.contains(says), "{name}: {err}");
    }
}
