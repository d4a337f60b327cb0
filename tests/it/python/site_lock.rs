//! A site's own lock as an environment (issue #32 item 4), with the real
//! clients: a project locked by the real `uv lock` against the fixture's
//! PyPI (and exported by `uv export --format pylock.toml`) is carried by
//! `bundle create --python-env NAME=PATH`, imported and served; then in a
//! network namespace where only the mirror answers (`unshare -rn`, loopback
//! up, the mirror inside, the fixture out of reach), `uv sync --frozen` in
//! a folder holding the mirror's rewritten `uv.lock` and the project's
//! `pyproject.toml`, `uv pip install -r pylock.toml` and pip 26.3's
//! `pip install -r pylock.toml` install the locked versions, from files
//! whose sha256 are the original lock's. Refusals: a lock whose hash was
//! edited, a lock with a git source, each naming the lock, the package and
//! the values.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::process::{Command, Output};

pub(super) use crate::bundle_kit::ok_for as ok;
use crate::bundle_kit::{import_bundle, llmgw, mirror_in_node, uv_bin, uv_node};
use llmgw_fixture::{Fixture, FixtureOptions};

/// The CPython 3.11 of this machine, which the nodes bring
/// (`--python-interpreter none`).
pub(super) fn python311() -> PathBuf {
    for p in [
        "/root/.pyenv/versions/3.11.7/bin/python3.11",
        "/usr/bin/python3.11",
    ] {
        if Path::new(p).exists() {
            return PathBuf::from(p);
        }
    }
    let o = Command::new("python3.11")
        .args(["-c", "import sys; print(sys.executable)"])
        .output()
        .expect("a CPython 3.11 (python3.11) is needed");
    PathBuf::from(ok("python3.11", &o).trim())
}

/// uv with no configuration of this machine.
pub(super) fn uv(dir: &Path, work: &Path) -> Command {
    let mut c = Command::new(uv_bin());
    for (k, _) in std::env::vars() {
        if k.starts_with("UV_") || k.starts_with("PIP_") {
            c.env_remove(k);
        }
    }
    c.current_dir(dir)
        .env("HOME", work)
        .env("UV_NO_CONFIG", "1")
        .env("UV_PYTHON_DOWNLOADS", "never")
        .env("UV_CACHE_DIR", work.join("uv-cache"));
    c
}

