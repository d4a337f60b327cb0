//! FlashInfer's CuTe DSL FMHA kernels across the gap (issue #32): an
//! environment that resolves `flashinfer-python` to a release with DSL
//! kernels carries, for its node CPU, each pinned `checksums.txt` and every
//! `.so` it lists, as runtime extras at the artifact repository's own
//! layout, fetched from an artifactory-shaped tree served by a real HTTP
//! server on 127.0.0.1 (`--extras-base edge.urm.nvidia.com=…`).
//!
//! The pins: the recipe table holds FlashInfer's real ones (read from its
//! `artifacts.py`), which no loopback tree can meet, so the fixture's
//! release (`FLASHINFER_DSL_VERSION`, one the table does not pin) is given
//! its own through the hidden `--flashinfer-dsl-pins FILE`; the chain is
//! the same (the `checksums.txt` against its pin, each kernel against its
//! line). Without that file the release is a gap naming why; `--no-extras`
//! makes the kernels gaps.
//!
//! A kernel changed by one byte is refused at create and, in a copy of the
//! bundle, at import. Then in a network namespace where only a mirror of
//! the store answers (`unshare -rn`, loopback up), a script that takes
//! `FLASHINFER_CUBINS_REPOSITORY` from `GET /-/env` and follows
//! `flashinfer/attention/cute_dsl/fmha.py` (`_get_checksums`,
//! `_load_from_artifact`) and `jit/cubin_loader.py` (`safe_urljoin`,
//! `get_artifact`'s download and `load_cubin`'s sha256 check) step by step
//! gets every kernel with the sha256 its line gives. No GPU here: no
//! kernel is loaded or run.

use std::path::Path;
use std::process::Output;

use super::extras::{Upstream, copy_dir};
use super::flashinfer::python311;
use crate::bundle_kit::{Server, import_bundle, llmgw, stderr};
use llmgw_fixture::kit::{mirror_in_node, offline_node};
use llmgw_fixture::{
    FLASHINFER_DSL_DIR, FLASHINFER_DSL_REPOSITORY_PATH, FLASHINFER_DSL_VARIANTS,
    FLASHINFER_DSL_VERSION, Fixture, FixtureOptions, flashinfer_dsl_tree,
};
use llmgw_shared::manifest::{DigestSource, Manifest};

const HOST: &str = "edge.urm.nvidia.com";

#[track_caller]
fn ok(what: &str, o: &Output) -> String {
    assert!(
        o.status.success(),
        "{what}: exit {:?}\nstdout: {}\nstderr: {}",
        o.status.code(),
        String::from_utf8_lossy(&o.stdout),
        String::from_utf8_lossy(&o.stderr)
    );
    String::from_utf8_lossy(&o.stdout).into_owned()
}

/// `bundle create` of a site environment resolving the fixture's DSL
/// release, for amd64 nodes bringing CPython 3.11, into `out`.
fn create(fx: &Fixture, work: &Path, out: &Path, extra: &[&str]) -> Output {
    let mut c = llmgw();
    c.args(["bundle", "create", "--arch", "amd64", "--json"])
        .args(["--python", "3.11", "--python-interpreter", "none"])
        .args([
            "--python-env",
            &format!("dsl=flashinfer-python=={FLASHINFER_DSL_VERSION}"),
        ])
        .args(extra);
    super::from_fixture(&mut c, fx, &fx.raw_github_url(), work, out)
        .output()
        .unwrap()
}

/// The tree under `root/edge.urm.nvidia.com/`, and under `root/wrong/` the
/// same with one kernel's byte changed; the pins file at `pins`.
fn upstream_tree(root: &Path, pins: &Path) -> String {
    let t = flashinfer_dsl_tree();
    let changed = t
        .files
        .iter()
        .find(|(p, _)| p.ends_with(".so"))
        .unwrap()
        .0
        .clone();
    for (path, bytes) in &t.files {
        for (top, mut bytes) in [(HOST, bytes.clone()), ("wrong", bytes.clone())] {
            if top == "wrong" && *path == changed {
                bytes[100] ^= 1;
            }
            let at = root.join(top).join(path);
            std::fs::create_dir_all(at.parent().unwrap()).unwrap();
            std::fs::write(at, bytes).unwrap();
        }
    }
    std::fs::write(pins, &t.pins_json).unwrap();
    changed
}

/// The gap of `what` in a dry run's report.
fn gap_of(report: &str, what: &str) -> String {
    let r: serde_json::Value = serde_json::from_str(report).unwrap();
    r["gaps"]
        .as_array()
        .unwrap()
        .iter()
        .find(|g| g["what"] == what)
        .unwrap_or_else(|| panic!("no gap {what}: {}", r["gaps"]))["reason"]
        .as_str()
        .unwrap()
        .to_string()
}

