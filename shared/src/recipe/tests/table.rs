//! The table as a whole: uv, the engine list, `builds` over many engines
//! and architectures, version checks and the JSON keys.

use super::*;

#[test]
fn uv_is_one_archive_per_architecture() {
    for (arch, name) in [("amd64", "x86_64"), ("arm64", "aarch64")] {
        for h in [Host::without_gpu(arch), gpu(arch, "580", 8.0)] {
            assert_eq!(
                ok("uv", UV_VERSION, None, &h),
                vec![Build {
                    variant: name.into(),
                    assets: vec![format!("uv-{name}-unknown-linux-gnu.tar.gz")],
                    binary: "uv".into(),
                    ..Build::default()
                }]
            );
        }
    }
    // As in the Go table, uv has one build and a chosen variant is ignored.
    assert_eq!(
        variants(&ok(
            "uv",
            UV_VERSION,
            Some("cuda"),
            &Host::without_gpu("amd64")
        )),
        ["x86_64"]
    );
    assert_eq!(
        err("uv", UV_VERSION, None, &Host::without_gpu("s390x")).to_string(),
        "uv publishes no Linux build for s390x; it has builds for amd64 and arm64"
    );
}

#[test]
fn unknown_engine_lists_the_known_ones() {
    let e = err("ollama", "1.0", None, &Host::without_gpu("amd64"));
    assert!(!e.is_not_here());
    let want = "llmgw does not know how to install \"ollama\"; it knows llamacpp, sglang, uv, vllm";
    assert_eq!(e.to_string(), want);
    assert_eq!(
        builds("ollama", "1.0", "amd64").unwrap_err().to_string(),
        want
    );
}

#[test]
fn installable_is_every_engine_but_uv() {
    assert_eq!(installable(), ["llamacpp", "sglang", "vllm"]);
}

#[test]
fn recipes_name_their_repo_or_pypi_project() {
    let r = |e| recipe(e).unwrap();
    assert_eq!(r("llamacpp").repo(), Some("ggml-org/llama.cpp"));
    assert_eq!(r("uv").repo(), Some("astral-sh/uv"));
    assert_eq!((r("vllm").repo(), r("vllm").pypi()), (None, Some("vllm")));
    assert_eq!(
        (r("sglang").repo(), r("sglang").pypi()),
        (None, Some("sglang"))
    );
    assert_eq!(r("llamacpp").pypi(), None);
    assert_eq!(r("vllm").name(), "vllm");
}

#[test]
fn builds_llamacpp_amd64_is_cpu_and_every_gpu_build() {
    let bs = builds("llamacpp", V, "amd64").unwrap();
    let got: Vec<(&str, Vec<&str>)> = bs
        .iter()
        .map(|b| {
            (
                b.variant.as_str(),
                b.assets.iter().map(String::as_str).collect(),
            )
        })
        .collect();
    assert_eq!(
        got,
        vec![
            ("cpu", vec!["llama-b6123-bin-ubuntu-x64.tar.gz"]),
            (
                "cuda-13.3",
                vec![
                    "llama-b6123-bin-ubuntu-cuda-13.3-x64.tar.gz",
                    "cudart-llama-b6123-bin-ubuntu-cuda-13.3-x64.tar.gz"
                ]
            ),
            (
                "cuda-12.8",
                vec![
                    "llama-b6123-bin-ubuntu-cuda-12.8-x64.tar.gz",
                    "cudart-llama-b6123-bin-ubuntu-cuda-12.8-x64.tar.gz"
                ]
            ),
            ("vulkan", vec!["llama-b6123-bin-ubuntu-vulkan-x64.tar.gz"]),
        ]
    );
}

#[test]
fn builds_llamacpp_arm64_has_no_cuda_12_8() {
    let bs = builds("llamacpp", V, "arm64").unwrap();
    assert_eq!(variants(&bs), ["cpu", "cuda-13.3", "vulkan"]);
    assert_eq!(bs[0].assets, ["llama-b6123-bin-ubuntu-arm64.tar.gz"]);
}

#[test]
fn builds_uv_dedups_the_same_build_asked_twice() {
    let bs = builds("uv", UV_VERSION, "arm64").unwrap();
    assert_eq!(variants(&bs), ["aarch64"]);
    assert_eq!(bs[0].assets, ["uv-aarch64-unknown-linux-gnu.tar.gz"]);
    assert_eq!(
        variants(&builds("uv", UV_VERSION, "amd64").unwrap()),
        ["x86_64"]
    );
}

#[test]
fn builds_for_an_unknown_arch_says_why_once() {
    let e = builds("llamacpp", V, "riscv64").unwrap_err();
    assert!(matches!(e, RecipeError::NoBuild { ref reasons, .. } if reasons.len() == 1));
    assert_eq!(
        e.to_string(),
        "no build of llamacpp b6123 for riscv64: llama.cpp publishes no Linux build for \
         riscv64; it has builds for amd64 and arm64"
    );
    assert_eq!(
        builds("uv", UV_VERSION, "").unwrap_err().to_string(),
        "no build of uv 0.12.20 for : uv publishes no Linux build for an unrecognised system; \
         it has builds for amd64 and arm64"
    );
}

#[test]
fn builds_refuses_python_engines_with_the_reason() {
    for engine in ["vllm", "sglang"] {
        let e = builds(engine, "0.20.0", "amd64").unwrap_err();
        assert!(!e.is_not_here());
        assert_eq!(
            e.to_string(),
            format!(
                "{engine} is installed from PyPI as a Python environment, not from release \
                 archives; see its environments. The engines with release archives are \
                 llamacpp, uv"
            )
        );
    }
}

