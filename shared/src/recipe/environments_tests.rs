//! `environments()`: every branch of the table it asks, and what it keeps.

use super::*;

fn names(envs: &[Environment]) -> Vec<&str> {
    envs.iter().map(|e| e.name.as_str()).collect()
}

fn newest(arch: &str, cc: f64) -> Host {
    Host::nvidia(arch, "9999", cc)
}

#[test]
fn vllm_0_20_amd64_is_cu13_cu129_and_the_v100_fallback() {
    let envs = environments("vllm", "0.20.1", "amd64").unwrap();
    assert_eq!(
        names(&envs),
        [
            "vllm-0.20.1-cu13-amd64",
            "vllm-0.20.1-cu129-amd64",
            "vllm-0.19.1-cu12-amd64"
        ]
    );
    // Each keeps the table's build whole: the plain ones as the newest
    // driver gets them, the fallback as a V100 does, note included.
    let plain = candidates("vllm", "0.20.1", None, &newest("amd64", 0.0)).unwrap();
    assert_eq!(envs[0].build, plain[0]);
    assert_eq!(envs[1].build, plain[1]);
    let v100 = candidates("vllm", "0.20.1", None, &newest("amd64", 7.0)).unwrap();
    assert_eq!(envs[2].build, v100[0]);
    assert_eq!(
        envs[2].build.note,
        "vLLM 0.19.1, the newest built for compute capability 7.0, instead of 0.20.1"
    );
    let got: Vec<(&str, &str, &str)> = envs
        .iter()
        .map(|e| (e.engine.as_str(), e.version.as_str(), e.variant.as_str()))
        .collect();
    assert_eq!(
        got,
        [
            ("vllm", "0.20.1", "cu13"),
            ("vllm", "0.20.1", "cu129"),
            ("vllm", "0.19.1", "cu12")
        ]
    );
    assert!(envs.iter().all(|e| e.arch == "amd64"));
    // What the bundler resolves from.
    assert_eq!(envs[0].build.requirements, ["vllm==0.20.1"]);
    assert_eq!(envs[0].build.python, "3.12");
    assert_eq!(envs[0].build.packages["deb"], ["gcc"]);
    assert_eq!(envs[0].build.free_gb, 25);
    let cu129 = &envs[1].build;
    assert!(cu129.requirements.is_empty());
    assert_eq!(
        cu129.wheel,
        Some(Wheel {
            project: "vllm".into(),
            repo: "vllm-project/vllm".into(),
            tag: "v0.20.1".into(),
            prefix: "vllm-0.20.1+cu129-".into(),
            suffix: "_x86_64.whl".into(),
        })
    );
    assert_eq!(cu129.extra_index, "https://download.pytorch.org/whl/cu129");
    assert_eq!(cu129.index_packages, ["torch", "torchvision", "torchaudio"]);
    assert_eq!(envs[2].build.requirements, ["vllm==0.19.1"]);
}

#[test]
fn vllm_0_20_arm64_has_no_fallback() {
    let envs = environments("vllm", "0.20.1", "arm64").unwrap();
    assert_eq!(
        names(&envs),
        ["vllm-0.20.1-cu13-arm64", "vllm-0.20.1-cu129-arm64"]
    );
    let w = envs[1].build.wheel.as_ref().map(|w| w.suffix.as_str());
    assert_eq!(w, Some("_aarch64.whl"));
}

#[test]
fn vllm_0_19_1_is_its_cu12_build_once() {
    // Asked as the newest driver and as a V100, the same (version, variant)
    // comes back twice; it is listed once, as the plain build (no note).
    let envs = environments("vllm", "0.19.1", "amd64").unwrap();
    assert_eq!(names(&envs), ["vllm-0.19.1-cu12-amd64"]);
    assert!(envs[0].build.note.is_empty() && envs[0].build.version.is_empty());
    assert_eq!(
        names(&environments("vllm", "0.19.1", "arm64").unwrap()),
        ["vllm-0.19.1-cu12-arm64"]
    );
}

