//! FlashInfer's kernels across the gap (issue #32): an environment that
//! resolves `flashinfer-python` carries the `flashinfer-cubin` wheel of the
//! same version (the recipe table's companion rule), one whose version has
//! no cubin wheel on the index records that as a gap, and `--no-extras`
//! leaves the wheel out as a gap. Then in a network namespace where only a
//! mirror of the store answers (`unshare -rn`, loopback up), the real `uv`
//! and `pip` install both wheels from the environment's index, and every
//! file FlashInfer's loader reads is where its code looks: the directory
//! `flashinfer_cubin.get_cubin_dir()` answers (`flashinfer/jit/env.py`
//! `_get_cubin_dir`), joined with each artifact directory's `checksums.txt`
//! and each name listed there (`cubin_loader.py` `get_artifact` →
//! `load_cubin`), each with the sha256 its line gives. No GPU here: no
//! kernel is run.
//!
//! `flashinfer-jit-cache` likewise, from FlashInfer's own index (the
//! fixture's `flashinfer.ai` through `--extras-base`), at the CUDA version
//! each environment resolved: carried with the index's sha256, served in
//! the environment's index, installed by uv and pip offline, and every
//! module's `.so` where FlashInfer's `JitSpec.aot_path` looks
//! (`flashinfer_jit_cache.get_jit_cache_dir()/{name}/{name}.so`,
//! `flashinfer/jit/env.py` `_get_aot_dir`).

use std::path::Path;
use std::process::{Command, Output};

use crate::bundle_kit::{import_bundle, llmgw, mirror_in_node, ok_for as ok, uv_bin, uv_node};
use llmgw_fixture::{
    FLASHINFER_CUBIN_DIRS, FLASHINFER_JIT_CACHE_MODULES, FLASHINFER_LATER,
    FLASHINFER_WHEEL_VERSION, Fixture, FixtureOptions,
};
use llmgw_shared::manifest::Manifest;

/// `bundle create` of site environments for amd64 nodes bringing CPython
/// 3.11, into `out`.
fn create(fx: &Fixture, work: &Path, out: &Path, envs: &[String], extra: &[&str]) -> Output {
    let mut c = llmgw();
    c.args(["bundle", "create", "--arch", "amd64", "--json"])
        .args(["--python", "3.11", "--python-interpreter", "none"])
        .args(extra);
    for e in envs {
        c.args(["--python-env", e]);
    }
    super::from_fixture(&mut c, fx, &fx.raw_github_url(), work, out)
        .output()
        .unwrap()
}

/// `(project, version)` of each file of environment `name`.
fn carried(m: &Manifest, name: &str) -> Vec<(String, String)> {
    let e = m
        .python_envs
        .iter()
        .find(|e| e.name == name)
        .unwrap_or_else(|| panic!("no environment {name}"));
    e.files
        .iter()
        .map(|f| (f.project.clone(), f.version.clone()))
        .collect()
}