const BAD_VERSIONS: [&str; 12] = [
    "../x", "a/b", "", "-1", "b1 2", ".", "..", ".hidden", "b6123\n", "a\\b", "+1", "v1;rm",
];

#[test]
fn bad_versions_are_refused_everywhere() {
    let hosts = [Host::without_gpu("amd64"), gpu("amd64", "9999", 8.6)];
    for v in BAD_VERSIONS {
        for r in &RECIPES {
            for h in &hosts {
                let e = r.candidates(v, None, h).unwrap_err();
                assert!(
                    matches!(e, RecipeError::InvalidVersion { .. }),
                    "{v:?} {}: {e}",
                    r.name()
                );
            }
        }
        for engine in ["llamacpp", "uv"] {
            let e = builds(engine, v, "amd64").unwrap_err();
            assert!(
                matches!(e, RecipeError::InvalidVersion { .. }),
                "{v:?}: {e}"
            );
        }
    }
    assert!(!valid_version(&"1".repeat(129)));
    assert!(valid_version(&"1".repeat(128)));
    assert_eq!(
        builds("llamacpp", "../x", "amd64").unwrap_err().to_string(),
        "\"../x\" is not a version of llamacpp: a version is a release name of letters, digits, \
         '.', '-' and '+' that starts with a letter or digit, such as b6123 or 0.20.0"
    );
    assert_eq!(
        err("vllm", "b1 2", None, &gpu("amd64", "580", 8.0)).to_string(),
        "\"b1 2\" is not a version of vllm: a version is a release name of letters, digits, \
         '.', '-' and '+' that starts with a letter or digit, such as b6123 or 0.20.0"
    );
}

#[test]
fn plain_release_names_are_versions() {
    for v in [
        "b6123",
        "0.20.0",
        "0.19.1+cu130",
        "1.0.0-rc1",
        "v0.20.0",
        "2",
    ] {
        assert!(valid_version(v), "{v}");
    }
    for v in BAD_VERSIONS {
        assert!(!valid_version(v), "{v:?}");
    }
}

#[test]
fn version_before_compares_dotted_numbers() {
    let cases = [
        ("0.19.1", "0.20", true),
        ("0.20.0", "0.20", false),
        ("0.20", "0.20.0", false),
        ("0.25.1", "0.26", true),
        ("v0.19", "0.20", true),
        ("0.4.10", "0.5", true),
        ("0.10", "0.5", false),
        ("1.0", "0.20", false),
        ("0.20rc1", "0.20", false),
        ("abc", "0.1", true),
        ("0.1", "", false),
        ("", "0.1", true),
    ];
    for (a, b, want) in cases {
        assert_eq!(version_before(a, b), want, "{a} before {b}");
    }
}

#[test]
fn leading_int_reads_the_major_version() {
    assert_eq!(leading_int("580.65.06"), 580);
    assert_eq!(leading_int(" 550 "), 550);
    assert_eq!(leading_int("abc"), 0);
    assert_eq!(leading_int(""), 0);
    assert_eq!(leading_int("99999999999999999999999"), u64::MAX);
}

#[test]
fn json_keys_are_snake_case_and_empty_ones_are_left_out() {
    let cpu = &builds("llamacpp", V, "amd64").unwrap()[0];
    assert_eq!(
        serde_json::to_string(cpu).unwrap(),
        r#"{"variant":"cpu","assets":["llama-b6123-bin-ubuntu-x64.tar.gz"],"packages":{"deb":["libgomp1"],"rpm":["libgomp"]},"binary":"llama-server","cpu_flags":["avx2"]}"#
    );
    let keys = |b: &Build| -> Vec<String> {
        match serde_json::to_value(b).unwrap() {
            serde_json::Value::Object(m) => m.keys().cloned().collect(),
            other => panic!("{other}"),
        }
    };
    let cu129 = &ok("vllm", "0.20.0", Some("cu129"), &gpu("amd64", "580", 8.0))[0];
    assert_eq!(
        keys(cu129),
        [
            "variant",
            "packages",
            "binary",
            "python",
            "wheel",
            "extra_index",
            "index_packages",
            "gpu_check",
            "free_gb"
        ]
    );
    assert_eq!(
        serde_json::to_value(cu129).unwrap()["wheel"],
        serde_json::json!({"project": "vllm", "repo": "vllm-project/vllm", "tag": "v0.20.0",
            "prefix": "vllm-0.20.0+cu129-", "suffix": "_x86_64.whl"})
    );
    let v100 = &ok("vllm", "0.20.0", None, &gpu("amd64", "580", 7.0))[0];
    assert_eq!(
        keys(v100),
        [
            "variant",
            "packages",
            "binary",
            "python",
            "requirements",
            "gpu_check",
            "version",
            "note",
            "free_gb"
        ]
    );
    let sglang = &ok("sglang", "0.5.2", None, &gpu("amd64", "580", 8.0))[0];
    assert!(keys(sglang).contains(&"version_args".to_string()));
    let vulkan = &builds("llamacpp", V, "amd64").unwrap()[3];
    assert!(keys(vulkan).contains(&"gpu_backend".to_string()));
    // And back.
    for b in [cpu, cu129, v100, sglang, vulkan] {
        let back: Build = serde_json::from_str(&serde_json::to_string(b).unwrap()).unwrap();
        assert_eq!(&back, b);
    }
}
