//! The real uv and pip (pinned, `.venv-py` from scripts/setup.sh, or
//! `LLMGW_VENV_PY`) and the image's own old pip, installing from the
//! mirror's Python environments with no other index and no user config.
//! The wheels are the fixture's real ones (`llmgw-fixture`'s PyPI
//! stand-in), held in two environments of different arches.

use std::path::{Path, PathBuf};
use std::process::{Command, Output};

use llmgw_fixture::{Fixture, FixtureOptions};

use crate::common::*;
use crate::pypi_kit::{EnvFile, env_file, hold};

const AMD: &str = "site-0.1-cu13-amd64";
const ARM: &str = "site-0.1-cu129-arm64";
/// Leaf projects of the fixture's PyPI: a pure wheel and two with
/// platform wheels for both arches.
const PROJECTS: [&str; 3] = ["click", "cbor2", "charset-normalizer"];

/// The fixture's wheels of `PROJECTS` for one arch: all but the other
/// arch's and other platforms' (pure wheels go in both).
fn files_for(fx: &Fixture, other_tag: &str) -> Vec<EnvFile> {
    let mut out = Vec::new();
    for name in PROJECTS {
        let p = fx
            .catalog()
            .pypi_project(name)
            .unwrap_or_else(|| panic!("fixture has no {name}"));
        for f in &p.files {
            if !f.filename.ends_with(".whl") || f.filename.contains(other_tag) {
                continue;
            }
            if f.filename.contains("macosx")
                || f.filename.contains("win")
                || f.filename.contains("musl")
            {
                continue;
            }
            let body = std::fs::read(&f.blob.path).unwrap();
            let metadata = f.metadata.as_ref().map(|m| std::fs::read(&m.path).unwrap());
            let mut e = env_file(&p.name, &f.version, &f.filename, body, metadata);
            e.file.requires_python = f.requires_python.clone();
            out.push(e);
        }
    }
    out
}

struct World {
    _dir: tempfile::TempDir,
    store: PathBuf,
    amd: Vec<EnvFile>,
    work: PathBuf,
}

fn world() -> World {
    let fx = Fixture::start_blocking(FixtureOptions::default()).unwrap();
    let dir = tempfile::tempdir().unwrap();
    let store = dir.path().join("store");
    let amd = files_for(&fx, "aarch64");
    let arm = files_for(&fx, "x86_64");
    hold(&store, &[(AMD, "amd64", &amd), (ARM, "arm64", &arm)]);
    let work = dir.path().join("work");
    std::fs::create_dir_all(&work).unwrap();
    World {
        _dir: dir,
        store,
        amd,
        work,
    }
}

/// The pinned uv and new pip's venv.
fn py_venv() -> PathBuf {
    venv_python("LLMGW_VENV_PY", ".venv-py")
}

/// A command with no user config, no other index, caches in `work`.
fn clean(program: &Path, work: &Path) -> Command {
    let mut c = Command::new(program);
    for (k, _) in std::env::vars() {
        if k.starts_with("UV_") || k.starts_with("PIP_") {
            c.env_remove(k);
        }
    }
    c.env("UV_NO_CONFIG", "1")
        .env("UV_CACHE_DIR", work.join("uv-cache"))
        .env("UV_PYTHON_DOWNLOADS", "never")
        .env("PIP_CONFIG_FILE", "/dev/null")
        .env("PIP_NO_CACHE_DIR", "1")
        .env("PIP_DISABLE_PIP_VERSION_CHECK", "1")
        .env("HOME", work);
    c
}

fn run(c: &mut Command) -> Output {
    c.output().unwrap()
}

fn ok(o: &Output) -> String {
    let out = format!(
        "stdout:\n{}\nstderr:\n{}",
        String::from_utf8_lossy(&o.stdout),
        String::from_utf8_lossy(&o.stderr)
    );
    assert!(o.status.success(), "failed ({}):\n{out}", o.status);
    out
}

/// A fresh venv of the host's python3 (its pip is the image's old pip).
fn venv(work: &Path, name: &str) -> PathBuf {
    let dir = work.join(name);
    ok(&run(Command::new("python3").args(["-m", "venv"]).arg(&dir)));
    dir.join("bin/python")
}

fn installed(py: &Path) -> String {
    let o = run(Command::new(py).args([
        "-c",
        "import importlib.metadata as m; print(sorted(d.metadata['Name'].lower() for d in m.distributions()))",
    ]));
    ok(&o);
    String::from_utf8_lossy(&o.stdout).into_owned()
}

