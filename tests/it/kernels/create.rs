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
    // A lock too large to be one; a lock that is not there.
    std::fs::write(&lock, vec![b' '; (1 << 20) + 1]).unwrap();
    let e = refused(&["--kernels-lock", lock_arg], 2);
    assert!(e.contains("kernels.lock that large is refused"), "{e}");
    let gone = d.path().join("gone.lock");
    let e = refused(&["--kernels-lock", gone.to_str().unwrap()], 2);
    assert!(e.contains("gone.lock: cannot be read"), "{e}");
    // No vN branch to take without a revision: the branches named.
    let e = refused(&["--kernel", "kernels-test/cpu-only:torch-cpu"], 1);
    assert!(
        e.contains("has no vN branch (its branches: docs, main)"),
        "{e}"
    );
    // A revision with nothing under build/.
    let e = refused(&["--kernel", "kernels-test/cpu-only@docs:torch-cpu"], 1);
    assert!(
        e.contains("nothing under build/") && e.contains(llmgw_fixture::DOCS_ONLY_COMMIT),
        "{e}"
    );
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
    let m = super::imported(&out, &d.path().join("store"));
    let k = m.repos[0].kernel.as_ref().unwrap();
    assert_eq!(k.variants, ["torch211-cxx11-cu130-x86_64-linux"]);

    // A kernel with no build the environment's node loads: refused naming
    // the node and each folder's reason; with --allow-missing, a gap.
    let only_cpu = |out: &std::path::Path, extra: &[&str]| {
        crate::python::create(&fx, &fx.raw_github_url(), d.path(), out)
            .args([
                "--python-env",
                "site=torch==2.11.0",
                "--python-interpreter",
                "none",
            ])
            .args(["--kernel", "kernels-test/cpu-only@main", "--hf-endpoint"])
            .arg(fx.hf_endpoint())
            .args(extra)
            .env_remove("HF_TOKEN")
            .env_remove("HF_ENDPOINT")
            .output()
            .unwrap()
    };
    let e = crate::create::common::fails(&only_cpu(&d.path().join("x"), &[]), 1);
    assert!(
        e.contains("no build folder loads on the nodes of torch 2.11, cu130 on x86_64")
            && e.contains("torch-cpu (backend (cpu) does not match system backend (cuda)"),
        "{e}"
    );
    let gapped = d.path().join("gapped");
    crate::create::common::ok(&only_cpu(&gapped, &["--allow-missing"]));
    let m = super::imported(&gapped, &d.path().join("store-gapped"));
    assert!(
        m.gaps
            .iter()
            .any(|g| g.reason.contains("no build folder loads")),
        "{:?}",
        m.gaps
    );
    assert!(m.repos.is_empty(), "a kernel no node loads is not carried");
}

/// The owner's overview, served from what create recorded: HEAD answers
/// GET's headers; an owner of no held kernel is the Hub's 404, named.
#[test]
fn the_overview_answers_head_as_get_and_only_for_held_owners() {
    let fx = fixture();
    let d = tempfile::tempdir().unwrap();
    carried(
        &fx,
        d.path(),
        &["--kernel", "kernels-test/relu@v1:torch-cpu"],
    );
    let server = crate::bundle_kit::Server::start(&d.path().join("store"));
    server.wait_for("/readyz", 200);
    let headers = |method: &str, path: &str| {
        let how = if method == "HEAD" { "-I" } else { "-XGET" };
        let o = std::process::Command::new("curl")
            .args(["-s", "-o", "/dev/null", "-D", "-", how])
            .arg(format!("{}{path}", server.url))
            .output()
            .unwrap();
        let mut h: Vec<String> = String::from_utf8_lossy(&o.stdout)
            .lines()
            .filter(|l| !l.to_ascii_lowercase().starts_with("date:"))
            .map(str::to_string)
            .collect();
        h.sort();
        h
    };
    for path in [
        "/api/organizations/kernels-test/overview",
        "/api/kernels/kernels-test/relu/tree/v1/build",
        "/api/organizations/acme%00%1b/overview",
    ] {
        assert_eq!(headers("GET", path), headers("HEAD", path), "{path}");
    }
    let (code, body) = server.get("/api/organizations/kernels-test/overview");
    let v: serde_json::Value = serde_json::from_slice(&body).unwrap();
    assert_eq!(
        (code, v["trustedKernelPublisher"].as_bool()),
        (200, Some(true))
    );
    let (code, body) = server.get("/api/organizations/acme%00%1b/overview");
    let said = String::from_utf8_lossy(&body);
    assert!(code == 404 || code == 400, "{code} {said}");
    assert!(
        !said.contains('\u{1b}') && !said.contains('\u{0}'),
        "{said:?}"
    );
}

/// The Hub answering the owner's overview with neither 200 nor 404 (a 503
/// on every one of create's attempts) refuses the kernel, naming the owner,
/// the URL and the status: create cannot say whether the client will trust
/// the publisher, so it records nothing rather than a guess.
#[test]
fn an_overview_the_hub_cannot_answer_refuses_the_kernel() {
    let fx = fixture();
    let path = "/api/organizations/kernels-test/overview";
    fx.faults().set(
        path.to_string(),
        llmgw_fixture::Fault {
            refuse: Some(llmgw_fixture::Refuse {
                after: 0,
                times: 100,
                status: 503,
            }),
            ..Default::default()
        },
    );
    let d = tempfile::tempdir().unwrap();
    let out = d.path().join("x");
    let mut c = create(&fx, d.path());
    c.args(["--arch", "amd64", "--out"])
        .arg(&out)
        .args(["--kernel", "kernels-test/relu@v1:torch-cpu"]);
    let e = fails(&run(&mut c), 1);
    let url = format!("{}{path}", fx.hf_endpoint());
    assert!(
        e.contains(&format!(
            "kernel kernels-test/relu@v1: the Hub's overview of its publisher kernels-test \
             ({url}) could not be read"
        )),
        "{e}"
    );
    assert!(e.contains("503"), "{e}");
    let asked = fx.requests().iter().filter(|r| r.path == path).count();
    assert!(asked > 1, "a 503 is tried again: asked {asked} times; {e}");
    assert!(!out.exists(), "nothing written at --out");
    assert!(
        std::fs::read_dir(d.path())
            .unwrap()
            .flatten()
            .all(|f| f.file_name() == "cache"),
        "only the cache beside it"
    );
}
