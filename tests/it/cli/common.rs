//! What the newcomer tests share: the fixture upstream, a `bundle create`
//! against it, and paths as arguments.

use std::path::Path;
use std::process::{Command, Output};

use llmgw_fixture::{Fixture, FixtureOptions};

pub use crate::bundle_kit::{import_bundle, llmgw, ok, run, s, snapshot, stderr, stdout};

pub fn fixture() -> Fixture {
    Fixture::start_blocking(FixtureOptions::default()).expect("start the fixture upstream")
}

/// `llmgw bundle create` against the fixture, with a cache in `dir` and
/// nothing from the environment that could change the run.
pub fn create(fx: &Fixture, dir: &Path) -> Command {
    let mut c = llmgw();
    c.args(["bundle", "create", "--arch", "amd64", "--github-api"])
        .arg(fx.github_api_url())
        .arg("--hf-endpoint")
        .arg(fx.hf_endpoint())
        .arg("--cache")
        .arg(dir.join("cache"))
        .env_remove("HF_TOKEN")
        .env_remove("HF_ENDPOINT")
        .env("RUST_LOG", "warn");
    c
}

/// A bundle with llmgw's release signed by the fixture's trusted key, and
/// llama.cpp: what the key-mismatch refusals need. Returns the bundle and
/// its `.sha256` file.
pub fn signed_release_bundle(
    fx: &Fixture,
    dir: &Path,
    name: &str,
) -> (std::path::PathBuf, std::path::PathBuf) {
    let out = dir.join(name);
    let o = create(fx, dir)
        .args(["--llmgw", "v0.5.0", "--llmgw-api"])
        .arg(fx.llmgw_api_url())
        .arg("--trust")
        .arg(fx.trust_key_path())
        .args(["--engine", "llamacpp=b6123", "--out"])
        .arg(&out)
        .output()
        .unwrap();
    ok(&o);
    let sha = dir.join(format!("{name}.sha256"));
    assert!(sha.is_file());
    (out, sha)
}

/// Asserts the exit code and that each of `expect` is in stderr, and
/// none of `never`; returns stderr.
#[track_caller]
pub fn refused(o: &Output, code: i32, expect: &[&str], never: &[&str]) -> String {
    let err = stderr(o);
    assert_eq!(
        o.status.code(),
        Some(code),
        "stderr: {err}\nstdout: {}",
        stdout(o)
    );
    for e in expect {
        assert!(err.contains(e), "expected {e:?} in: {err}");
    }
    for n in never {
        assert!(!err.contains(n), "did not expect {n:?} in: {err}");
    }
    err
}