#[test]
fn uv_and_pip_install_from_an_environment_and_its_lock() {
    let w = world();
    let s = serve(&w.store);
    let uv = venv_bin(&py_venv(), "uv");
    let index = format!("{}/pypi/{AMD}/simple", s.url);

    // uv pip install, through UV_DEFAULT_INDEX, wheels only.
    let py = venv(&w.work, "uv-env");
    ok(&run(clean(&uv, &w.work)
        .args(["pip", "install", "--python"])
        .arg(&py)
        .args(PROJECTS)
        .env("UV_DEFAULT_INDEX", &index)
        .env("UV_NO_BUILD", "1")));
    let got = installed(&py);
    for p in PROJECTS {
        assert!(got.contains(&format!("'{p}'")), "{p} not in {got}");
    }

    // The image's old pip (python3 -m pip of a fresh venv), and the newest.
    let py = venv(&w.work, "old-pip");
    ok(&run(clean(&py, &w.work)
        .args(["-m", "pip", "install", "--index-url", &index])
        .args(PROJECTS)));
    assert!(installed(&py).contains("'cbor2'"));
    let py = venv(&w.work, "new-pip");
    ok(&run(clean(&venv_bin(&py_venv(), "pip"), &w.work)
        .arg("--python")
        .arg(&py)
        .args(["install", "--index-url", &index])
        .args(PROJECTS)));
    assert!(installed(&py).contains("'charset-normalizer'"));

    // uv pip install -r the lock, from the mirror's URL.
    let py = venv(&w.work, "lock-env");
    ok(&run(clean(&uv, &w.work)
        .args(["pip", "install", "--python"])
        .arg(&py)
        .arg("-r")
        .arg(format!("{}/pypi/{AMD}/pylock.toml", s.url))));
    let got = installed(&py);
    for p in PROJECTS {
        assert!(got.contains(&format!("'{p}'")), "{p} not in {got}");
    }
}

#[test]
fn uv_compiles_for_the_other_arch_against_the_arm64_index() {
    let w = world();
    let s = serve(&w.store);
    let uv = venv_bin(&py_venv(), "uv");
    let req = w.work.join("req.in");
    std::fs::write(&req, PROJECTS.join("\n")).unwrap();
    let out = ok(&run(clean(&uv, &w.work)
        .args(["pip", "compile", "--format", "pylock.toml", "--no-build"])
        .args([
            "--python-platform",
            "aarch64-manylinux_2_28",
            "--python-version",
            "3.12",
        ])
        .arg("--default-index")
        .arg(format!("{}/pypi/{ARM}/simple", s.url))
        .arg(&req)));
    assert!(out.contains("aarch64"), "{out}");
    assert!(!out.contains("x86_64.whl"), "{out}");
    assert!(out.contains(&format!("/pypi/{ARM}/files/")), "{out}");
}

#[test]
fn a_damaged_wheel_is_refused_by_uv_and_pip() {
    let w = world();
    let cbor = w.amd.iter().find(|f| f.file.project == "cbor2").unwrap();
    let path = llmgw_mirror::Store::at(&w.store).blob_file(&cbor.file.sha256.parse().unwrap());
    // One byte of the central directory's "version made by": the zip stays
    // readable, so only the hash can catch it.
    let mut bad = cbor.body.clone();
    let cd = bad
        .windows(4)
        .position(|w| w == b"PK\x01\x02")
        .expect("a central directory");
    bad[cd + 4] ^= 0x01;
    std::fs::write(&path, &bad).unwrap();
    let s = serve(&w.store);
    let uv = venv_bin(&py_venv(), "uv");
    let index = format!("{}/pypi/{AMD}/simple", s.url);

    let py = venv(&w.work, "uv-env");
    let o = run(clean(&uv, &w.work)
        .args(["pip", "install", "--python"])
        .arg(&py)
        .arg("cbor2")
        .env("UV_DEFAULT_INDEX", &index));
    let err = String::from_utf8_lossy(&o.stderr);
    assert!(!o.status.success(), "uv installed a damaged wheel: {err}");
    assert!(
        err.contains("Hash mismatch") || err.contains("hash"),
        "{err}"
    );
    assert!(!installed(&py).contains("'cbor2'"));

    let py = venv(&w.work, "pip-env");
    let o = run(clean(&py, &w.work).args(["-m", "pip", "install", "--index-url", &index, "cbor2"]));
    let err = String::from_utf8_lossy(&o.stderr);
    assert!(!o.status.success(), "pip installed a damaged wheel: {err}");
    assert!(err.contains("HASHES") || err.contains("hash"), "{err}");
    assert!(!installed(&py).contains("'cbor2'"));
}
