//! `bundle create` refuses a Python environment it cannot vouch for, with
//! the real uv resolving against the fixture's PyPI, PyTorch index and
//! GitHub: a dependency with only an sdist, one with wheels only for a
//! newer glibc, a hash PyPI changed between uv's look and ours, a file the
//! PyTorch index gives no hash for, and an interpreter whose bytes are
//! not what uv's list says. Each names what and why, exits 1, and leaves
//! no bundle behind (only the hidden resume point of a .tar).

use crate::bundle_kit;

use std::process::Output;

use bundle_kit::stderr;
use llmgw_fixture::{
    Fixture, FixtureOptions, NEWER_GLIBC_ONLY, PBS_TAG, PYTORCH_MISSING_HASH, SDIST_ONLY,
};

/// `bundle create --arch amd64` of `args` against the fixture, into a
/// fresh folder; checks exit 1 and that no bundle (or part) is left.
fn refused(fx: &Fixture, args: &[&str]) -> String {
    let d = tempfile::tempdir().unwrap();
    let out = d.path().join("site.tar");
    let o: Output = crate::python::create(fx, &fx.raw_github_url(), d.path(), &out)
        .args(crate::python::uv_engine())
        .args(args)
        .output()
        .unwrap();
    let err = stderr(&o);
    assert_eq!(o.status.code(), Some(1), "{args:?}: {err}");
    let left: Vec<String> = std::fs::read_dir(d.path())
        .unwrap()
        .filter_map(Result::ok)
        .map(|e| e.file_name().to_string_lossy().into_owned())
        .filter(|n| n.starts_with("site"))
        .collect();
    // `.site.tar.partial` may stay: the resume point of the next run.
    assert!(left.is_empty(), "{args:?} left {left:?}");
    err
}

#[test]
fn python_environments_create_cannot_vouch_for_are_refused() {
    let fx = Fixture::start_blocking(FixtureOptions::default()).expect("start the fixture");

    let err = refused(&fx, &["--python-env", &format!("tools={SDIST_ONLY}")]);
    assert!(
        err.contains(&format!(
            "{SDIST_ONLY} has no wheel for x86_64-manylinux_2_28"
        )) && err.contains("pin a version of it that publishes wheels"),
        "{err}"
    );

    let err = refused(&fx, &["--python-env", &format!("tools={NEWER_GLIBC_ONLY}")]);
    assert!(
        err.contains(&format!("{NEWER_GLIBC_ONLY} has no wheel"))
            && err.contains("pass --manylinux 2_34 if the nodes have glibc 2.34 or newer"),
        "{err}"
    );

    fx.faults().hashes_change_after("/simple/click/", 1);
    let err = refused(&fx, &["--python-env", "tools=click"]);
    assert!(
        err.contains("click-8.3.0-py3-none-any.whl: the lock uv wrote says sha256")
            && err.contains("/simple/click/ says")
            && err.contains("refusing it"),
        "{err}"
    );
    fx.faults().clear();

    let patch = fx.catalog().python312_patch;
    let pbs = llmgw_fixture::pbs_asset(patch, "x86_64");
    fx.faults().wrong_bytes(Fixture::release_download_path(
        "astral-sh/python-build-standalone",
        PBS_TAG,
        &pbs,
    ));
    let err = refused(&fx, &["--python-env", "tools=click"]);
    assert!(
        err.contains(&format!(
            "astral-sh/python-build-standalone {PBS_TAG} {pbs}: the downloaded bytes do not \
             match its publisher's sha256"
        )) && err.contains("the file was discarded"),
        "{err}"
    );
    fx.faults().clear();

    let err = refused(
        &fx,
        &[
            "--engine",
            "vllm=0.20.1",
            "--index",
            &format!("pytorch-cu129={}", fx.pytorch_index_missing_hash_url()),
        ],
    );
    assert!(
        err.contains(&format!(
            "gives no sha256 for {PYTORCH_MISSING_HASH}, so it cannot be verified and is not \
             carried; pass --allow-missing"
        )),
        "{err}"
    );
}
