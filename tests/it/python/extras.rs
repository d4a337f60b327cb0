//! Runtime extras across the gap (issue #32), with the real binary and the
//! real clients: `bundle create --engine vllm=…` carries the encodings
//! gpt-oss's tokenizer loads at run time, fetched through `--extras-base`
//! from a real HTTP server on 127.0.0.1 that holds the real files (the
//! tiktoken-rs crate's copies, put in `.venv-extras/encodings` by
//! scripts/setup.sh), and checked against the sha256 the recipe table pins
//! — the same values tiktoken and Harmony pin, so bytes that are not the
//! real files are refused by the bundler before either client sees them.
//! Import checks them as blobs; then in a network namespace where only a
//! mirror of the store answers (`unshare -rn`, loopback up), a node reads
//! `GET /-/env`, fetches each file it names from `/extras/<host>/<path>`,
//! and the real `openai_harmony` (0.0.8) loads the gpt-oss encoding through
//! `TIKTOKEN_ENCODINGS_BASE` (a directory, which Harmony checks against its
//! pinned hash), and the real `tiktoken` (0.14.0) loads `o200k_base` and
//! `cl100k_base` from `TIKTOKEN_CACHE_DIR` (files named by the sha1 of the
//! upstream URL, each checked against tiktoken's `expected_hash`) and
//! fetches one over HTTP from the mirror itself with `load_tiktoken_bpe`.

use std::net::TcpStream;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Output, Stdio};
use std::time::Duration;

use crate::bundle_kit::{self, Server, llmgw, mirror_in_node, offline_node, ok_for as ok, stderr};
use llmgw_fixture::{Fixture, FixtureOptions, VLLM_VERSION};
use llmgw_shared::manifest::{DigestSource, Manifest};
use llmgw_shared::recipe::{OPENAI_ENCODINGS_HOST, extras_of};

/// The venv scripts/setup.sh makes with the pinned clients and the files.
fn venv() -> PathBuf {
    let v = Path::new(env!("CARGO_MANIFEST_DIR")).join(".venv-extras");
    assert!(
        v.join("bin/python").exists() && v.join("encodings/o200k_base.tiktoken").exists(),
        "{} is missing or has no encodings/: run scripts/setup.sh",
        v.display()
    );
    v
}

/// A real HTTP server (Python's `http.server`) on 127.0.0.1 serving `dir`,
/// stopped when dropped.
pub(super) struct Upstream {
    child: Child,
    pub(super) url: String,
}

impl Upstream {
    fn start(dir: &Path) -> Self {
        Self::with_python(&venv().join("bin/python"), dir)
    }

    /// The server run by the CPython at `python`.
    pub(super) fn with_python(python: &Path, dir: &Path) -> Self {
        let l = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
        let port = l.local_addr().unwrap().port();
        drop(l);
        let child = Command::new(python)
            .args([
                "-m",
                "http.server",
                &port.to_string(),
                "--bind",
                "127.0.0.1",
            ])
            .arg("--directory")
            .arg(dir)
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .spawn()
            .unwrap();
        for _ in 0..100 {
            if TcpStream::connect(("127.0.0.1", port)).is_ok() {
                break;
            }
            std::thread::sleep(Duration::from_millis(50));
        }
        Upstream {
            child,
            url: format!("http://127.0.0.1:{port}"),
        }
    }
}

