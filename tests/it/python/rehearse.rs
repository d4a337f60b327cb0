//! `bundle rehearse` of a site's lock of a packaged project (as `uv init
//! --package` makes it) whose nodes bring their own CPython (#47 items 3
//! and 4): with the fixture stopped (nothing may leave the machine), the
//! rehearsal in its private network namespace makes a venv from the host's
//! CPython 3.11 (the node lines set `UV_PYTHON_DOWNLOADS=never`), syncs the
//! served `uv.lock` without the project (`--no-install-project`, which the
//! node does not have), and installs the exported pylock.toml, all as dry
//! runs. (The line printed before, `uv sync --frozen`, tries to build the
//! project on the node, as #47 found: "Expected a Python module at src/…".)

use std::path::Path;

use llmgw_fixture::{Fixture, FixtureOptions};
use llmgw_shared::manifest::Manifest;

use super::site_lock::{create, ok, python311, uv};
use crate::bundle_kit::{llmgw, uv_bin};

/// A packaged project locked by the real `uv lock` against the fixture's
/// PyPI and exported as pylock.toml: (uv.lock, pylock.toml).
fn packaged_project(fx: &Fixture, work: &Path) -> (std::path::PathBuf, std::path::PathBuf) {
    let proj = work.join("proj");
    std::fs::create_dir_all(proj.join("src/site_app")).unwrap();
    std::fs::write(proj.join("src/site_app/__init__.py"), "").unwrap();
    std::fs::write(
        proj.join("pyproject.toml"),
        format!(
            "[project]\nname = \"site-app\"\nversion = \"0.1.0\"\nrequires-python = \">=3.11\"\n\
             dependencies = [\"click\"]\n\n\
             [build-system]\nrequires = [\"uv_build>=0.8,<0.14\"]\nbuild-backend = \"uv_build\"\n\n\
             [tool.uv]\npackage = true\n\n[[tool.uv.index]]\nurl = \"{}\"\ndefault = true\n",
            fx.pypi_simple_url()
        ),
    )
    .unwrap();
    let py = python311();
    ok(
        "uv lock",
        &uv(&proj, work)
            .args(["lock", "--python"])
            .arg(&py)
            .output()
            .unwrap(),
    );
    ok(
        "uv export",
        &uv(&proj, work)
            .args([
                "export",
                "--frozen",
                "--no-emit-project",
                "--format",
                "pylock.toml",
                "-o",
            ])
            .arg(proj.join("pylock.toml"))
            .output()
            .unwrap(),
    );
    (proj.join("uv.lock"), proj.join("pylock.toml"))
}

#[test]
fn a_packaged_projects_lock_with_the_nodes_own_python_rehearses_offline() {
    let fx = Fixture::start_blocking(FixtureOptions::default()).expect("start the fixture");
    let d = tempfile::tempdir().unwrap();
    let (uv_lock, pylock) = packaged_project(&fx, d.path());
    let bundle = d.path().join("site.tar");
    let o = create(
        &fx,
        d.path(),
        &bundle,
        &[
            format!("site={}", uv_lock.display()),
            format!("sitepy={}", pylock.display()),
        ],
    );
    let report: serde_json::Value = serde_json::from_str(&ok("bundle create", &o)).unwrap();
    let sha = report["manifest_sha256"].as_str().unwrap().to_string();
    drop(fx);

    // The bundle carries no uv (a site lock alone): the node's own, and its
    // own CPython 3.11.
    let py_dir = python311().parent().unwrap().to_path_buf();
    let uv_dir = uv_bin().parent().unwrap().to_path_buf();
    let path = format!(
        "{}:{}:{}",
        uv_dir.display(),
        py_dir.display(),
        std::env::var("PATH").unwrap()
    );
    let o = llmgw()
        .args(["bundle", "rehearse", "--json", "--sha256", &sha])
        .arg(&bundle)
        .arg("--work-dir")
        .arg(d.path())
        .env("PATH", &path)
        .output()
        .unwrap();
    let text = ok("bundle rehearse", &o);
    let r: serde_json::Value = serde_json::from_str(&text).unwrap();
    assert!(
        r["isolation"]
            .as_str()
            .unwrap()
            .contains("private network namespace"),
        "{text}"
    );
    let rows = r["checks"].as_array().unwrap();
    let passed = |needle: &str| {
        rows.iter()
            .any(|c| c["verdict"] == "pass" && c["subject"].as_str().unwrap().contains(needle))
    };
    assert!(passed("`llmgw mirror env` prints"), "{text}");
    assert!(passed("site-amd64: uv venv --python 3.11"), "{text}");
    assert!(
        passed("site-amd64: curl -fsSO")
            && passed("uv sync --dry-run --frozen --no-install-project"),
        "{text}"
    );
    assert!(
        passed("sitepy-amd64: uv pip install --dry-run -r "),
        "{text}"
    );
    assert!(rows.iter().all(|c| c["verdict"] != "fail"), "{text}");
    // The throwaway store is gone.
    let left: Vec<_> = std::fs::read_dir(d.path())
        .unwrap()
        .filter_map(|e| e.ok())
        .filter(|e| {
            e.file_name()
                .to_string_lossy()
                .starts_with("llmgw-rehearse-")
        })
        .collect();
    assert!(left.is_empty(), "{left:?}");

    // A bundle whose hash is not the one given is refused, as import does.
    let o = llmgw()
        .args(["bundle", "rehearse", "--sha256", &"0".repeat(64)])
        .arg(&bundle)
        .output()
        .unwrap();
    assert_eq!(o.status.code(), Some(1));
    let err = String::from_utf8_lossy(&o.stderr);
    assert!(
        err.contains("refused as `bundle import` would refuse it"),
        "{err}"
    );
}

