use super::*;

#[test]
fn hub_paths_become_files_and_repositories() {
    assert_eq!(
        want_of("hub_resolve", "/acme/tiny/resolve/main/sub/w%20x.bin"),
        Ok(Want::HubFile {
            kind: RepoKind::Model,
            id: "acme/tiny".into(),
            revision: "main".into(),
            path: "sub/w x.bin".into(),
        })
    );
    assert_eq!(
        want_of(
            "hub_resolve",
            "/datasets/acme/data/resolve/refs%2Fpr%2F1/a.csv"
        ),
        Ok(Want::HubFile {
            kind: RepoKind::Dataset,
            id: "acme/data".into(),
            revision: "refs/pr/1".into(),
            path: "a.csv".into(),
        })
    );
    let repo = |rev: &str| Want::HubRepo {
        kind: RepoKind::Model,
        id: "acme/big".into(),
        revision: rev.into(),
    };
    assert_eq!(
        want_of("hub_info", "/api/models/acme/big"),
        Ok(repo("main"))
    );
    assert_eq!(
        want_of("hub_revision", "/api/models/acme/big/revision/v1.0"),
        Ok(repo("v1.0"))
    );
    assert_eq!(
        want_of("hub_tree", "/api/models/acme/big/tree/dev/sub"),
        Ok(repo("dev"))
    );
}

#[test]
fn releases_and_environments() {
    assert_eq!(
        want_of(
            "github_download",
            "/ggml-org/llama.cpp/releases/download/b6123/llama-b6123-bin-ubuntu-x64.zip"
        ),
        Ok(Want::ReleaseAsset {
            repo: "ggml-org/llama.cpp".into(),
            tag: "b6123".into(),
            asset: "llama-b6123-bin-ubuntu-x64.zip".into(),
        })
    );
    assert_eq!(
        want_of(
            "github_release",
            "/api/v3/repos/astral-sh/uv/releases/tags/0.12.20"
        ),
        Ok(Want::Release {
            repo: "astral-sh/uv".into(),
            tag: "0.12.20".into(),
        })
    );
    assert_eq!(
        want_of("pypi", "/pypi/tools-amd64/simple/Rich_Text/"),
        Ok(Want::PythonProject {
            env: "tools-amd64".into(),
            project: "rich-text".into(),
        })
    );
}

#[test]
fn a_quant_tag_becomes_the_gguf_files_that_hold_it_as_a_word() {
    assert_eq!(
        want_of("hub_manifests", "/v2/acme/tiny/manifests/latest"),
        Ok(Want::HubQuant {
            id: "acme/tiny".into(),
            tag: "Q4_K_M".into()
        })
    );
    let q = |p: &str| holds_quant("q4_k_m", p);
    for yes in [
        "tiny-Q4_K_M.gguf",
        "Q4_K_M.gguf",
        "Q4_K_M/tiny-Q4_K_M-00001-of-00002.GGUF",
    ] {
        assert!(q(yes), "{yes}");
    }
    for no in ["tiny-Q4_K_M.bin", "tiny-Q8_0.gguf", "tinyQ4_K_M.gguf"] {
        assert!(!q(no), "{no}");
    }
    assert!(!holds_quant("Q4_K", "tiny-Q4_K_M.gguf"));
}

#[test]
fn an_image_needs_the_registry_containerd_named() {
    assert_eq!(
        want_of("oci_manifest", "/v2/acme/app/manifests/1.0?ns=ghcr.io"),
        Ok(Want::Image {
            reference: "ghcr.io/acme/app:1.0".into()
        })
    );
    assert_eq!(
        want_of("oci", "/v2/library/alpine/manifests/sha256:ab?ns=docker.io"),
        Ok(Want::Image {
            reference: "docker.io/library/alpine@sha256:ab".into()
        })
    );
}

#[test]
fn what_cannot_be_planned_says_why() {
    for (route, path, says) in [
        (
            "hub_resolve",
            "/acme/tiny/resolve/main/..%2F..%2Fetc",
            "file path",
        ),
        ("hub_resolve", "/spaces/acme/app/resolve/main/x", "Space"),
        (
            "github_latest",
            "/o/r/releases/latest/download/x",
            "names no version",
        ),
        ("oci_manifest", "/v2/acme/app/manifests/1.0", "--image"),
        (
            "oci_manifest",
            "/v2/charts/app/manifests/1.2.0",
            "--chart oci://REGISTRY/REPOSITORY:1.2.0",
        ),
        ("charts", "/charts/app-1.2.0.tgz", "--chart oci://"),
        (
            "oci_blob",
            "/v2/acme/app/blobs/sha256:00?ns=ghcr.io",
            "manifest's miss",
        ),
        (
            "hub_manifests",
            "/v2/acme/tiny/manifests/Q4*K",
            "quantization tag",
        ),
        (
            "hub_manifests",
            "/v2/acme/tiny/x/manifests/Q4_K_M",
            "--model",
        ),
        ("pypi", "/pypi/tools-amd64/simple/", "no environment"),
        (
            "uv_python_downloads",
            "/uv/python-downloads.json",
            "--engine uv",
        ),
        (
            "extras",
            "/extras/openaipublic.blob.core.windows.net/encodings/o200k_base.tiktoken",
            "with the engine that fetches it",
        ),
        ("not_found", "/whatever", "of this shape"),
    ] {
        let e = want_of(route, path).unwrap_err();
        assert!(e.contains(says), "{path}: {e}");
    }
}

#[test]
fn a_kernel_s_listing_for_a_node_wants_that_node_s_build() {
    let w = want_of(
        "hub_kernel_build",
        "/api/kernels/kernels-test/relu/tree/v2/build?for=none,cpu,x86_64",
    )
    .unwrap();
    let Want::KernelBuild { id, revision, node } = w else {
        panic!("{w:?}")
    };
    assert_eq!(
        (id.as_str(), revision.as_str()),
        ("kernels-test/relu", "v2")
    );
    assert_eq!(node.short(), "none,cpu,x86_64");
    for (route, path) in [
        (
            "hub_tree",
            "/api/kernels/o/n/tree/v2/build?for=none,cpu,x86_64",
        ),
        (
            "hub_kernel_build",
            "/api/kernels/o/n/tree/v2/build?for=none,cpu,../x",
        ),
        (
            "hub_kernel_build",
            "/api/kernels/o/n/tree/v2?for=none,cpu,x86_64",
        ),
    ] {
        assert!(want_of(route, path).is_err(), "{route} {path}");
    }
    let f = want_of(
        "hub_resolve",
        "/kernels/o/n/resolve/v1/build/torch-cpu/x.py",
    )
    .unwrap();
    assert!(
        matches!(
            f,
            Want::HubFile {
                kind: RepoKind::Kernel,
                ..
            }
        ),
        "{f:?}"
    );
}
