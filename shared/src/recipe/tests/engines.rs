//! vLLM and SGLang: the wheel a machine gets by driver and compute
//! capability, the fallbacks and their notes, and where there is none.

use super::*;

#[test]
fn vllm_without_gpu_is_not_here_not_a_failure() {
    for arch in ["amd64", "arm64"] {
        let e = err("vllm", "0.20.0", None, &Host::without_gpu(arch));
        assert!(e.is_not_here(), "{e}");
        assert_eq!(
            e.to_string(),
            "vLLM runs on NVIDIA GPUs and this node has none; it serves llama.cpp models"
        );
    }
}

#[test]
fn vllm_unknown_arch_is_a_failure() {
    for h in [Host::without_gpu("ppc64le"), gpu("ppc64le", "580", 8.0)] {
        let e = err("vllm", "0.20.0", None, &h);
        assert!(!e.is_not_here());
        assert_eq!(
            e.to_string(),
            "vLLM publishes no Linux build for ppc64le; it has builds for amd64 and arm64"
        );
    }
}

fn vllm_pypi(variant: &str, v: &str) -> Build {
    Build {
        variant: variant.into(),
        python: "3.12".into(),
        requirements: vec![format!("vllm=={v}")],
        binary: "vllm".into(),
        packages: pk(&[("deb", &["gcc"]), ("rpm", &["gcc"])]),
        free_gb: 25,
        gpu_check: true,
        ..Build::default()
    }
}

#[test]
fn vllm_0_20_amd64_is_cuda_13_then_the_cu129_wheel() {
    let bs = ok("vllm", "0.20.0", None, &gpu("amd64", "580.65.06", 8.0));
    assert_eq!(bs.len(), 2);
    assert_eq!(bs[0], vllm_pypi("cu13", "0.20.0"));
    assert_eq!(
        bs[1],
        Build {
            requirements: Vec::new(),
            wheel: Some(Wheel {
                project: "vllm".into(),
                repo: "vllm-project/vllm".into(),
                tag: "v0.20.0".into(),
                prefix: "vllm-0.20.0+cu129-".into(),
                suffix: "_x86_64.whl".into(),
            }),
            extra_index: "https://download.pytorch.org/whl/cu129".into(),
            index_packages: vec!["torch".into(), "torchvision".into(), "torchaudio".into()],
            ..vllm_pypi("cu129", "0.20.0")
        }
    );
}

#[test]
fn vllm_0_20_driver_below_580_gets_cu129_below_525_nothing() {
    assert_eq!(
        variants(&ok("vllm", "0.20.0", None, &gpu("amd64", "550", 8.0))),
        ["cu129"]
    );
    assert_eq!(
        variants(&ok("vllm", "0.20.0", None, &gpu("amd64", "525", 8.0))),
        ["cu129"]
    );
    let e = err("vllm", "0.20.0", None, &gpu("amd64", "520", 8.0));
    assert!(!e.is_not_here());
    assert_eq!(
        e.to_string(),
        "no build of vLLM 0.20.0 runs on this node: vLLM 0.20.0 built for CUDA 13 needs NVIDIA \
         driver 580 or newer; this node has 520; vLLM 0.20.0 built for CUDA 12.9 needs NVIDIA \
         driver 525 or newer; this node has 520"
    );
    assert_eq!(
        err("vllm", "0.20.0", Some("cu13"), &gpu("amd64", "550", 8.0)).to_string(),
        "no build of vLLM 0.20.0 runs on this node: vLLM 0.20.0 built for CUDA 13 needs NVIDIA \
         driver 580 or newer; this node has 550"
    );
    assert_eq!(
        variants(&ok(
            "vllm",
            "0.20.0",
            Some("cu129"),
            &gpu("amd64", "580", 8.0)
        )),
        ["cu129"]
    );
}

#[test]
fn vllm_0_20_amd64_min_compute_is_7_5() {
    assert_eq!(
        variants(&ok("vllm", "0.20.0", None, &gpu("amd64", "580", 7.5))),
        ["cu13", "cu129"]
    );
    assert_eq!(
        variants(&ok("vllm", "0.21.1", None, &gpu("amd64", "9999", 0.0))),
        ["cu13", "cu129"]
    );
}

