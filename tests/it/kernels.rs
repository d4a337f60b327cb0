//! Hub kernel repositories (#51): `bundle create --kernel` carries only
//! the build folders named or those the bundle's own environments load
//! (`create`), and the real `kernels` client (0.17.2), offline in a network
//! namespace where only the mirror answers, loads them, checks their
//! publisher and downloads what a `kernels.lock` pins (`client`); `recipe
//! kernels` says which node loads which folder (`recipe`).

use std::path::{Path, PathBuf};

use crate::create::common::{create, manifest_of_dir, ok, run};
use llmgw_fixture::Fixture;
use llmgw_shared::manifest::Manifest;

mod client;
mod create;
mod recipe;

/// `bundle create --arch amd64` of the fixture's kernels as `args` say,
/// into `dir/b`, imported into `dir/store` (the far side takes every
/// bundle these tests make); the manifest written.
fn carried(fx: &Fixture, dir: &Path, args: &[&str]) -> Manifest {
    let mut c = create(fx, dir);
    c.args(["--arch", "amd64", "--out"])
        .arg(dir.join("b"))
        .args(args);
    ok(&run(&mut c));
    imported(&dir.join("b"), &dir.join("store"))
}

/// `bundle import` of the bundle at `out` (its `.sha256` beside it) into
/// `store`, which must accept it; its manifest.
fn imported(out: &Path, store: &Path) -> Manifest {
    let sha = std::fs::read_to_string(out.with_extension("sha256")).unwrap();
    let sha = sha.split_whitespace().next().unwrap().to_string();
    crate::bundle_kit::ok_for(
        "bundle import",
        &crate::bundle_kit::import_bundle(out, &sha, store, &[]),
    );
    manifest_of_dir(out)
}

/// The Python of the `kernels` venv (`LLMGW_KERNELS_VENV` or
/// `.venv-kernels`, made by scripts/setup.sh).
fn kernels_python() -> PathBuf {
    crate::bundle_kit::venv("LLMGW_KERNELS_VENV", ".venv-kernels")
}
