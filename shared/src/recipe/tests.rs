//! Every decision of the Go table, as a case: which builds a machine gets,
//! in which order, with which files, and the words of every refusal.

use super::*;

const V: &str = "b6123";

fn variants(bs: &[Build]) -> Vec<&str> {
    bs.iter().map(|b| b.variant.as_str()).collect()
}

fn gpu(arch: &str, driver: &str, cc: f64) -> Host {
    Host::nvidia(arch, driver, cc)
}

fn ok(engine: &str, version: &str, variant: Option<&str>, h: &Host) -> Vec<Build> {
    match candidates(engine, version, variant, h) {
        Ok(bs) => bs,
        Err(e) => panic!("{engine} {version} {variant:?} on {h:?}: {e}"),
    }
}

fn err(engine: &str, version: &str, variant: Option<&str>, h: &Host) -> RecipeError {
    match candidates(engine, version, variant, h) {
        Ok(bs) => panic!("{engine} {version} on {h:?} gave {:?}", variants(&bs)),
        Err(e) => e,
    }
}

fn llama(h: &Host) -> Vec<String> {
    ok("llamacpp", V, None, h)
        .iter()
        .map(|b| b.variant.clone())
        .collect()
}

fn pk(pairs: &[(&str, &[&str])]) -> std::collections::BTreeMap<String, Vec<String>> {
    packages(pairs)
}

// --- llama.cpp ---

#[test]
fn llamacpp_without_gpu_is_the_cpu_build_x64() {
    let bs = ok("llamacpp", V, None, &Host::without_gpu("amd64"));
    assert_eq!(
        bs,
        vec![Build {
            variant: "cpu".into(),
            assets: vec!["llama-b6123-bin-ubuntu-x64.tar.gz".into()],
            packages: pk(&[("deb", &["libgomp1"]), ("rpm", &["libgomp"])]),
            binary: "llama-server".into(),
            cpu_flags: vec!["avx2".into()],
            ..Build::default()
        }]
    );
}

#[test]
fn llamacpp_without_gpu_on_arm64_has_no_cpu_flags() {
    let bs = ok("llamacpp", V, None, &Host::without_gpu("arm64"));
    assert_eq!(variants(&bs), ["cpu"]);
    assert_eq!(bs[0].assets, ["llama-b6123-bin-ubuntu-arm64.tar.gz"]);
    assert!(bs[0].cpu_flags.is_empty());
}

#[test]
fn empty_driver_string_is_no_gpu() {
    let h = Host {
        arch: "amd64".into(),
        nvidia_driver: Some(String::new()),
        min_compute_capability: 8.6,
    };
    assert_eq!(llama(&h), ["cpu"]);
}

#[test]
fn llamacpp_gpu_builds_have_exact_assets_and_backends() {
    let bs = ok("llamacpp", V, None, &gpu("amd64", "580.65.06", 8.9));
    assert_eq!(variants(&bs), ["cuda-13.3", "cuda-12.8", "vulkan"]);
    assert_eq!(
        bs[0].assets,
        [
            "llama-b6123-bin-ubuntu-cuda-13.3-x64.tar.gz",
            "cudart-llama-b6123-bin-ubuntu-cuda-13.3-x64.tar.gz"
        ]
    );
    assert_eq!(
        bs[1].assets,
        [
            "llama-b6123-bin-ubuntu-cuda-12.8-x64.tar.gz",
            "cudart-llama-b6123-bin-ubuntu-cuda-12.8-x64.tar.gz"
        ]
    );
    assert_eq!(bs[2].assets, ["llama-b6123-bin-ubuntu-vulkan-x64.tar.gz"]);
    assert_eq!(bs[0].gpu_backend, "libggml-cuda.so");
    assert_eq!(bs[1].gpu_backend, "libggml-cuda.so");
    assert_eq!(bs[2].gpu_backend, "libggml-vulkan.so");
    assert_eq!(
        bs[0].packages,
        pk(&[("deb", &["libgomp1"]), ("rpm", &["libgomp"])])
    );
    assert_eq!(
        bs[2].packages,
        pk(&[
            ("deb", &["libgomp1", "libvulkan1"]),
            ("rpm", &["libgomp", "vulkan-loader"])
        ])
    );
    for b in &bs {
        assert_eq!(b.binary, "llama-server");
        assert_eq!(b.cpu_flags, ["avx2"]);
        assert!(!b.gpu_check && b.python.is_empty() && b.free_gb == 0);
    }
}

#[test]
fn llamacpp_driver_550_machine_code_gpu_gets_cuda_12_8_then_vulkan() {
    // The issue's acceptance case: 550 is below CUDA 13's 580, and 8.6 is
    // machine code in the 12.8 build, so 525 is enough.
    assert_eq!(llama(&gpu("amd64", "550", 8.6)), ["cuda-12.8", "vulkan"]);
    assert_eq!(
        err(
            "llamacpp",
            V,
            Some("cuda-13.3"),
            &gpu("amd64", "550.54.15", 8.6)
        )
        .to_string(),
        "no build of llama.cpp runs on this node: llama.cpp built for CUDA 13.3 needs \
         NVIDIA driver 580 or newer; this node has 550.54.15"
    );
}