/// `bundle rehearse` of `bundle` (sha256 `sha`) in its namespace, with the
/// host's CPython 3.11 and the test's uv on `PATH`: (exit code, report).
fn rehearse(bundle: &Path, sha: &str, work: &Path) -> (Option<i32>, serde_json::Value) {
    let path = format!(
        "{}:{}:{}",
        uv_bin().parent().unwrap().display(),
        python311().parent().unwrap().display(),
        std::env::var("PATH").unwrap()
    );
    let o = llmgw()
        .args(["bundle", "rehearse", "--json", "--sha256", sha])
        .arg(bundle)
        .arg("--work-dir")
        .arg(work)
        .env("PATH", &path)
        .output()
        .unwrap();
    let text = String::from_utf8_lossy(&o.stdout).into_owned();
    let report = serde_json::from_str(&text)
        .unwrap_or_else(|e| panic!("{e}: {text}\n{}", String::from_utf8_lossy(&o.stderr)));
    (o.status.code(), report)
}

/// #47 items 2 and 4: the node lines are what `rehearse` checks, so it
/// fails when they are wrong. An environment made with `--override` whose
/// requests the index alone cannot meet (`click<8.3`, the override
/// `click==8.3.0`): its node lines name the lock only, and the rehearsal
/// passes. The same bundle as an llmgw that did not record overrides made
/// it (its manifest without them: the node lines name the index) fails on
/// the index install, the row naming the fix on the connected side.
#[test]
fn node_lines_that_name_an_index_the_overrides_broke_fail_the_rehearsal_with_the_fix() {
    let fx = Fixture::start_blocking(FixtureOptions::default()).expect("start the fixture");
    let d = tempfile::tempdir().unwrap();
    let bundle = d.path().join("site");
    let mut c = llmgw();
    c.args(["bundle", "create", "--arch", "amd64", "--json"])
        .args(["--python", "3.11", "--python-interpreter", "none"])
        .args(["--python-env", "tools=click<8.3"])
        .args(["--override", "tools=click==8.3.0"]);
    let o = super::from_fixture(&mut c, &fx, &fx.raw_github_url(), d.path(), &bundle)
        .output()
        .unwrap();
    let report: serde_json::Value = serde_json::from_str(&ok("bundle create", &o)).unwrap();
    let sha = report["manifest_sha256"].as_str().unwrap().to_string();
    drop(fx);

    let (code, r) = rehearse(&bundle, &sha, d.path());
    let rows = r["checks"].as_array().unwrap().clone();
    assert_eq!(code, Some(0), "{r:#}");
    assert!(
        rows.iter().any(|c| c["verdict"] == "pass"
            && c["subject"]
                .as_str()
                .unwrap()
                .starts_with("tools-amd64: uv pip install --dry-run -r ")),
        "{r:#}"
    );

    // The manifest an llmgw that did not record overrides wrote.
    let path = bundle.join("manifest.json");
    let mut m = Manifest::from_json_bytes(&std::fs::read(&path).unwrap()).unwrap();
    assert_eq!(m.python_envs[0].overrides, ["click==8.3.0"]);
    m.python_envs[0].overrides.clear();
    let bytes = m.to_canonical_json();
    std::fs::remove_file(&path).unwrap();
    std::fs::write(&path, &bytes).unwrap();
    let sha = llmgw_shared::Sha256::of(&bytes).to_string();
    let (code, r) = rehearse(&bundle, &sha, d.path());
    assert_eq!(code, Some(1), "{r:#}");
    let failed: Vec<&serde_json::Value> = r["checks"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|c| c["verdict"] == "fail")
        .collect();
    assert_eq!(failed.len(), 1, "{r:#}");
    let row = failed[0];
    assert_eq!(
        row["subject"], "tools-amd64: uv pip install --dry-run 'click<8.3'",
        "{r:#}"
    );
    let fix = row["fix"].as_str().unwrap();
    assert!(
        fix.starts_with("make the bundle again with this llmgw and the same flags")
            && fix.contains("click<8.3")
            && fix.contains("--override"),
        "{fix}"
    );
}
