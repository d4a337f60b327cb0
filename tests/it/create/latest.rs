//! `--engine ENGINE=latest` (#52): against a fixture GitHub whose
//! llama.cpp list holds SemVer stable releases (`v0.2.0`, `v0.3.0`) among
//! older and newer `bNNNN` builds and a prerelease, `latest` is `v0.3.0`,
//! recorded as that tag with its archives; uv's `latest` is its highest
//! SemVer release. A newest release that lacks an archive the recipe
//! names is refused naming it, never swapped for an older one; a Python
//! engine's `latest` is a usage error.

use super::common::*;
use llmgw_fixture::{FixtureOptions, LlamaSemver};

fn semver_fixture(which: LlamaSemver) -> llmgw_fixture::Fixture {
    fixture_with(FixtureOptions {
        llama_semver: which,
        ..FixtureOptions::default()
    })
}

#[test]
fn latest_is_the_highest_stable_semver_release_and_is_recorded() {
    let fx = semver_fixture(LlamaSemver::Whole);
    let tmp = tempfile::tempdir().unwrap();
    let out = tmp.path().join("b");
    let mut c = create(&fx, tmp.path());
    c.args(["--arch", "amd64,arm64", "--engine", "llamacpp=latest"])
        .args(["--engine", "uv=latest", "--out"])
        .arg(&out);
    let o = run(&mut c);
    ok(&o);
    assert!(
        text(&o.stderr).contains("llamacpp latest: v0.3.0"),
        "{}",
        text(&o.stderr)
    );
    let m = manifest_of_dir(&out);
    let mut got: Vec<(&str, &str, &str)> = m
        .releases
        .iter()
        .map(|r| (r.engine.as_str(), r.tag.as_str(), r.version.as_str()))
        .collect();
    got.sort();
    assert_eq!(
        got,
        [
            ("llamacpp", "v0.3.0", "v0.3.0"),
            ("uv", "0.12.20", "0.12.20")
        ]
    );
    let llama = m.releases.iter().find(|r| r.engine == "llamacpp").unwrap();
    assert!(
        llama
            .assets
            .iter()
            .any(|a| a.name == "llama-v0.3.0-bin-ubuntu-vulkan-arm64.tar.gz"),
        "{:?}",
        llama.assets
    );
    assert!(llama.assets.iter().all(|a| a.name.contains("v0.3.0")));
    assert!(!text(&std::fs::read(out.join("manifest.json")).unwrap()).contains("latest"));
    // The same tag asked by name gives the same release, and a build
    // number still names its build.
    for (asked, tag) in [("llamacpp=v0.3.0", "v0.3.0"), ("llamacpp=b8010", "b8010")] {
        let out = tmp.path().join(tag);
        let mut c = create(&fx, tmp.path());
        c.args(["--arch", "amd64", "--engine", asked, "--out"])
            .arg(&out);
        ok(&run(&mut c));
        assert_eq!(manifest_of_dir(&out).releases[0].tag, tag);
    }
}

#[test]
fn a_newest_release_without_an_archive_is_refused_naming_it() {
    let fx = semver_fixture(LlamaSemver::NewestIncomplete);
    let tmp = tempfile::tempdir().unwrap();
    let out = tmp.path().join("b");
    let mut c = create(&fx, tmp.path());
    c.args([
        "--arch",
        "amd64,arm64",
        "--engine",
        "llamacpp=latest",
        "--out",
    ])
    .arg(&out);
    let e = fails(&run(&mut c), 1);
    assert!(
        e.contains(
            "--engine llamacpp=latest: the newest release of ggml-org/llama.cpp, v0.3.0, lacks \
             what the recipe table expects of it: llama-v0.3.0-bin-ubuntu-vulkan-arm64.tar.gz"
        ),
        "{e}"
    );
    assert!(!out.exists());
    // amd64 alone needs nothing v0.3.0 lacks.
    let mut c = create(&fx, tmp.path());
    c.args(["--arch", "amd64", "--engine", "llamacpp=latest", "--out"])
        .arg(&out);
    ok(&run(&mut c));
    assert_eq!(manifest_of_dir(&out).releases[0].tag, "v0.3.0");
}

#[test]
fn latest_of_a_python_engine_is_a_usage_error() {
    let fx = fixture();
    let tmp = tempfile::tempdir().unwrap();
    let mut c = create(&fx, tmp.path());
    c.args(["--arch", "amd64", "--engine", "vllm=latest", "--out"])
        .arg(tmp.path().join("b"));
    let e = fails(&run(&mut c), 2);
    assert!(
        e.contains(
            "--engine vllm=latest: latest is resolved for engines published as GitHub releases"
        ),
        "{e}"
    );
}