#[test]
fn llamacpp_cuda_12_8_machine_code_gpus_need_driver_525() {
    for cc in [8.6, 8.9, 12.0] {
        assert_eq!(
            llama(&gpu("amd64", "525.60.13", cc)),
            ["cuda-12.8", "vulkan"],
            "cc {cc}"
        );
        assert_eq!(llama(&gpu("amd64", "524", cc)), ["vulkan"], "cc {cc}");
    }
    assert_eq!(
        err(
            "llamacpp",
            V,
            Some("cuda-12.8"),
            &gpu("amd64", "520.61.05", 12.0)
        )
        .to_string(),
        "no build of llama.cpp runs on this node: llama.cpp built for CUDA 12.8 needs \
         NVIDIA driver 525 or newer; this node has 520.61.05"
    );
}

#[test]
fn llamacpp_cuda_12_8_ptx_gpus_need_driver_570() {
    // 7.5 and 8.0 are covered by PTX only, which the driver compiles.
    for cc in [5.0, 6.1, 7.0, 7.5, 8.0, 9.0] {
        assert_eq!(llama(&gpu("amd64", "569.99", cc)), ["vulkan"], "cc {cc}");
        assert_eq!(
            llama(&gpu("amd64", "570.86", cc)),
            ["cuda-12.8", "vulkan"],
            "cc {cc}"
        );
    }
    assert_eq!(
        err("llamacpp", V, Some("cuda-12.8"), &gpu("amd64", "550", 7.5)).to_string(),
        "no build of llama.cpp runs on this node: llama.cpp built for CUDA 12.8 needs \
         NVIDIA driver 570 or newer; this node has 550"
    );
}

#[test]
fn llamacpp_unknown_capability_takes_the_ptx_driver() {
    assert_eq!(llama(&gpu("amd64", "550", 0.0)), ["vulkan"]);
    assert_eq!(llama(&gpu("amd64", "570", 0.0)), ["cuda-12.8", "vulkan"]);
}

#[test]
fn llamacpp_cuda_13_3_needs_driver_580_and_turing() {
    assert_eq!(
        llama(&gpu("amd64", "580", 7.5)),
        ["cuda-13.3", "cuda-12.8", "vulkan"]
    );
    assert_eq!(llama(&gpu("amd64", "579", 8.6)), ["cuda-12.8", "vulkan"]);
    assert_eq!(llama(&gpu("amd64", "580", 7.0)), ["cuda-12.8", "vulkan"]);
    assert_eq!(
        err("llamacpp", V, Some("cuda-13.3"), &gpu("amd64", "580", 6.1)).to_string(),
        "no build of llama.cpp runs on this node: llama.cpp built for CUDA 13.3 has kernels \
         for compute capability 7.5 and newer; this node has 6.1"
    );
}

#[test]
fn llamacpp_gpus_older_than_maxwell_get_vulkan_only() {
    assert_eq!(llama(&gpu("amd64", "9999", 3.5)), ["vulkan"]);
    assert_eq!(
        err("llamacpp", V, Some("cuda-12.8"), &gpu("amd64", "9999", 3.5)).to_string(),
        "no build of llama.cpp runs on this node: llama.cpp built for CUDA 12.8 has kernels \
         for compute capability 5.0 and newer; this node has 3.5"
    );
}

#[test]
fn llamacpp_unparsable_driver_refuses_nothing() {
    assert_eq!(
        llama(&gpu("amd64", "unknown", 8.6)),
        ["cuda-13.3", "cuda-12.8", "vulkan"]
    );
}

#[test]
fn llamacpp_arm64_has_no_cuda_12_8() {
    let bs = ok("llamacpp", V, None, &gpu("arm64", "580", 9.0));
    assert_eq!(variants(&bs), ["cuda-13.3", "vulkan"]);
    assert_eq!(
        bs[0].assets,
        [
            "llama-b6123-bin-ubuntu-cuda-13.3-arm64.tar.gz",
            "cudart-llama-b6123-bin-ubuntu-cuda-13.3-arm64.tar.gz"
        ]
    );
    assert_eq!(bs[1].assets, ["llama-b6123-bin-ubuntu-vulkan-arm64.tar.gz"]);
    assert!(bs.iter().all(|b| b.cpu_flags.is_empty()));
    assert_eq!(llama(&gpu("arm64", "550", 8.6)), ["vulkan"]);
}