#[test]
fn the_cubin_wheel_follows_flashinfer_and_its_loader_finds_every_file_offline() {
    let fx = Fixture::start_blocking(FixtureOptions::default()).expect("start the fixture");
    let d = tempfile::tempdir().unwrap();
    let work = d.path();
    let v = FLASHINFER_WHEEL_VERSION;
    let envs = [
        format!("fi=flashinfer-python=={v}"),
        format!("old=flashinfer-python=={FLASHINFER_LATER}"),
        // torch 2.10.0 requires nvidia-cuda-runtime-cu12 12.8: CUDA 12.8.
        format!("fi128=flashinfer-python=={v},torch==2.10.0"),
    ];
    let bundle = work.join("bundle.tar");
    let flashinfer_ai = format!("flashinfer.ai={}", fx.flashinfer_url());
    let report = ok(
        "bundle create",
        &create(
            &fx,
            work,
            &bundle,
            &envs,
            &["--extras-base", &flashinfer_ai],
        ),
    );
    let report: serde_json::Value = serde_json::from_str(&report).unwrap();
    let sha = report["manifest_sha256"].as_str().unwrap().to_string();
    let store = work.join("store");
    ok("bundle import", &import_bundle(&bundle, &sha, &store, &[]));
    let m = Manifest::from_json_bytes(
        &std::fs::read(store.join("bundles").join(format!("{sha}.json"))).unwrap(),
    )
    .unwrap();

    // The companion, pinned to the version resolved; none for the version
    // the index has no cubin wheel of, which is a gap saying so.
    let fi = carried(&m, "fi-amd64");
    for p in ["flashinfer-python", "flashinfer-cubin"] {
        assert!(fi.contains(&(p.to_string(), v.to_string())), "{p}: {fi:?}");
    }
    let old = carried(&m, "old-amd64");
    assert!(
        old.contains(&("flashinfer-python".into(), FLASHINFER_LATER.into()))
            && !old.iter().any(|(p, _)| p == "flashinfer-cubin"),
        "{old:?}"
    );
    let gap = |what: &str| {
        m.gaps
            .iter()
            .find(|g| g.what == what)
            .unwrap_or_else(|| panic!("no gap {what}: {:?}", m.gaps))
            .reason
            .clone()
    };
    let why = gap(&format!("old-amd64: flashinfer-cubin=={FLASHINFER_LATER}"));
    assert!(
        why.contains(&format!("has no flashinfer-cubin wheel {FLASHINFER_LATER}"))
            && why.contains("FLASHINFER_CUBINS_REPOSITORY"),
        "{why}"
    );
    jit_cache_follows_the_cuda_resolved(&fx, &m);
    assert!(
        !m.gaps.iter().any(|g| g.what.contains("CuTe DSL")),
        "{v} has no DSL FMHA kernels: {:?}",
        m.gaps
    );

    // --no-extras: the wheel left out, a gap.
    let dry = create(
        &fx,
        work,
        &work.join("none.tar"),
        &envs[..1],
        &["--no-extras"],
    );
    let dry: serde_json::Value = serde_json::from_str(&ok("--no-extras", &dry)).unwrap();
    let none = work.join("none-store");
    ok(
        "bundle import --no-extras",
        &import_bundle(
            &work.join("none.tar"),
            dry["manifest_sha256"].as_str().unwrap(),
            &none,
            &[],
        ),
    );
    let n = Manifest::from_json_bytes(
        &std::fs::read(
            none.join("bundles")
                .join(format!("{}.json", dry["manifest_sha256"].as_str().unwrap())),
        )
        .unwrap(),
    )
    .unwrap();
    assert!(
        !carried(&n, "fi-amd64")
            .iter()
            .any(|(p, _)| p == "flashinfer-cubin")
    );
    assert!(
        n.gaps
            .iter()
            .any(|g| g.what == format!("fi-amd64: flashinfer-cubin=={v}")
                && g.reason.starts_with("--no-extras: left out")),
        "{:?}",
        n.gaps
    );

    // `mirror env` says what a node of the environment must know.
    let block = ok(
        "mirror env",
        &llmgw()
            .args(["mirror", "env", "--store"])
            .arg(&store)
            .args(["--url", "http://m:8080"])
            .output()
            .unwrap(),
    );
    assert!(
        block.contains("flashinfer-cubin held: leave FLASHINFER_CUBIN_DIR unset"),
        "{block}"
    );
    // FLASHINFER_NO_DOWNLOAD is read from 0.6.8 on, not by 0.5.3.
    assert!(!block.contains("FLASHINFER_NO_DOWNLOAD"), "{block}");

    node_installs_and_finds_the_cubins(
        &store,
        work,
        &[
            fx.pypi_simple_url(),
            fx.flashinfer_url(),
            fx.github_download_url(),
        ],
    );
}