#[test]
fn sglang_is_cu13_from_0_5_and_cu12_before() {
    let envs = environments("sglang", "0.5.2", "amd64").unwrap();
    assert_eq!(names(&envs), ["sglang-0.5.2-cu13-amd64"]);
    assert_eq!(envs[0].build.requirements, ["sglang==0.5.2"]);
    assert_eq!(envs[0].build.binary, "python");
    assert_eq!(
        names(&environments("sglang", "0.4.10", "arm64").unwrap()),
        ["sglang-0.4.10-cu12-arm64"]
    );
}

#[test]
fn archive_engines_are_refused_with_the_python_ones() {
    for engine in ["llamacpp", "uv"] {
        let e = environments(engine, "b6123", "amd64").unwrap_err();
        assert_eq!(
            e.to_string(),
            format!(
                "{engine} is installed from release archives, not as a Python environment; \
                 the engines with Python environments are sglang, vllm"
            )
        );
    }
}

#[test]
fn unknown_arch_engine_and_bad_version_are_refused() {
    let e = environments("vllm", "0.20.1", "riscv64").unwrap_err();
    assert_eq!(
        e.to_string(),
        "no build of vllm 0.20.1 for riscv64: vLLM publishes no Linux build for riscv64; it has \
         builds for amd64 and arm64"
    );
    assert!(matches!(
        environments("ollama", "1", "amd64"),
        Err(RecipeError::UnknownEngine { .. })
    ));
    for v in ["../x", "", "0.20 1"] {
        assert!(
            matches!(
                environments("vllm", v, "amd64"),
                Err(RecipeError::InvalidVersion { .. })
            ),
            "{v:?}"
        );
    }
}

#[test]
fn json_nests_the_build() {
    let envs = environments("vllm", "0.20.1", "amd64").unwrap();
    let v = serde_json::to_value(&envs[2]).unwrap();
    assert_eq!(v["name"], "vllm-0.19.1-cu12-amd64");
    assert_eq!(v["version"], "0.19.1");
    assert_eq!(
        v["build"]["requirements"],
        serde_json::json!(["vllm==0.19.1"])
    );
    let back: Environment = serde_json::from_value(v).unwrap();
    assert_eq!(back, envs[2]);
}

#[test]
fn each_environment_carries_the_lowest_manylinux_its_wheels_need() {
    let tag = |engine: &str, v: &str| {
        environments(engine, v, "amd64")
            .unwrap()
            .into_iter()
            .map(|e| (e.name, e.manylinux))
            .collect::<Vec<_>>()
    };
    // The fallback for older GPUs is another version, with its own figure.
    assert_eq!(
        tag("vllm", "0.20.1"),
        [
            ("vllm-0.20.1-cu13-amd64".to_string(), "2_35".to_string()),
            ("vllm-0.20.1-cu129-amd64".to_string(), "2_35".to_string()),
            ("vllm-0.19.1-cu12-amd64".to_string(), "2_31".to_string()),
        ]
    );
    assert_eq!(tag("vllm", "0.33.0")[0].1, "2_31");
    let arm = environments("vllm", "0.33.0", "arm64").unwrap();
    assert_eq!(arm[0].manylinux, "2_34");
    assert_eq!(tag("sglang", "0.5.10")[0].1, "2_28");
    assert_eq!(tag("sglang", "0.5.23")[0].1, "2_34");
}

#[test]
fn a_variant_picks_one_environment_of_the_version() {
    let picked = environments_of("vllm", "0.33.0", Some("cu13"), "amd64").unwrap();
    let names: Vec<&str> = picked.iter().map(|e| e.name.as_str()).collect();
    assert_eq!(names, ["vllm-0.33.0-cu13-amd64"]);
    assert_eq!(
        environments_of("vllm", "0.33.0", None, "amd64")
            .unwrap()
            .len(),
        3
    );
    // The fallback's variant is not one of the version asked for.
    let e = environments_of("vllm", "0.33.0", Some("cu12"), "amd64").unwrap_err();
    assert_eq!(
        e.to_string(),
        "vllm 0.33.0 for amd64 has no build \"cu12\" here; it has cu13, cu129"
    );
}