#[test]
fn vllm_before_0_20_amd64_is_the_cuda_12_pypi_build_from_7_0() {
    let bs = ok("vllm", "0.19.1", None, &gpu("amd64", "550", 7.0));
    assert_eq!(bs, vec![vllm_pypi("cu12", "0.19.1")]);
    assert_eq!(
        err("vllm", "0.19.1", None, &gpu("amd64", "520", 8.0)).to_string(),
        "no build of vLLM 0.19.1 runs on this node: vLLM 0.19.1 needs NVIDIA driver 525 or \
         newer; this node has 520"
    );
    // With "v" in front, still before 0.20.
    assert_eq!(
        variants(&ok("vllm", "v0.19.1", None, &gpu("amd64", "580", 8.0))),
        ["cu12"]
    );
}

#[test]
fn vllm_before_0_20_cu129_is_the_cu12_build_and_cu13_is_not_there() {
    assert_eq!(
        ok("vllm", "0.19.1", Some("cu129"), &gpu("amd64", "580", 8.0)),
        vec![vllm_pypi("cu12", "0.19.1")]
    );
    assert_eq!(
        err("vllm", "0.19.1", Some("cu13"), &gpu("amd64", "580", 8.0)).to_string(),
        "vLLM 0.19.1 has no build \"cu13\" here; it has cu12"
    );
    assert_eq!(
        err("vllm", "0.20.0", Some("cu12"), &gpu("amd64", "580", 8.0)).to_string(),
        "vLLM 0.20.0 has no build \"cu12\" here; it has cu13, cu129"
    );
}

#[test]
fn vllm_v100_falls_back_to_0_19_1_with_a_note() {
    let bs = ok("vllm", "0.20.0", None, &gpu("amd64", "580", 7.0));
    assert_eq!(
        bs,
        vec![Build {
            version: "0.19.1".into(),
            note: "vLLM 0.19.1, the newest built for compute capability 7.0, instead of 0.20.0"
                .into(),
            ..vllm_pypi("cu12", "0.19.1")
        }]
    );
    // A later version and a 7.2 card (between Volta and Turing) too; the
    // CUDA 12.9 choice is the CUDA 12 build there is.
    let bs = ok("vllm", "0.21.0", Some("cu129"), &gpu("amd64", "550", 7.2));
    assert_eq!(variants(&bs), ["cu12"]);
    assert_eq!(bs[0].version, "0.19.1");
    assert_eq!(
        bs[0].note,
        "vLLM 0.19.1, the newest built for compute capability 7.2, instead of 0.21.0"
    );
    assert_eq!(
        err("vllm", "0.20.0", Some("cu13"), &gpu("amd64", "580", 7.0)).to_string(),
        "vLLM 0.19.1 has no build \"cu13\" here; it has cu12"
    );
    // The fallback still needs a CUDA 12 driver.
    assert_eq!(
        err("vllm", "0.20.0", None, &gpu("amd64", "510", 7.0)).to_string(),
        "no build of vLLM 0.19.1 runs on this node: vLLM 0.19.1 needs NVIDIA driver 525 or \
         newer; this node has 510"
    );
}

#[test]
fn vllm_for_compute_capability_6_is_none() {
    for v in ["0.19.1", "0.20.0"] {
        let e = err("vllm", v, None, &gpu("amd64", "580", 6.1));
        assert!(!e.is_not_here());
        assert_eq!(
            e.to_string(),
            "no vLLM is built for GPUs of compute capability 6.1 on amd64; the node serves \
             llama.cpp models"
        );
    }
}