/// `flashinfer-jit-cache` at each environment's CUDA (torch 2.11.0's
/// `nvidia-cuda-runtime` 13.0 → `cu130`; torch 2.10.0's 12.8 → `cu128`),
/// from FlashInfer's index, checked against its `#sha256=`; none for the
/// version its index lacks, a gap naming version and CUDA.
fn jit_cache_follows_the_cuda_resolved(fx: &Fixture, m: &Manifest) {
    let v = FLASHINFER_WHEEL_VERSION;
    for (env, label) in [("fi-amd64", "cu130"), ("fi128-amd64", "cu128")] {
        let e = m.python_envs.iter().find(|e| e.name == env).unwrap();
        let jit: Vec<_> = e
            .files
            .iter()
            .filter(|f| f.project == "flashinfer-jit-cache")
            .collect();
        let name = format!("flashinfer_jit_cache-{v}+{label}-cp39-abi3-manylinux_2_28_x86_64.whl");
        assert_eq!(
            jit.iter().map(|f| f.filename.as_str()).collect::<Vec<_>>(),
            [name.as_str()],
            "{env}"
        );
        assert_eq!(jit[0].version, format!("{v}+{label}"));
        let digest = &jit[0].publisher_digests[0];
        assert_eq!(
            digest.source,
            llmgw_shared::manifest::DigestSource::IndexUrlFragment
        );
        assert_eq!(digest.value, jit[0].sha256.to_string());
        let index = format!("{}/whl/{label}", fx.flashinfer_url());
        assert!(
            e.indexes
                .iter()
                .any(|i| i.name == format!("flashinfer-{label}")
                    && i.url == index
                    && i.explicit
                    && i.packages == ["flashinfer-jit-cache"]),
            "{env}: {:?}",
            e.indexes
        );
    }
    let why = m
        .gaps
        .iter()
        .find(|g| g.what == format!("old-amd64: flashinfer-jit-cache=={FLASHINFER_LATER}+cu130"))
        .unwrap_or_else(|| panic!("no jit-cache gap for {FLASHINFER_LATER}: {:?}", m.gaps))
        .reason
        .clone();
    assert!(
        why.contains(&format!(
            "lists no {FLASHINFER_LATER}+cu130 wheel for x86_64"
        )) && why.contains("nvidia-cuda-runtime 13.0")
            && why.contains("optional"),
        "{why}"
    );
}

/// In `unshare -rn` with a mirror of `store` inside: uv and pip install
/// flashinfer-python and flashinfer-cubin from the environment's index,
/// and every file FlashInfer's loader would read is found and checked.
fn node_installs_and_finds_the_cubins(store: &Path, work: &Path, upstreams: &[String]) {
    let dirs: Vec<&str> = FLASHINFER_CUBIN_DIRS.iter().map(|(d, _, _)| *d).collect();
    let files: usize = FLASHINFER_CUBIN_DIRS
        .iter()
        .map(|(_, h, k)| k.len() + usize::from(h.is_some()))
        .sum();
    std::fs::write(work.join("loader.py"), LOADER_PY).unwrap();
    let pip = uv_bin().parent().unwrap().join("pip");
    let v = FLASHINFER_WHEEL_VERSION;
    let script = format!(
        r#"{mirror}for up in {upstreams}; do
  if curl -sf -o /dev/null "$up/"; then echo "the upstream $up answers"; exit 1; fi
done
index=$url/pypi/fi-amd64/simple
uv venv --python {py} v1
uv pip install --python v1/bin/python --index-url $index flashinfer-python=={v} flashinfer-cubin=={v} flashinfer-jit-cache=={v}+cu130
v1/bin/python loader.py '{dirs}' '{modules}'
uv venv --python {py} v2
{pip} --python v2/bin/python install --no-cache-dir --index-url $index flashinfer-python=={v} flashinfer-cubin=={v} flashinfer-jit-cache=={v}+cu130
v2/bin/python loader.py '{dirs}' '{modules}'
"#,
        mirror = mirror_in_node(store),
        py = python311().display(),
        pip = pip.display(),
        upstreams = upstreams.join(" "),
        dirs = serde_json::to_string(&dirs).unwrap(),
        modules = serde_json::to_string(&FLASHINFER_JIT_CACHE_MODULES).unwrap(),
    );
    let o = uv_node(&script, work, "node-uv-cache")
        .env("UV_PYTHON_DOWNLOADS", "never")
        .env("PIP_DISABLE_PIP_VERSION_CHECK", "1")
        .output()
        .unwrap();
    let out = ok("the node, offline but for the mirror", &o);
    let found: Vec<&str> = out.lines().filter(|l| l.starts_with("FOUND ")).collect();
    assert_eq!(found.len(), 2 * files, "{out}");
    let versions = format!("VERSIONS {v} {v}");
    assert_eq!(out.lines().filter(|l| *l == versions).count(), 2, "{out}");
    let aot = out.lines().filter(|l| l.starts_with("AOT ")).count();
    assert_eq!(aot, 2 * FLASHINFER_JIT_CACHE_MODULES.len(), "{out}");
    let jit = format!("JIT CACHE {v}+cu130");
    assert_eq!(out.lines().filter(|l| *l == jit).count(), 2, "{out}");
}

