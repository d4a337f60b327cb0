//! `node_env`: what is named for what is held, and the install lines.

use std::collections::BTreeSet;

use super::holds::EnvFacts;
use super::*;

#[test]
fn only_what_is_held_is_named_and_never_both_uv_python_variables() {
    let empty = node_env(&Holds::default(), "http://m:8080/");
    assert!(empty.variables.is_empty() && empty.python_envs.is_empty());
    let h = Holds {
        hub: true,
        interpreters: true,
        envs: ["tools-amd64".to_string()].into(),
        own_python: [("tools-amd64".to_string(), "3.11".to_string())].into(),
        uv_locks: BTreeSet::new(),
        releases: [("ggml-org/llama.cpp".to_string(), "b6123".to_string())].into(),
        registries: ["docker.io".to_string()].into(),
        charts: false,
        extras: Default::default(),
        extras_left_out: Default::default(),
        companions: [(
            "tools-amd64".to_string(),
            [("flashinfer-cubin".to_string(), "0.6.13".to_string())].into(),
        )]
        .into(),
        facts: [(
            "tools-amd64".to_string(),
            EnvFacts::of(false, &["gcc".to_string()], "x86_64-manylinux_2_31"),
        )]
        .into(),
    };
    let e = node_env(&h, "http://m:8080");
    let names: Vec<&str> = e.variables.iter().map(|v| v.name.as_str()).collect();
    assert_eq!(
        names,
        [
            "HF_ENDPOINT",
            "MODEL_ENDPOINT",
            "UV_PYTHON_DOWNLOADS_JSON_URL"
        ]
    );
    let shell = e.to_shell();
    assert!(!shell.contains("UV_PYTHON_INSTALL_MIRROR="), "{shell}");
    assert!(
        shell.contains("#   no interpreter carried: the node brings its own CPython 3.11\n"),
        "{shell}"
    );
    assert!(
        shell.contains("\nexport UV_DEFAULT_INDEX=http://m:8080/pypi/tools-amd64/simple "),
        "{shell}"
    );
    // No interpreter carried: uv never reaches for GitHub; what the
    // node must have is said.
    assert!(shell.contains(" UV_PYTHON_DOWNLOADS=never"), "{shell}");
    assert!(
        shell.contains("#   nodes need: glibc 2.31 or newer; OS packages gcc\n"),
        "{shell}"
    );
    assert!(
        shell.contains("server = \"https://registry-1.docker.io\""),
        "{shell}"
    );
    assert!(
        shell.contains(" FLASHINFER_NO_DOWNLOAD=1\n")
            && shell.contains("#   flashinfer-cubin held: leave FLASHINFER_CUBIN_DIR unset"),
        "{shell}"
    );
    assert_eq!(
        e.releases[0].download,
        "http://m:8080/ggml-org/llama.cpp/releases/download/b6123/"
    );

    // FlashInfer's CuTe DSL kernels held: the repository at the mirror,
    // and no FLASHINFER_NO_DOWNLOAD, which would refuse to fetch them.
    let repo = llmgw_shared::recipe::FLASHINFER_CUBINS_PATH;
    let dsl = Holds {
        extras: [(
            "edge.urm.nvidia.com".to_string(),
            format!(
                "{repo}5b34f84266cbc2135066ce96885b664992535670/fmha/cute-dsl/x86_64/sm_100a/a.so"
            ),
        )]
        .into(),
        ..h
    };
    let shell = node_env(&dsl.clone(), "http://m:8080").to_shell();
    assert!(!shell.contains("FLASHINFER_NO_DOWNLOAD"), "{shell}");
    assert!(
        shell.contains(&format!(
            "#   export FLASHINFER_CUBINS_REPOSITORY=http://m:8080/extras/edge.urm.nvidia.com/{repo}\n"
        )),
        "{shell}"
    );
}

