//! What `bundle create` carries of a kernel repository, and what it
//! refuses, by name.

use super::carried;
use crate::create::common::{create, fails, fixture, run};
use llmgw_fixture::{KERNEL_SO_BYTES, KERNEL_V1_COMMIT, KERNEL_V2_COMMIT};
use llmgw_shared::manifest::{FORMAT_KERNELS, RepoKind};

#[test]
fn only_the_named_build_folders_are_carried() {
    let fx = fixture();
    let d = tempfile::tempdir().unwrap();
    let named = "kernels-test/relu@v1:torch-cpu,torch211-cxx11-cu130-x86_64-linux";
    let m = carried(&fx, d.path(), &["--kernel", named]);
    assert_eq!(m.format_version, FORMAT_KERNELS);
    let r = &m.repos[0];
    assert_eq!((r.kind, r.revision.as_str()), (RepoKind::Kernel, "v1"));
    assert_eq!(r.commit, KERNEL_V1_COMMIT);
    let k = r.kernel.as_ref().unwrap();
    assert_eq!(
        k.variants,
        ["torch-cpu", "torch211-cxx11-cu130-x86_64-linux"]
    );
    assert!(
        k.trusted_publisher,
        "kernels-test is a trusted publisher on the fixture Hub"
    );
    let paths: Vec<&str> = r.files.iter().map(|f| f.path.as_str()).collect();
    assert_eq!(
        paths,
        [
            ".gitattributes",
            "README.md",
            "build/torch-cpu/metadata.json",
            "build/torch-cpu/relu/__init__.py",
            "build/torch211-cxx11-cu130-x86_64-linux/metadata.json",
            "build/torch211-cxx11-cu130-x86_64-linux/relu/__init__.py",
            "build/torch211-cxx11-cu130-x86_64-linux/relu/_relu.abi3.so",
        ]
    );
    // Of the eight compiled builds, one crossed: count the bytes.
    let bytes: u64 = r.files.iter().map(|f| f.size).sum();
    assert!(
        bytes >= KERNEL_SO_BYTES as u64 && bytes < 2 * KERNEL_SO_BYTES as u64,
        "{bytes}"
    );
}

#[test]
fn without_a_version_the_newest_vn_branch_is_carried() {
    let fx = fixture();
    let d = tempfile::tempdir().unwrap();
    let m = carried(&fx, d.path(), &["--kernel", "kernels-test/relu:torch-cpu"]);
    let r = &m.repos[0];
    assert_eq!(
        (r.revision.as_str(), r.commit.as_str()),
        ("v2", KERNEL_V2_COMMIT)
    );
}

#[test]
fn a_user_s_kernel_is_recorded_as_from_no_trusted_publisher() {
    let fx = fixture();
    let d = tempfile::tempdir().unwrap();
    let m = carried(&fx, d.path(), &["--kernel", "hobbyist/relu@v1:torch-cpu"]);
    assert!(!m.repos[0].kernel.as_ref().unwrap().trusted_publisher);
}

#[test]
fn what_no_node_can_load_or_the_hub_lacks_is_refused_by_name() {
    let fx = fixture();
    let d = tempfile::tempdir().unwrap();
    let refused = |args: &[&str], code: i32| {
        let mut c = create(&fx, d.path());
        c.args(["--arch", "amd64", "--out"])
            .arg(d.path().join("x"))
            .args(args);
        let err = fails(&run(&mut c), code);
        assert!(!d.path().join("x").exists(), "{err}");
        err
    };
    // A folder the repository does not have: named, with what it has.
    let e = refused(
        &[
            "--kernel",
            "kernels-test/relu@v1:torch29-cxx11-cu129-x86_64-linux",
        ],
        1,
    );
    assert!(
        e.contains("has no build folder torch29-cxx11-cu129-x86_64-linux;")
            && e.contains("torch210-cxx11-cu128-x86_64-linux"),
        "{e}"
    );
    // A repository whose build folder is no variant: named.
    let e = refused(&["--kernel", "kernels-test/odd@v1:torch-cpu"], 1);
    assert!(
        e.contains("kernel kernels-test/odd@v1: its build folder cuda-only cannot be chosen")
            && e.contains("cuda-only is no kernel build variant"),
        "{e}"
    );
    // A folder that escapes build/: refused before anything is asked.
    let e = refused(&["--kernel", "kernels-test/relu@v1:../../etc"], 2);
    assert!(
        e.contains("kernel build variant") && e.contains("../../etc"),
        "{e}"
    );
    // No folder named and no environment to choose by.
    let e = refused(&["--kernel", "kernels-test/relu@v1"], 2);
    assert!(
        e.contains("carries no Python environment with torch"),
        "{e}"
    );
    // A revision the Hub does not have, from a lock file.
    let lock = d.path().join("kernels.lock");
    let absent = "0".repeat(40);
    std::fs::write(
        &lock,
        format!(
            r#"[{{"dependency": {{"repo-id": "kernels-test/relu", "version": 1}},
                 "lock": {{"commit": "{absent}"}}}}]"#
        ),
    )
    .unwrap();
    let lock_arg = lock.to_str().unwrap();
    let e = refused(
        &[
            "--kernels-lock",
            lock_arg,
            "--kernel",
            "kernels-test/relu@v1:torch-cpu",
        ],
        1,
    );
    assert!(
        e.contains(&format!("kernel kernels-test/relu@{absent}")),
        "{e}"
    );
    // A lock too large to be one.
    std::fs::write(&lock, vec![b' '; (1 << 20) + 1]).unwrap();
    let e = refused(&["--kernels-lock", lock_arg], 2);
    assert!(e.contains("kernels.lock that large is refused"), "{e}");
}

/// Without folders named, the bundle's own environments choose: torch
/// 2.11 from PyPI runs on CUDA 13.0 (its `nvidia-cuda-runtime==13.0.96`),
/// so of the amd64 builds only `torch211-cxx11-cu130-x86_64-linux` loads.
#[test]
fn the_environments_carried_choose_the_folders() {
    let fx = fixture();
    let d = tempfile::tempdir().unwrap();
    let out = d.path().join("b");
    let o = crate::python::create(&fx, &fx.raw_github_url(), d.path(), &out)
        .args([
            "--python-env",
            "site=torch==2.11.0",
            "--python-interpreter",
            "none",
        ])
        .args(["--kernel", "kernels-test/relu@v1"])
        .arg("--hf-endpoint")
        .arg(fx.hf_endpoint())
        .env_remove("HF_TOKEN")
        .env_remove("HF_ENDPOINT")
        .output()
        .unwrap();
    crate::create::common::ok(&o);
    let m = crate::create::common::manifest_of_dir(&out);
    let k = m.repos[0].kernel.as_ref().unwrap();
    assert_eq!(k.variants, ["torch211-cxx11-cu130-x86_64-linux"]);
}