impl Drop for Upstream {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// `bundle create` of vLLM's cu13 environment against the fixture, into
/// `out` (a directory bundle), with `extra` flags.
fn create(fx: &Fixture, work: &Path, out: &Path, extra: &[&str]) -> Output {
    let mut c = llmgw();
    c.args(["bundle", "create", "--arch", "amd64", "--json"])
        .args([
            "--engine",
            &format!("uv={}", llmgw_shared::recipe::UV_VERSION),
        ])
        .args(["--engine", &format!("vllm={VLLM_VERSION}:cu13")])
        .args(extra);
    super::from_fixture(&mut c, fx, &fx.raw_github_url(), work, out)
        .output()
        .unwrap()
}

/// The upstream's layout under `root/<host>/`: the real files, and under
/// `root/wrong/` the same names with other bytes.
fn upstream_tree(root: &Path) {
    let enc = venv().join("encodings");
    let real = root.join(OPENAI_ENCODINGS_HOST).join("encodings");
    let wrong = root.join("wrong/encodings");
    std::fs::create_dir_all(&real).unwrap();
    std::fs::create_dir_all(&wrong).unwrap();
    for name in ["o200k_base.tiktoken", "cl100k_base.tiktoken"] {
        let bytes = std::fs::read(enc.join(name)).unwrap();
        std::fs::write(real.join(name), &bytes).unwrap();
        // Same length, one byte changed: only the digest can tell.
        let mut other = bytes;
        other[0] ^= 1;
        std::fs::write(wrong.join(name), other).unwrap();
    }
}

#[test]
fn encodings_carried_checked_and_loaded_by_the_real_clients_offline() {
    let fx = Fixture::start_blocking(FixtureOptions::default()).expect("start the fixture");
    let d = tempfile::tempdir().unwrap();
    let work = d.path();
    upstream_tree(&work.join("upstream"));
    let up = Upstream::start(&work.join("upstream"));
    let base = |path: &str| format!("{OPENAI_ENCODINGS_HOST}={}/{path}", up.url);

    // Another base serving other bytes under the same names: refused by
    // the digests the recipe table pins, whatever the base.
    let o = create(
        &fx,
        work,
        &work.join("wrong-bundle"),
        &["--extras-base", &base("wrong")],
    );
    assert_eq!(o.status.code(), Some(1), "{}", stderr(&o));
    let err = stderr(&o);
    assert!(
        err.contains("runtime extra openaipublic.blob.core.windows.net/encodings/")
            && err.contains("sha256"),
        "{err}"
    );
    assert!(!work.join("wrong-bundle/manifest.json").exists());

    // The real files through --extras-base: carried, with the pinned digest.
    let bundle = work.join("bundle");
    let report = ok(
        "bundle create",
        &create(
            &fx,
            work,
            &bundle,
            &["--extras-base", &base(OPENAI_ENCODINGS_HOST)],
        ),
    );
    let report: serde_json::Value = serde_json::from_str(&report).unwrap();
    let sha = report["manifest_sha256"].as_str().unwrap().to_string();
    let m =
        Manifest::from_json_bytes(&std::fs::read(bundle.join("manifest.json")).unwrap()).unwrap();
    let pinned = extras_of("vllm", VLLM_VERSION);
    assert_eq!(m.extras.len(), pinned.len(), "{:?}", m.extras);
    for f in &pinned {
        let e = m
            .extras
            .iter()
            .find(|e| e.host == f.host && e.path == f.path)
            .unwrap_or_else(|| panic!("{} not carried: {:?}", f.path, m.extras));
        assert_eq!(e.sha256.as_str(), f.sha256);
        assert_eq!(e.size, f.size);
        assert_eq!(e.engines, ["vllm"]);
        assert_eq!(
            e.publisher_digests[0].source,
            DigestSource::ClientPinnedSha256
        );
    }
    assert!(!m.gaps.iter().any(|g| g.what.starts_with("runtime extra")));
    // The SBOM names each as a component with its sha256 and upstream URL.
    let sbom = m.evidence.as_ref().expect("an SBOM").sbom.sha256.clone();
    let sbom = std::fs::read(bundle.join(format!("blobs/sha256/{sbom}"))).unwrap();
    let sbom: serde_json::Value = serde_json::from_slice(&sbom).unwrap();
    for f in &pinned {
        let c = sbom["components"]
            .as_array()
            .unwrap()
            .iter()
            .find(|c| c["hashes"][0]["content"] == f.sha256)
            .unwrap_or_else(|| panic!("no SBOM component for {}", f.path));
        assert_eq!(c["type"], "data");
        let purl = c["purl"].as_str().unwrap();
        assert!(
            purl.contains("download_url=https%3A%2F%2Fopenaipublic"),
            "{purl}"
        );
    }

    // Import checks an extra like any blob: a copy of the bundle with one
    // extra's bytes changed is refused, the bundle itself imported.
    let tampered = work.join("tampered");
    copy_dir(&bundle, &tampered);
    let blob = tampered.join(format!("blobs/sha256/{}", pinned[1].sha256));
    let mut bytes = std::fs::read(&blob).unwrap();
    bytes[10] ^= 1;
    std::fs::write(&blob, bytes).unwrap();
    let store = work.join("store");
    let o = bundle_kit::import_bundle(&tampered, &sha, &store, &[]);
    assert!(!o.status.success(), "a changed extra was imported");
    assert!(stderr(&o).contains(pinned[1].sha256), "{}", stderr(&o));
    ok(
        "bundle import",
        &bundle_kit::import_bundle(&bundle, &sha, &store, &[]),
    );

    // `mirror env` names the variables, and agrees with `GET /-/env`.
    let server = Server::start(&store);
    let (status, body) = server.get(&format!(
        "/extras/{OPENAI_ENCODINGS_HOST}/encodings/cl100k_base.tiktoken"
    ));
    assert_eq!(status, 200);
    assert_eq!(
        body,
        std::fs::read(venv().join("encodings/cl100k_base.tiktoken")).unwrap()
    );
    let (status, served) = server.get("/-/env");
    assert_eq!(status, 200);
    let served: serde_json::Value = serde_json::from_slice(&served).unwrap();
    let printed = ok(
        "mirror env --json",
        &llmgw()
            .args(["mirror", "env", "--json", "--store"])
            .arg(&store)
            .args(["--url", &server.url])
            .output()
            .unwrap(),
    );
    assert_eq!(
        served,
        serde_json::from_str::<serde_json::Value>(&printed).unwrap()
    );
    let block = ok(
        "mirror env",
        &llmgw()
            .args(["mirror", "env", "--store"])
            .arg(&store)
            .args(["--url", &server.url])
            .output()
            .unwrap(),
    );
    assert!(
        block.contains("#   export TIKTOKEN_ENCODINGS_BASE=/var/lib/llmgw-extras/"),
        "{block}"
    );
    drop(server);

    node_loads_encodings_offline(&store, work, &up.url);
}

/// In `unshare -rn`, a mirror of `store` the only server: the node reads
/// `/-/env`, fills each directory it names, and the real clients load.
fn node_loads_encodings_offline(store: &Path, work: &Path, upstream: &str) {
    let node = work.join("node.py");
    std::fs::write(&node, NODE_PY).unwrap();
    let script = format!(
        r#"{mirror}if {py} -c 'import urllib.request as u; u.urlopen("{upstream}/", timeout=2)' 2>/dev/null; then
  echo "the upstream answers"; exit 1
fi
{py} {node} "$url"
"#,
        mirror = mirror_in_node(store),
        py = venv().join("bin/python").display(),
        node = node.display(),
    );
    let o = offline_node(&script, work, &[]).output().unwrap();
    let out = ok("the node's clients through the mirror", &o);
    assert!(out.contains("harmony gpt-oss [24912, 2375]"), "{out}");
    assert!(
        out.contains("tiktoken o200k_base [24912, 2375] 200019"),
        "{out}"
    );
    assert!(
        out.contains("tiktoken cl100k_base [15339, 1917] 100277"),
        "{out}"
    );
    assert!(out.contains("tiktoken over HTTP 100256"), "{out}");
    assert!(out.contains("miss counted"), "{out}");
}

/// The node: only `GET /-/env` tells it where each file is and what its
/// client calls it; nothing else of the mirror is assumed.
const NODE_PY: &str = r#"
import hashlib, json, os, sys, tempfile, urllib.request, urllib.error

mirror = sys.argv[1]
env = json.load(urllib.request.urlopen(mirror + "/-/env"))
by_var = {s["variable"]: s for s in env["extras"]}
dirs = {}
for var in ("TIKTOKEN_ENCODINGS_BASE", "TIKTOKEN_CACHE_DIR"):
    s = by_var[var]
    d = tempfile.mkdtemp(prefix=var.lower())
    for f in s["files"]:
        with urllib.request.urlopen(f["url"]) as r, open(os.path.join(d, f["name"]), "wb") as out:
            out.write(r.read())
    os.environ[var] = d
    dirs[var] = d

# Harmony (gpt-oss's tokenizer in vLLM and SGLang) reads the directory and
# checks the file against its own pinned hash.
from openai_harmony import HarmonyEncodingName, load_harmony_encoding
enc = load_harmony_encoding(HarmonyEncodingName.HARMONY_GPT_OSS)
ids = enc.encode("hello world")
assert enc.decode_utf8(ids) == "hello world"
print("harmony gpt-oss", ids)

# tiktoken: its cache, named by the sha1 of each upstream URL, each file
# checked against tiktoken's expected_hash.
import tiktoken
for name in ("o200k_base", "cl100k_base"):
    e = tiktoken.get_encoding(name)
    print("tiktoken", name, e.encode("hello world"), e.n_vocab)

# tiktoken fetching over HTTP from the mirror itself (its cache off), its
# pinned hash given: the same ranks as from the cache.
from tiktoken.load import load_tiktoken_bpe
os.environ["TIKTOKEN_CACHE_DIR"] = ""
base = by_var["TIKTOKEN_ENCODINGS_BASE"]["base"]
ranks = load_tiktoken_bpe(
    base + "/encodings/cl100k_base.tiktoken",
    expected_hash="223921b76ee99bde995b7ff738513eef100fb51d18c93597a113bcffe865b2a7",
)
assert ranks == tiktoken.get_encoding("cl100k_base")._mergeable_ranks
print("tiktoken over HTTP", len(ranks))

# An extra the store does not hold: a 404, counted in the miss log.
missing = "/extras/openaipublic.blob.core.windows.net/encodings/r50k_base.tiktoken"
try:
    urllib.request.urlopen(mirror + missing)
    raise SystemExit("an extra not held was served")
except urllib.error.HTTPError as e:
    assert e.code == 404, e.code
misses = json.load(urllib.request.urlopen(mirror + "/-/misses"))
assert any(m["path"] == missing for m in misses["misses"]), misses
print("miss counted")
"#;

/// Copies a directory bundle.
pub(super) fn copy_dir(from: &Path, to: &Path) {
    std::fs::create_dir_all(to).unwrap();
    for e in std::fs::read_dir(from).unwrap() {
        let e = e.unwrap();
        let t = to.join(e.file_name());
        if e.file_type().unwrap().is_dir() {
            copy_dir(&e.path(), &t);
        } else {
            std::fs::copy(e.path(), t).unwrap();
        }
    }
}
