//! llama.cpp: which build a machine gets (CPU, CUDA 12.8 and 13, Vulkan), by
//! architecture, driver and compute capability, and the words of each refusal.

use super::*;

/// What refusing llama.cpp's build `variant` on `h` says.
fn chosen(variant: &str, h: &Host) -> String {
    err("llamacpp", V, Some(variant), h).to_string()
}

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
    // The acceptance case: 550 is below CUDA 13's 580, and 8.6 is
    // machine code in the 12.8 build, so 525 is enough.
    assert_eq!(llama(&gpu("amd64", "550", 8.6)), ["cuda-12.8", "vulkan"]);
    assert_eq!(
        chosen("cuda-13.3", &gpu("amd64", "550.54.15", 8.6)),
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
        chosen("cuda-12.8", &gpu("amd64", "520.61.05", 12.0)),
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
        chosen("cuda-12.8", &gpu("amd64", "550", 7.5)),
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
        chosen("cuda-13.3", &gpu("amd64", "580", 6.1)),
        "no build of llama.cpp runs on this node: llama.cpp built for CUDA 13.3 has kernels \
         for compute capability 7.5 and newer; this node has 6.1"
    );
}

#[test]
fn llamacpp_gpus_older_than_maxwell_get_vulkan_only() {
    assert_eq!(llama(&gpu("amd64", "9999", 3.5)), ["vulkan"]);
    assert_eq!(
        chosen("cuda-12.8", &gpu("amd64", "9999", 3.5)),
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
        chosen("vulkan", &Host::without_gpu("amd64")),
        "llama.cpp has no build \"vulkan\" here; it has cpu"
    );
    assert_eq!(
        chosen("cuda-12.4", &gpu("amd64", "550", 8.6)),
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