#[test]
fn dsl_kernels_carried_checked_and_fetched_as_flashinfer_does_offline() {
    let fx = Fixture::start_blocking(FixtureOptions::default()).expect("start the fixture");
    let d = tempfile::tempdir().unwrap();
    let work = d.path();
    let pins = work.join("pins.json");
    let changed = upstream_tree(&work.join("upstream"), &pins);
    let up = Upstream::with_python(&python311(), &work.join("upstream"));
    let flashinfer_ai = format!("flashinfer.ai={}", fx.flashinfer_url());
    let base = |top: &str| format!("{HOST}={}/{top}", up.url);
    let pins_flag = ["--flashinfer-dsl-pins", pins.to_str().unwrap()];
    let what = format!("dsl-amd64: FlashInfer {FLASHINFER_DSL_VERSION} CuTe DSL FMHA kernels");

    // No pins for the release: a gap naming it and why. --no-extras: a gap.
    let dry = |extra: &[&str]| {
        let mut args = vec!["--dry-run"];
        args.extend_from_slice(extra);
        ok(
            "bundle create --dry-run",
            &create(&fx, work, &work.join("dry"), &args),
        )
    };
    let edge = base(HOST);
    let why = gap_of(
        &dry(&["--extras-base", &flashinfer_ai, "--extras-base", &edge]),
        &what,
    );
    assert!(
        why.contains(&format!("no pins for FlashInfer {FLASHINFER_DSL_VERSION}"))
            && why.contains("FLASHINFER_CUBINS_REPOSITORY"),
        "{why}"
    );
    let why = gap_of(&dry(&["--no-extras"]), &what);
    assert!(why.starts_with("--no-extras: left out"), "{why}");

    // A kernel one byte off at its base: refused by its checksums.txt line.
    let wrong = base("wrong");
    let mut args = vec!["--extras-base", &flashinfer_ai, "--extras-base", &wrong];
    args.extend_from_slice(&pins_flag);
    let o = create(&fx, work, &work.join("wrong-bundle"), &args);
    assert_eq!(o.status.code(), Some(1), "{}", stderr(&o));
    let err = stderr(&o);
    assert!(
        err.contains(&format!("runtime extra {HOST}/{changed}")) && err.contains("sha256"),
        "{err}"
    );
    assert!(!work.join("wrong-bundle/manifest.json").exists());

    // The tree as published: carried, each file with its digest's source.
    let bundle = work.join("bundle");
    let mut args = vec!["--extras-base", &flashinfer_ai, "--extras-base", &edge];
    args.extend_from_slice(&pins_flag);
    let report = ok("bundle create", &create(&fx, work, &bundle, &args));
    let report: serde_json::Value = serde_json::from_str(&report).unwrap();
    let sha = report["manifest_sha256"].as_str().unwrap().to_string();
    let m =
        Manifest::from_json_bytes(&std::fs::read(bundle.join("manifest.json")).unwrap()).unwrap();
    let tree = flashinfer_dsl_tree();
    let x86: Vec<&(String, Vec<u8>)> = tree
        .files
        .iter()
        .filter(|(p, _)| p.contains("/x86_64/"))
        .collect();
    assert_eq!(m.extras.len(), x86.len(), "{:?}", m.extras);
    for (path, bytes) in &x86 {
        let e = m
            .extras
            .iter()
            .find(|e| e.host == HOST && e.path == *path)
            .unwrap_or_else(|| panic!("{path} not carried: {:?}", m.extras));
        assert_eq!(e.sha256, llmgw_shared::Sha256::of(bytes));
        assert_eq!(e.size, bytes.len() as u64);
        assert_eq!(e.engines, ["dsl-amd64"]);
        let source = if path.ends_with("checksums.txt") {
            DigestSource::ClientPinnedSha256
        } else {
            DigestSource::Sha256Sums
        };
        assert_eq!(e.publisher_digests[0].source, source, "{path}");
    }
    assert!(!m.gaps.iter().any(|g| g.what == what), "{:?}", m.gaps);

    // Import checks a kernel like any blob.
    let tampered = work.join("tampered");
    copy_dir(&bundle, &tampered);
    let kernel = m.extras.iter().find(|e| e.path.ends_with(".so")).unwrap();
    let blob = tampered.join(format!("blobs/sha256/{}", kernel.sha256));
    let mut bytes = std::fs::read(&blob).unwrap();
    bytes[10] ^= 1;
    std::fs::write(&blob, bytes).unwrap();
    let store = work.join("store");
    let o = import_bundle(&tampered, &sha, &store, &[]);
    assert!(!o.status.success(), "a changed kernel was imported");
    assert!(
        stderr(&o).contains(kernel.sha256.as_str()),
        "{}",
        stderr(&o)
    );
    ok("bundle import", &import_bundle(&bundle, &sha, &store, &[]));

    mirror_serves_and_names_the_repository(&store, x86[0]);
    node_fetches_as_flashinfer_does(&store, work, &up.url);
}