/// #47 items 2 and 3: an environment made with overrides names only its
/// lock (no index a node could resolve from); a site's `uv.lock` is
/// synced without its own project, which the node does not have.
#[test]
fn overrides_install_from_the_lock_and_a_site_lock_skips_its_project() {
    let h = Holds {
        envs: ["vllm-0-34-0-amd64".to_string(), "site".to_string()].into(),
        uv_locks: ["site".to_string()].into(),
        facts: [(
            "vllm-0-34-0-amd64".to_string(),
            EnvFacts::of(true, &[], "x86_64-manylinux_2_35"),
        )]
        .into(),
        ..Holds::default()
    };
    let e = node_env(&h, "http://m:8080");
    let vllm = &e.python_envs[1];
    assert_eq!(vllm.name, "vllm-0-34-0-amd64");
    assert!(
        vllm.variables
            .iter()
            .all(|v| v.name != "UV_DEFAULT_INDEX" && v.name != "PIP_INDEX_URL")
    );
    assert_eq!(
        vllm.install,
        ["uv pip install -r http://m:8080/pypi/vllm-0-34-0-amd64/pylock.toml"]
    );
    let site = &e.python_envs[0];
    assert!(
        site.install[0].ends_with("&& uv sync --frozen --no-install-project"),
        "{:?}",
        site.install
    );
    let shell = e.to_shell();
    assert!(
        shell.contains("#   only from its lock: uv pip install -r "),
        "{shell}"
    );
    assert!(!shell.contains("pypi/vllm-0-34-0-amd64/simple"), "{shell}");
    assert!(!shell.contains("UV_PYTHON_DOWNLOADS=never"), "{shell}");
    assert_eq!(vllm.glibc.as_deref(), Some("2.35"));
}

/// #47 item 4: the runtime extras a bundle left out are said (what `mirror
/// list` shows as gaps), unless another held bundle carries them; a
/// reason from a bundle is escaped.
#[test]
fn extras_left_out_are_named_unless_another_bundle_carries_them() {
    let host = "openaipublic.blob.core.windows.net";
    let cl100k = format!("runtime extra {host}/encodings/cl100k_base.tiktoken");
    let o200k = format!("runtime extra {host}/encodings/o200k_base.tiktoken");
    let dsl = "vllm-amd64: FlashInfer 0.6.13 CuTe DSL FMHA kernels".to_string();
    let h = Holds {
        extras: [(
            host.to_string(),
            "encodings/o200k_base.tiktoken".to_string(),
        )]
        .into(),
        extras_left_out: [
            (
                cl100k.clone(),
                "--no-extras: left out\x1b[2J; vllm fetch it".to_string(),
            ),
            (o200k.clone(), "--no-extras: left out".to_string()),
            (dsl.clone(), "--no-extras: left out".to_string()),
        ]
        .into(),
        ..Holds::default()
    };
    let e = node_env(&h, "http://m:8080");
    let whats: Vec<&str> = e.extras_left_out.iter().map(|l| l.what.as_str()).collect();
    assert_eq!(whats, [cl100k.as_str(), dsl.as_str()]);
    let shell = e.to_shell();
    assert!(
        shell.contains("# not on this mirror: 2 runtime extras a node's engine fetches"),
        "{shell}"
    );
    assert!(
        shell.contains(&format!("#   {cl100k}: --no-extras: left out\\u{{1b}}[2J")),
        "{shell}"
    );
    assert!(!shell.contains('\x1b'), "{shell}");
    let json = serde_json::to_value(&e).expect("serializes");
    assert_eq!(json["extras_left_out"][1]["what"], dsl.as_str());
    // Held DSL kernels answer the DSL gap; nothing left out, no line.
    let kernel = format!(
        "{}x/fmha/cute-dsl/x86_64/sm_100a/a.so",
        llmgw_shared::recipe::FLASHINFER_CUBINS_PATH
    );
    let all = Holds {
        extras: [
            (
                host.to_string(),
                "encodings/o200k_base.tiktoken".to_string(),
            ),
            (
                host.to_string(),
                "encodings/cl100k_base.tiktoken".to_string(),
            ),
            ("edge.urm.nvidia.com".to_string(), kernel),
        ]
        .into(),
        ..h
    };
    let e = node_env(&all, "http://m:8080");
    assert!(e.extras_left_out.is_empty(), "{:?}", e.extras_left_out);
    assert!(!e.to_shell().contains("not on this mirror"));
}