/// The CPython 3.11 the nodes bring (as the site-lock test finds it).
pub(super) fn python311() -> std::path::PathBuf {
    for p in [
        "/root/.pyenv/versions/3.11.7/bin/python3.11",
        "/usr/bin/python3.11",
    ] {
        if Path::new(p).exists() {
            return p.into();
        }
    }
    let o = Command::new("python3.11")
        .args(["-c", "import sys; print(sys.executable)"])
        .output()
        .expect("a CPython 3.11 (python3.11) is needed");
    ok("python3.11", &o).trim().into()
}

/// What FlashInfer's loader computes, step by step, from the installed
/// packages: `flashinfer/jit/env.py` `_get_cubin_dir` (no
/// `FLASHINFER_CUBIN_DIR`, `flashinfer_cubin` importable: its
/// `get_cubin_dir()`, its `__version__` equal to flashinfer's), then for
/// each artifact directory `get_artifact(dir + "/checksums.txt")` and each
/// name that file lists, read from `FLASHINFER_CUBIN_DIR / name` and
/// checked by sha256 (`load_cubin`). Any miss would send the real loader
/// to `FLASHINFER_CUBINS_REPOSITORY`.
const LOADER_PY: &str = r#"
import hashlib, importlib.util, json, os, pathlib, sys

assert "FLASHINFER_CUBIN_DIR" not in os.environ
assert importlib.util.find_spec("flashinfer_cubin") is not None
import flashinfer, flashinfer_cubin
print("VERSIONS", flashinfer.__version__, flashinfer_cubin.__version__)
assert flashinfer.__version__ == flashinfer_cubin.__version__
cubin_dir = pathlib.Path(flashinfer_cubin.get_cubin_dir())
assert str(cubin_dir).startswith(sys.prefix), cubin_dir
for d in json.loads(sys.argv[1]):
    sums = (cubin_dir / d / "checksums.txt").read_bytes().decode()
    for line in sums.splitlines():
        sha, name = line.strip().split()
        data = (cubin_dir / d / name).read_bytes()
        assert hashlib.sha256(data).hexdigest() == sha, (d, name)
        print("FOUND", d + "/" + name)

# flashinfer/jit/env.py _get_aot_dir: flashinfer_jit_cache importable, its
# __version__ starting with flashinfer's, its get_jit_cache_dir(); then
# jit/core.py JitSpec.aot_path: FLASHINFER_AOT_DIR / name / f"{name}.so".
assert importlib.util.find_spec("flashinfer_jit_cache") is not None
import flashinfer_jit_cache
print("JIT CACHE", flashinfer_jit_cache.__version__)
assert flashinfer_jit_cache.__version__.startswith(flashinfer.__version__)
aot_dir = pathlib.Path(flashinfer_jit_cache.get_jit_cache_dir())
assert str(aot_dir).startswith(sys.prefix), aot_dir
for name in json.loads(sys.argv[2]):
    so = aot_dir / name / f"{name}.so"
    assert so.is_file() and so.stat().st_size > 0, so
    print("AOT", name)
"#;