/// The mirror serves a file at the path FlashInfer forms, and `mirror env`
/// and `/-/env` name `FLASHINFER_CUBINS_REPOSITORY` at it.
fn mirror_serves_and_names_the_repository(store: &Path, (path, bytes): &(String, Vec<u8>)) {
    let server = Server::start(store);
    let (status, body) = server.get(&format!("/extras/{HOST}/{path}"));
    assert_eq!(status, 200);
    assert_eq!(body, *bytes);
    let repo = format!(
        "{}/extras/{HOST}/{FLASHINFER_DSL_REPOSITORY_PATH}",
        server.url
    );
    let (status, env) = server.get("/-/env");
    assert_eq!(status, 200);
    let env: serde_json::Value = serde_json::from_slice(&env).unwrap();
    let s = env["extras"]
        .as_array()
        .unwrap()
        .iter()
        .find(|s| s["variable"] == "FLASHINFER_CUBINS_REPOSITORY")
        .unwrap_or_else(|| panic!("no FLASHINFER_CUBINS_REPOSITORY: {env}"));
    assert_eq!(s["kind"], "base-url");
    assert_eq!(s["base"], repo.as_str());
    let block = ok(
        "mirror env",
        &llmgw()
            .args(["mirror", "env", "--store"])
            .arg(store)
            .args(["--url", &server.url])
            .output()
            .unwrap(),
    );
    assert!(
        block.contains(&format!("#   export FLASHINFER_CUBINS_REPOSITORY={repo}\n")),
        "{block}"
    );
}

/// In `unshare -rn`, a mirror of `store` the only server: [`NODE_PY`]
/// fetches every kernel of each GPU arch as FlashInfer's loader would.
fn node_fetches_as_flashinfer_does(store: &Path, work: &Path, upstream: &str) {
    std::fs::write(work.join("node.py"), NODE_PY).unwrap();
    let script = format!(
        r#"{start}if curl -sf -o /dev/null "{upstream}/"; then echo "the upstream answers"; exit 1; fi
{py} node.py "$url" {dir} sm_100a sm_103a
"#,
        start = mirror_in_node(store),
        py = python311().display(),
        dir = FLASHINFER_DSL_DIR,
    );
    let o = offline_node(&script, work, &[]).output().unwrap();
    let out = ok("the node, offline but for the mirror", &o);
    let loaded = out.lines().filter(|l| l.starts_with("LOADED ")).count();
    assert_eq!(loaded, 2 * FLASHINFER_DSL_VARIANTS.len(), "{out}");
    for v in FLASHINFER_DSL_VARIANTS {
        assert!(out.contains(&format!("LOADED sm_103a {v} ")), "{out}");
    }
}

/// FlashInfer's steps with the standard library (FlashInfer itself needs
/// torch and CUDA): `_get_checksums(gpu_arch)` fetches
/// `safe_urljoin(FLASHINFER_CUBINS_REPOSITORY, DSL_FMHA/cpu/sm/checksums.txt)`
/// into `FLASHINFER_CUBIN_DIR` and parses `sha256 filename` lines;
/// `_load_from_artifact` then asks `get_artifact(DSL_FMHA/cpu/sm/{variant}.so,
/// sha256)`, which downloads `safe_urljoin(repository, that path)` into the
/// cubin directory and accepts it only if its sha256 is the line's
/// (`load_cubin`). The repository comes from the mirror's `/-/env`.
const NODE_PY: &str = r#"
import hashlib, json, os, platform, sys, tempfile, urllib.request
from urllib.parse import urljoin

mirror, dsl_dir, archs = sys.argv[1], sys.argv[2], sys.argv[3:]
env = json.load(urllib.request.urlopen(mirror + "/-/env"))
(setting,) = [s for s in env["extras"] if s["variable"] == "FLASHINFER_CUBINS_REPOSITORY"]
os.environ["FLASHINFER_CUBINS_REPOSITORY"] = setting["base"]
REPOSITORY = os.environ["FLASHINFER_CUBINS_REPOSITORY"]
CUBIN_DIR = tempfile.mkdtemp(prefix="flashinfer-cubins")

def safe_urljoin(base, path):  # flashinfer/jit/cubin_loader.py
    if not base.endswith("/"):
        base += "/"
    return urljoin(base, path)

def download_file(uri, dest):
    os.makedirs(os.path.dirname(dest), exist_ok=True)
    with urllib.request.urlopen(uri, timeout=10) as r, open(dest, "wb") as out:
        out.write(r.read())

machine = platform.machine()  # artifacts.py _get_host_cpu_arch
cpu = "aarch64" if machine in ("aarch64", "arm64") else "x86_64"
for gpu_arch in archs:
    rel = os.path.join(dsl_dir, cpu, gpu_arch, "checksums.txt")
    local = os.path.join(CUBIN_DIR, rel)
    download_file(safe_urljoin(REPOSITORY, rel), local)
    checksums = {}
    for line in open(local):
        line = line.strip()
        if not line:
            continue
        sha256, filename = line.split(None, 1)
        checksums[filename.rsplit(".", 1)[0]] = sha256
    for variant, sha256 in sorted(checksums.items()):
        artifact_path = os.path.join(dsl_dir, cpu, gpu_arch, f"{variant}.so")
        local = os.path.join(CUBIN_DIR, artifact_path)
        download_file(safe_urljoin(REPOSITORY, artifact_path), local)
        data = open(local, "rb").read()
        assert hashlib.sha256(data).hexdigest() == sha256, (artifact_path, sha256)
        print("LOADED", gpu_arch, variant, len(data))
"#;