/// A project of real-shaped packages (a compiled one with cp311 and cp312
/// builds for both arches and for platforms nobody here asks for, a
/// manylinux one, pure ones), locked by `uv lock` against the fixture's
/// PyPI, and exported as a PEP 751 lock: (uv.lock, pylock.toml).
pub(super) fn locked_project(fx: &Fixture, work: &Path) -> (PathBuf, PathBuf) {
    let proj = work.join("proj");
    std::fs::create_dir_all(&proj).unwrap();
    std::fs::write(
        proj.join("pyproject.toml"),
        format!(
            "[project]\nname = \"site-app\"\nversion = \"0.1.0\"\nrequires-python = \">=3.11\"\n\
             dependencies = [\"jinja2\", \"charset-normalizer\", \"click\"]\n\n\
             [tool.uv]\npackage = false\n\n[[tool.uv.index]]\nurl = \"{}\"\ndefault = true\n",
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
        "uv export --format pylock.toml",
        &uv(&proj, work)
            .args(["export", "--frozen", "--format", "pylock.toml", "-o"])
            .arg(proj.join("pylock.toml"))
            .output()
            .unwrap(),
    );
    (proj.join("uv.lock"), proj.join("pylock.toml"))
}

/// `bundle create` of the site's lock(s), for amd64 nodes bringing CPython
/// 3.11.
pub(super) fn create(fx: &Fixture, work: &Path, out: &Path, envs: &[String]) -> Output {
    let mut c = llmgw();
    c.args(["bundle", "create", "--arch", "amd64", "--json"])
        .args(["--python", "3.11", "--python-interpreter", "none"]);
    for e in envs {
        c.args(["--python-env", e]);
    }
    super::from_fixture(&mut c, fx, &fx.raw_github_url(), work, out)
        .output()
        .unwrap()
}

/// The sha256 the lock records per wheel file name: `hash = "sha256:…"` of
/// a uv.lock.
pub(super) fn uv_lock_hashes(text: &str) -> BTreeMap<String, String> {
    let v: toml::Table = toml::from_str(text).unwrap();
    let mut out = BTreeMap::new();
    for p in v["package"].as_array().unwrap() {
        for w in p
            .get("wheels")
            .and_then(|w| w.as_array())
            .into_iter()
            .flatten()
        {
            let url = w["url"].as_str().unwrap();
            let name = url.rsplit('/').next().unwrap().to_string();
            let h = w["hash"].as_str().unwrap().trim_start_matches("sha256:");
            out.insert(name, h.to_string());
        }
    }
    out
}

#[test]
fn a_sites_uv_lock_and_pylock_install_offline_from_the_mirror_with_the_locks_hashes() {
    let fx = Fixture::start_blocking(FixtureOptions::default()).expect("start the fixture");
    let d = tempfile::tempdir().unwrap();
    let (uv_lock, pylock) = locked_project(&fx, d.path());
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
    let store = d.path().join("store");
    let sha = report["manifest_sha256"].as_str().unwrap();
    ok("bundle import", &import_bundle(&bundle, sha, &store, &[]));

    // What was carried: for amd64 and CPython 3.11, one wheel per package
    // (markupsafe's cp311 manylinux x86_64 build, not its cp312, aarch64,
    // musl, macOS or Windows ones), each with the lock's hash.
    let manifest: serde_json::Value = serde_json::from_slice(
        &std::fs::read(store.join("bundles").join(format!("{sha}.json"))).unwrap(),
    )
    .unwrap();
    let original = std::fs::read_to_string(&uv_lock).unwrap();
    let hashes = uv_lock_hashes(&original);
    let envs = manifest["python_envs"].as_array().unwrap();
    let site = envs.iter().find(|e| e["name"] == "site-amd64").unwrap();
    assert_eq!(site["site_lock"]["format"], "uv.lock");
    let mut carried: Vec<&str> = site["files"]
        .as_array()
        .unwrap()
        .iter()
        .map(|f| {
            let name = f["filename"].as_str().unwrap();
            assert_eq!(
                f["sha256"].as_str(),
                hashes.get(name).map(String::as_str),
                "{name}"
            );
            let sources: Vec<&str> = f["publisher_digests"]
                .as_array()
                .unwrap()
                .iter()
                .map(|p| p["source"].as_str().unwrap())
                .collect();
            assert!(sources.contains(&"site-lock-sha256"), "{name}: {sources:?}");
            name
        })
        .collect();
    carried.sort();
    let markupsafe: Vec<&&str> = carried
        .iter()
        .filter(|n| n.starts_with("markupsafe"))
        .collect();
    assert_eq!(markupsafe.len(), 1, "{carried:?}");
    assert!(markupsafe[0].contains("cp311-cp311-manylinux") && markupsafe[0].contains("x86_64"));
    assert!(
        carried.iter().any(|n| n.starts_with("click-")),
        "{carried:?}"
    );
    let sitepy = envs.iter().find(|e| e["name"] == "sitepy-amd64").unwrap();
    assert_eq!(sitepy["files"].as_array().unwrap().len(), carried.len());

    node_installs_offline(
        &store,
        d.path(),
        &hashes,
        &[fx.pypi_simple_url(), fx.pypi_files_url()],
    );
}

/// In a network namespace with only loopback, a mirror of the store
/// inside: `uv sync --frozen` from the served uv.lock and pyproject.toml,
/// `uv pip install -r` and `pip install -r` of the served pylock.toml; each
/// file the served locks name is fetched and hashed.
fn node_installs_offline(
    store: &Path,
    work: &Path,
    hashes: &BTreeMap<String, String>,
    upstreams: &[String],
) {
    let pip = uv_bin().parent().unwrap().join("pip");
    let script = format!(
        r#"{mirror}mkdir node && cd node
curl -sSf -o uv.lock $url/pypi/site-amd64/uv.lock
curl -sSf -o pyproject.toml $url/pypi/site-amd64/pyproject.toml
for up in {upstreams}; do
  if grep -q "$up" uv.lock; then echo "the served uv.lock names the upstream $up"; exit 1; fi
  if curl -sf -o /dev/null "$up/"; then echo "the upstream $up answers"; exit 1; fi
done
uv sync --frozen --python {py}
.venv/bin/python -c 'import jinja2, markupsafe, click, charset_normalizer'
.venv/bin/python -c 'import importlib.metadata as m; [print("SYNCED", d.metadata["Name"], d.version) for d in m.distributions()]'
curl -sSf -o ../pylock.toml $url/pypi/sitepy-amd64/pylock.toml
cd ..
uv venv --python {py} v2
uv pip install --python v2/bin/python -r pylock.toml
v2/bin/python -c 'import jinja2, markupsafe, click, charset_normalizer'
uv venv --python {py} v3
{pip} --python v3/bin/python install --no-cache-dir -r pylock.toml
v3/bin/python -c 'import jinja2, markupsafe, click, charset_normalizer'
for u in $(grep -o "$url/pypi/[^\"']*/files/[^\"']*" node/uv.lock pylock.toml | cut -d: -f2-); do
  echo "FILE $(basename $u) $(curl -sSf $u | sha256sum | cut -d' ' -f1)"
done
"#,
        mirror = mirror_in_node(store),
        py = python311().display(),
        pip = pip.display(),
        upstreams = upstreams.join(" "),
    );
    let o = uv_node(&script, work, "node-uv-cache")
        .env("UV_PYTHON_DOWNLOADS", "never")
        .env("PIP_DISABLE_PIP_VERSION_CHECK", "1")
        .output()
        .unwrap();
    let out = ok("the node, offline but for the mirror", &o);
    let mut fetched = 0;
    for line in out.lines().filter_map(|l| l.strip_prefix("FILE ")) {
        let (name, sha) = line.split_once(' ').unwrap();
        let name = percent_encoding::percent_decode_str(name)
            .decode_utf8()
            .unwrap()
            .into_owned();
        assert_eq!(Some(sha), hashes.get(&name).map(String::as_str), "{name}");
        fetched += 1;
    }
    assert!(fetched >= 8, "{out}");
    let synced: Vec<&str> = out.lines().filter(|l| l.starts_with("SYNCED")).collect();
    assert!(
        synced.iter().any(|l| l.starts_with("SYNCED click ")),
        "{synced:?}"
    );
}

/// A lock edited after `uv lock` (one wheel's sha256 changed) is refused,
/// naming the lock, the file and both values; so is a lock with a package
/// from git, naming the package and what to do.
#[test]
fn an_edited_hash_and_a_git_source_are_refused_naming_the_lock_and_the_package() {
    let fx = Fixture::start_blocking(FixtureOptions::default()).expect("start the fixture");
    let d = tempfile::tempdir().unwrap();
    let (uv_lock, _) = locked_project(&fx, d.path());
    let text = std::fs::read_to_string(&uv_lock).unwrap();
    let hashes = uv_lock_hashes(&text);
    let (file, real) = hashes
        .iter()
        .find(|(n, _)| n.starts_with("click-"))
        .unwrap();
    let forged = "0".repeat(64);

    let edited = d.path().join("edited");
    std::fs::create_dir_all(&edited).unwrap();
    std::fs::copy(
        uv_lock.with_file_name("pyproject.toml"),
        edited.join("pyproject.toml"),
    )
    .unwrap();
    std::fs::write(edited.join("uv.lock"), text.replace(real.as_str(), &forged)).unwrap();
    let o = create(
        &fx,
        d.path(),
        &d.path().join("a.tar"),
        &[format!("site={}", edited.join("uv.lock").display())],
    );
    let err = String::from_utf8_lossy(&o.stderr);
    assert_eq!(o.status.code(), Some(1), "{err}");
    for part in [
        edited.join("uv.lock").display().to_string(),
        file.clone(),
        format!("the lock says sha256 {forged}"),
        format!("says {real}"),
    ] {
        assert!(err.contains(&part), "{part}: {err}");
    }
    assert!(!d.path().join("a.tar").exists());

    let git = d.path().join("git");
    std::fs::create_dir_all(&git).unwrap();
    std::fs::copy(
        uv_lock.with_file_name("pyproject.toml"),
        git.join("pyproject.toml"),
    )
    .unwrap();
    let with_git = text.replacen(
        "source = { virtual = \".\" }\ndependencies = [",
        "source = { virtual = \".\" }\ndependencies = [\n    { name = \"toolkit\" },",
        1,
    ) + "\n[[package]]\nname = \"toolkit\"\nversion = \"1.0\"\nsource = { git = \
         \"https://git.example/toolkit?rev=v1#0123456789abcdef0123456789abcdef01234567\" }\n";
    assert!(
        with_git.contains("name = \"toolkit\" },"),
        "the project's entry was found"
    );
    std::fs::write(git.join("uv.lock"), &with_git).unwrap();
    let o = create(
        &fx,
        d.path(),
        &d.path().join("b.tar"),
        &[format!("site={}", git.join("uv.lock").display())],
    );
    let err = String::from_utf8_lossy(&o.stderr);
    assert_eq!(o.status.code(), Some(1), "{err}");
    assert!(
        err.contains(&format!(
            "{}: package \"toolkit\" comes from a `git` source, which a bundle cannot carry; \
             publish a wheel of it to an index",
            git.join("uv.lock").display()
        )),
        "{err}"
    );
}