#[test]
fn llamacpp_chosen_variant_that_is_not_there_lists_what_is() {
    let e = err("llamacpp", V, Some("cuda-12.8"), &gpu("arm64", "9999", 9.0));
    assert!(matches!(e, RecipeError::UnknownVariant { .. }));
    assert_eq!(
        e.to_string(),
        "llama.cpp has no build \"cuda-12.8\" here; it has cuda-13.3, vulkan"
    );
    assert_eq!(
        err("llamacpp", V, Some("vulkan"), &Host::without_gpu("amd64")).to_string(),
        "llama.cpp has no build \"vulkan\" here; it has cpu"
    );
    assert_eq!(
        err("llamacpp", V, Some("cuda-12.4"), &gpu("amd64", "550", 8.6)).to_string(),
        "llama.cpp has no build \"cuda-12.4\" here; it has cuda-13.3, cuda-12.8, vulkan"
    );
}

#[test]
fn chosen_variant_that_fits_is_the_only_build() {
    let bs = ok("llamacpp", V, Some("vulkan"), &gpu("amd64", "580", 8.6));
    assert_eq!(variants(&bs), ["vulkan"]);
    // An empty choice is no choice.
    assert_eq!(
        variants(&ok("llamacpp", V, Some(""), &gpu("amd64", "550", 8.6))),
        ["cuda-12.8", "vulkan"]
    );
}

#[test]
fn llamacpp_unknown_arch() {
    for h in [Host::without_gpu("riscv64"), gpu("riscv64", "580", 8.6)] {
        let e = err("llamacpp", V, None, &h);
        assert!(!e.is_not_here());
        assert_eq!(
            e.to_string(),
            "llama.cpp publishes no Linux build for riscv64; it has builds for amd64 and arm64"
        );
    }
    assert_eq!(
        err("llamacpp", V, None, &Host::without_gpu("")).to_string(),
        "llama.cpp publishes no Linux build for an unrecognised system; it has builds for \
         amd64 and arm64"
    );
}

#[test]
fn compute_capabilities_compare_in_tenths() {
    // 8.6 carried as f32 and widened is 8.600000381469727: still machine
    // code in the CUDA 12.8 build, so driver 525 is enough.
    let cc = f64::from(8.6_f32);
    assert_ne!(cc, 8.6);
    assert_eq!(llama(&gpu("amd64", "530", cc)), ["cuda-12.8", "vulkan"]);
    // 8.7 as f32 is 8.699999809265137, which must not be below 8.7.
    let cc = f64::from(8.7_f32);
    assert!(cc < 8.7);
    assert_eq!(
        variants(&ok("vllm", "0.19.1", None, &gpu("arm64", "550", cc))),
        ["cu12"]
    );
    // 7.5 from major and minor, for CUDA 13.3's floor.
    assert_eq!(
        variants(&ok(
            "llamacpp",
            V,
            Some("cuda-13.3"),
            &gpu("amd64", "580", 7.0 + 0.5)
        )),
        ["cuda-13.3"]
    );
}

// --- vLLM ---

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

// --- SGLang ---

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

#[test]
fn sglang_from_0_5_is_cuda_13_on_driver_580_and_turing() {
    assert_eq!(
        ok("sglang", "0.5.2", None, &gpu("amd64", "580", 7.5)),
        vec![sglang_build("cu13", "0.5.2")]
    );
    assert_eq!(
        err("sglang", "0.5.2", None, &gpu("amd64", "550", 8.0)).to_string(),
        "no build of SGLang 0.5.2 runs on this node: SGLang 0.5.2 needs NVIDIA driver 580 or \
         newer; this node has 550"
    );
    assert_eq!(
        err("sglang", "0.5.2", None, &gpu("arm64", "580", 7.0)).to_string(),
        "no build of SGLang 0.5.2 runs on this node: SGLang 0.5.2 has kernels for compute \
         capability 7.5 and newer; this node has 7.0"
    );
    assert_eq!(
        err("sglang", "0.5.2", Some("cu12"), &gpu("amd64", "580", 8.0)).to_string(),
        "SGLang 0.5.2 has no build \"cu12\" here; it has cu13"
    );
}

#[test]
fn sglang_before_0_5_is_cuda_12_on_driver_525_and_volta() {
    assert_eq!(
        ok("sglang", "0.4.10", None, &gpu("amd64", "530", 7.0)),
        vec![sglang_build("cu12", "0.4.10")]
    );
    assert_eq!(
        err("sglang", "0.4.10", None, &gpu("amd64", "520", 8.0)).to_string(),
        "no build of SGLang 0.4.10 runs on this node: SGLang 0.4.10 needs NVIDIA driver 525 or \
         newer; this node has 520"
    );
    assert_eq!(
        err("sglang", "0.4.10", None, &gpu("amd64", "580", 6.1)).to_string(),
        "no build of SGLang 0.4.10 runs on this node: SGLang 0.4.10 has kernels for compute \
         capability 7.0 and newer; this node has 6.1"
    );
    assert_eq!(
        err("sglang", "0.4.10", Some("cu13"), &gpu("amd64", "580", 8.0)).to_string(),
        "SGLang 0.4.10 has no build \"cu13\" here; it has cu12"
    );
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

// --- uv ---

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

// --- the table ---

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

// --- versions ---

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

// --- JSON ---

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
