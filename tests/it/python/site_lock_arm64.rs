//! A site's own lock for arm64 nodes (issue #32 item 4, the platform the
//! amd64 test does not exercise): `bundle create --arch arm64 --arch
//! amd64 --python-env site=uv.lock --python-env sitepy=pylock.toml` of a
//! project locked against the fixture's PyPI, whose locked packages
//! publish wheels for x86_64 and aarch64 (and musl, macOS, Windows). For
//! each arch the bundle carries exactly the wheels a CPython 3.11 node of
//! it installs — worked out here from the lock's own file names, not from
//! the bundler's code — and the mirror serves each lock naming exactly
//! those files, at its own URLs, with the lock's hashes. Installing on an
//! arm64 node cannot run here; the carried set and the served locks are
//! what is checked.

use std::collections::{BTreeMap, BTreeSet};
use std::path::Path;
use std::process::Output;

use super::site_lock::{locked_project, ok, uv_lock_hashes};
use crate::bundle_kit::{Server, import_bundle, llmgw};
use llmgw_fixture::{Fixture, FixtureOptions};

/// `bundle create` of the site's locks for arm64 and amd64 nodes bringing
/// CPython 3.11.
fn create(fx: &Fixture, work: &Path, out: &Path, envs: &[String]) -> Output {
    let mut c = llmgw();
    c.args([
        "bundle", "create", "--arch", "arm64", "--arch", "amd64", "--json",
    ])
    .args(["--python", "3.11", "--python-interpreter", "none"]);
    for e in envs {
        c.args(["--python-env", e]);
    }
    super::from_fixture(&mut c, fx, &fx.raw_github_url(), work, out)
        .output()
        .unwrap()
}

/// Whether a CPython 3.11 glibc node of `machine` (`aarch64`, `x86_64`)
/// at manylinux_2_28 installs the wheel `name`: a pure wheel, or a
/// manylinux build for the machine whose interpreter tag is cp311, abi3
/// or py3.
fn fits(name: &str, machine: &str) -> bool {
    if name.ends_with("-none-any.whl") {
        return true;
    }
    let parts: Vec<&str> = name.trim_end_matches(".whl").rsplitn(4, '-').collect();
    let [platform, abi, python, _] = parts.as_slice() else {
        return false;
    };
    let python_ok = python.split('.').any(|p| p == "cp311" || p == "py3")
        || (abi.contains("abi3") && python.starts_with("cp3"));
    let platform_ok = platform.split('.').any(|p| {
        p.ends_with(&format!("_{machine}"))
            && (p.starts_with("manylinux2014")
                || p.starts_with("manylinux_2_17")
                || p.starts_with("manylinux_2_28"))
    });
    python_ok && platform_ok
}

/// The carried `(filename, sha256)` of environment `name`.
fn carried(manifest: &serde_json::Value, name: &str) -> BTreeMap<String, String> {
    let env = manifest["python_envs"]
        .as_array()
        .unwrap()
        .iter()
        .find(|e| e["name"] == name)
        .unwrap_or_else(|| panic!("no environment {name}"));
    env["files"]
        .as_array()
        .unwrap()
        .iter()
        .map(|f| {
            (
                f["filename"].as_str().unwrap().to_string(),
                f["sha256"].as_str().unwrap().to_string(),
            )
        })
        .collect()
}

/// The files a served lock points at on the mirror: by file name, the
/// path as the lock writes it.
fn served_files(lock: &str, mirror: &str, env: &str) -> BTreeMap<String, String> {
    let prefix = format!("{mirror}/pypi/{env}/files/");
    lock.split(['"', '\''])
        .filter_map(|s| s.strip_prefix(&prefix))
        .map(|n| {
            let name = percent_encoding::percent_decode_str(n)
                .decode_utf8()
                .unwrap()
                .into_owned();
            (name, format!("/pypi/{env}/files/{n}"))
        })
        .collect()
}

#[test]
fn a_sites_lock_for_arm64_carries_and_serves_exactly_the_aarch64_wheels() {
    let fx = Fixture::start_blocking(FixtureOptions::default()).expect("start the fixture");
    let d = tempfile::tempdir().unwrap();
    let work = d.path();
    let (uv_lock, pylock) = locked_project(&fx, work);
    let hashes = uv_lock_hashes(&std::fs::read_to_string(&uv_lock).unwrap());
    let bundle = work.join("site.tar");
    let envs = [
        format!("site={}", uv_lock.display()),
        format!("sitepy={}", pylock.display()),
    ];
    let report: serde_json::Value =
        serde_json::from_str(&ok("bundle create", &create(&fx, work, &bundle, &envs))).unwrap();
    let sha = report["manifest_sha256"].as_str().unwrap();
    let store = work.join("store");
    ok("bundle import", &import_bundle(&bundle, sha, &store, &[]));
    let manifest: serde_json::Value = serde_json::from_slice(
        &std::fs::read(store.join("bundles").join(format!("{sha}.json"))).unwrap(),
    )
    .unwrap();

    let server = Server::start(&store);
    for (arch, machine) in [("arm64", "aarch64"), ("amd64", "x86_64")] {
        let expected: BTreeMap<String, String> = hashes
            .iter()
            .filter(|(n, _)| fits(n, machine))
            .map(|(n, h)| (n.clone(), h.clone()))
            .collect();
        assert!(
            expected.keys().any(|n| n.contains(machine)),
            "the lock has no {machine} build to tell the arches apart: {expected:?}"
        );
        for env in ["site", "sitepy"] {
            let name = format!("{env}-{arch}");
            assert_eq!(carried(&manifest, &name), expected, "{name}");
        }
        // The served locks name exactly those files, on the mirror, and
        // each is served with the lock's hash.
        for (env, lock) in [("site", "uv.lock"), ("sitepy", "pylock.toml")] {
            let name = format!("{env}-{arch}");
            let (status, body) = server.get(&format!("/pypi/{name}/{lock}"));
            assert_eq!(status, 200, "{name} {lock}");
            let text = String::from_utf8(body).unwrap();
            assert!(!text.contains(&fx.pypi_files_url()), "{name}: {text}");
            let named = served_files(&text, &server.url, &name);
            let want: BTreeSet<&String> = expected.keys().collect();
            assert_eq!(named.keys().collect::<BTreeSet<_>>(), want, "{name} {lock}");
            for (f, path) in &named {
                let (status, bytes) = server.get(path);
                assert_eq!(status, 200, "{name} {f}");
                assert_eq!(
                    hex::encode(<sha2::Sha256 as sha2::Digest>::digest(&bytes)),
                    expected[f],
                    "{name} {f}"
                );
            }
        }
    }
}

#[test]
fn which_wheels_fit_which_node() {
    let a = "markupsafe-3.0.3-cp311-cp311-manylinux_2_17_aarch64.manylinux2014_aarch64.whl";
    assert!(fits(a, "aarch64") && !fits(a, "x86_64"));
    assert!(!fits(
        "markupsafe-3.0.3-cp312-cp312-manylinux_2_17_aarch64.manylinux2014_aarch64.whl",
        "aarch64"
    ));
    assert!(!fits(
        "markupsafe-3.0.3-cp311-cp311-musllinux_1_2_aarch64.whl",
        "aarch64"
    ));
    assert!(fits("click-8.3.0-py3-none-any.whl", "aarch64"));
}