#[test]
fn vllm_arm64_min_compute_is_8_7_before_0_20_and_8_0_since() {
    assert_eq!(
        variants(&ok("vllm", "0.19.1", None, &gpu("arm64", "550", 8.7))),
        ["cu12"]
    );
    assert_eq!(
        err("vllm", "0.19.1", None, &gpu("arm64", "580", 8.0)).to_string(),
        "no vLLM is built for GPUs of compute capability 8.0 on arm64; the node serves \
         llama.cpp models"
    );
    let bs = ok("vllm", "0.20.0", None, &gpu("arm64", "580", 8.0));
    assert_eq!(variants(&bs), ["cu13", "cu129"]);
    let wheel = bs[1]
        .wheel
        .as_ref()
        .map(|w| (w.prefix.as_str(), w.suffix.as_str()));
    assert_eq!(wheel, Some(("vllm-0.20.0+cu129-", "_aarch64.whl")));
    // No fallback on arm64: nothing older was built for its GPUs.
    assert_eq!(
        err("vllm", "0.20.0", None, &gpu("arm64", "580", 7.5)).to_string(),
        "no vLLM is built for GPUs of compute capability 7.5 on arm64; the node serves \
         llama.cpp models"
    );
}

fn sglang_build(variant: &str, v: &str) -> Build {
    Build {
        variant: variant.into(),
        python: "3.12".into(),
        requirements: vec![format!("sglang=={v}")],
        binary: "python".into(),
        version_args: vec![
            "-c".into(),
            "import sglang; print('sglang', sglang.__version__)".into(),
        ],
        packages: pk(&[("deb", &["gcc"]), ("rpm", &["gcc"])]),
        free_gb: 25,
        gpu_check: true,
        ..Build::default()
    }
}

/// SGLang's two eras, one row each: from 0.5 the CUDA 13 build on driver
/// 580 and Turing (7.5), before it the CUDA 12 build on driver 525 and
/// Volta (7.0).
#[test]
fn sglang_from_0_5_is_cuda_13_on_580_and_turing_before_it_cuda_12_on_525_and_volta() {
    // (version, its build, a driver it runs on, the least driver, one too
    // old, the least compute capability, an arch and a capability below
    // it, the build it lacks)
    let eras = [
        (
            "0.5.2",
            "cu13",
            "580",
            "580",
            "550",
            "7.5",
            ("arm64", "7.0"),
            "cu12",
        ),
        (
            "0.4.10",
            "cu12",
            "530",
            "525",
            "520",
            "7.0",
            ("amd64", "6.1"),
            "cu13",
        ),
    ];
    for (v, build, driver, least, old, cc, (arch, low), lacks) in eras {
        let number = |cc: &str| cc.parse::<f64>().unwrap();
        assert_eq!(
            ok("sglang", v, None, &gpu("amd64", driver, number(cc))),
            vec![sglang_build(build, v)]
        );
        assert_eq!(
            err("sglang", v, None, &gpu("amd64", old, 8.0)).to_string(),
            format!(
                "no build of SGLang {v} runs on this node: SGLang {v} needs NVIDIA driver \
                 {least} or newer; this node has {old}"
            )
        );
        assert_eq!(
            err("sglang", v, None, &gpu(arch, "580", number(low))).to_string(),
            format!(
                "no build of SGLang {v} runs on this node: SGLang {v} has kernels for compute \
                 capability {cc} and newer; this node has {low}"
            )
        );
        assert_eq!(
            err("sglang", v, Some(lacks), &gpu("amd64", "580", 8.0)).to_string(),
            format!("SGLang {v} has no build \"{lacks}\" here; it has {build}")
        );
    }
}

#[test]
fn sglang_without_gpu_is_not_here_and_unknown_arch_fails() {
    let e = err("sglang", "0.5.2", None, &Host::without_gpu("amd64"));
    assert!(e.is_not_here());
    assert_eq!(
        e.to_string(),
        "SGLang runs on NVIDIA GPUs and this node has none; it serves llama.cpp models"
    );
    let e = err("sglang", "0.5.2", None, &gpu("s390x", "580", 8.0));
    assert!(!e.is_not_here());
    assert_eq!(
        e.to_string(),
        "SGLang publishes no Linux build for s390x; it has builds for amd64 and arm64"
    );
}
