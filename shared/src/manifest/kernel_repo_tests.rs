use super::*;
use crate::manifest::{HfFile, KernelRepo};

fn env(arch: &str, runtime: Option<&str>, torch: Option<&str>) -> PythonEnv {
    let file = |project: &str, v: &str| {
        serde_json::json!({
            "project": project, "version": v, "filename": format!("{project}-{v}-x.whl"),
            "size": 1, "sha256": "0".repeat(64), "origin": "https://pypi.org/simple/",
            "publisher_digests": []
        })
    };
    let mut files: Vec<serde_json::Value> = torch.iter().map(|v| file("torch", v)).collect();
    if let Some(r) = runtime {
        let (project, v) = r.split_once('=').unwrap();
        files.push(file(project, v));
    }
    let json = serde_json::json!({
        "name": format!("e-{arch}"), "arch": arch, "python": "3.12",
        "platform": "x86_64-manylinux_2_28", "requirements": [], "indexes": [],
        "resolver": {"name": "uv", "version": "0.9"},
        "lock": {"sha256": "0".repeat(64), "size": 1},
        "files": files,
    });
    serde_json::from_value(json).unwrap()
}

#[test]
fn environments_name_their_nodes() {
    let targets = kernel_targets(&[
        env("amd64", None, Some("2.9.1+cu129")),
        env("arm64", Some("nvidia-cuda-runtime=13.0.96"), Some("2.10.0")),
        env("amd64", None, Some("2.9.0+cpu")),
        env("amd64", Some("nvidia-cuda-runtime-cu12=12.9.79"), None),
        env(
            "amd64",
            Some("nvidia-cuda-runtime-cu12=12.9.79"),
            Some("2.9.0"),
        ),
        env("arm64", None, Some("2.11.0")),
    ]);
    let shown: Vec<String> = targets.iter().map(|t| t.to_string()).collect();
    assert_eq!(
        shown,
        [
            "torch 2.9, cu129 on x86_64",
            "torch 2.10, cu130 on aarch64",
            "torch 2.9, cpu on x86_64",
            "torch 2.11, cpu on aarch64"
        ]
    );
}

fn kernel(files: &[&str], variants: &[&str]) -> HfRepo {
    HfRepo {
        kind: RepoKind::Kernel,
        id: crate::RepoId::parse("id", "acme/relu").unwrap(),
        revision: "v1".into(),
        ref_kind: None,
        commit: "a".repeat(40),
        patterns: vec![],
        files: files
            .iter()
            .map(|p| HfFile::describing(p, p.as_bytes(), false))
            .collect(),
        kernel: Some(KernelRepo {
            variants: variants.iter().map(|v| v.to_string()).collect(),
            trusted_publisher: true,
        }),
    }
}

#[test]
fn a_kernel_carries_only_the_folders_it_names() {
    let ok = kernel(
        &["README.md", "build/torch-cpu/relu/__init__.py"],
        &["torch-cpu"],
    );
    check_kernel_repo(&ok).unwrap();
    let other = kernel(&["build/torch-cuda/relu/__init__.py"], &["torch-cpu"]);
    let err = check_kernel_repo(&other).unwrap_err().to_string();
    assert!(
        err.contains("build/torch-cuda/relu/__init__.py") && err.contains("torch-cpu"),
        "{err}"
    );
    let loose = kernel(&["build/torch-cpu"], &["torch-cpu"]);
    assert!(check_kernel_repo(&loose).is_err());
    let bad = kernel(&[], &["torch29-nope"]);
    assert!(
        check_kernel_repo(&bad)
            .unwrap_err()
            .to_string()
            .contains("torch29-nope")
    );
    let mut unsaid = kernel(&[], &[]);
    unsaid.kernel = None;
    assert!(
        check_kernel_repo(&unsaid)
            .unwrap_err()
            .to_string()
            .contains("does not say")
    );
    let mut model = kernel(&[], &[]);
    model.kind = RepoKind::Model;
    assert!(
        check_kernel_repo(&model)
            .unwrap_err()
            .to_string()
            .contains("kind model")
    );
}
