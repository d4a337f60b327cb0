use super::*;

fn v(name: &str) -> Variant {
    Variant::parse(name).unwrap()
}

fn cuda_node(torch: (u32, u32), cuda: (u32, u32)) -> Target {
    Target {
        platform: "x86_64".into(),
        torch: Some(torch),
        backend: Backend::Cuda(cuda.0, cuda.1),
    }
}

#[test]
fn names_parse_as_the_client_splits_them() {
    let t = v("torch210-cxx11-cu130-x86_64-linux");
    assert_eq!(
        t.framework,
        Framework::Torch {
            version: (2, 10),
            cxx11: Some(true)
        }
    );
    let arch = t.arch.unwrap();
    assert_eq!(arch.backend, Backend::Cuda(13, 0));
    assert_eq!(
        (arch.platform.as_str(), arch.os.as_str()),
        ("x86_64", "linux")
    );
    assert_eq!(
        v("torch29-cu129-aarch64-linux").arch.unwrap().backend,
        Backend::Cuda(12, 9)
    );
    assert_eq!(
        v("torch-stable-abi29-rocm64-x86_64-linux").framework,
        Framework::TorchStableAbi { version: (2, 9) }
    );
    assert_eq!(
        v("tvm-ffi01-cu128-x86_64-linux").framework,
        Framework::TvmFfi { version: (0, 1) }
    );
    let noarch = v("torch-universal");
    assert_eq!(
        (noarch.framework, noarch.arch),
        (Framework::TorchNoarch, None)
    );
    assert_eq!(noarch.noarch_backend.as_deref(), Some("universal"));
}

#[test]
fn names_the_client_would_skip_are_refused() {
    for bad in [
        "",
        "torch",
        "torch-",
        "torch29",
        "torch29-cu129-x86_64",
        "torch29-cu129-x86_64-linux-extra",
        "torch2x-cu129-x86_64-linux",
        "torch29-cuda-x86_64-linux",
        "pytorch29-cu129-x86_64-linux",
        "torch29-cu129-x86 64-linux",
    ] {
        let err = Variant::parse(bad).unwrap_err().to_string();
        assert!(err.contains("kernel build variant"), "{bad}: {err}");
    }
}

#[test]
fn a_cuda_node_loads_its_torch_and_any_older_minor_of_its_cuda() {
    let node = cuda_node((2, 9), (12, 9));
    assert!(node.accepts(&v("torch29-cxx11-cu129-x86_64-linux")).is_ok());
    assert!(node.accepts(&v("torch29-cxx11-cu126-x86_64-linux")).is_ok());
    assert!(node.accepts(&v("torch29-cu128-x86_64-linux")).is_ok());
    assert!(
        node.accepts(&v("torch-stable-abi28-cu128-x86_64-linux"))
            .is_ok()
    );
    assert!(node.accepts(&v("torch-cuda")).is_ok());
    assert!(node.accepts(&v("torch-universal")).is_ok());
    for (no, why) in [
        ("torch28-cxx11-cu129-x86_64-linux", "Torch version (2.8)"),
        (
            "torch29-cxx11-cu130-x86_64-linux",
            "CUDA version (13.0) is not compatible",
        ),
        ("torch29-cxx11-cu129-aarch64-linux", "CPU (aarch64)"),
        ("torch29-cxx11-cpu-x86_64-linux", "backend (cpu)"),
        ("torch29-cxx98-cu129-x86_64-linux", "CXX11 ABI"),
        ("torch-stable-abi210-cu129-x86_64-linux", "too new"),
        (
            "torch-cpu",
            "backend (cpu) does not match system backend (cuda)",
        ),
        ("torch29-cxx11-cu129-x86_64-darwin", "OS (darwin)"),
    ] {
        let err = node.accepts(&v(no)).unwrap_err();
        assert!(err.contains(why), "{no}: {err}");
    }
}

#[test]
fn a_node_without_torch_loads_only_noarch_builds() {
    let node = Target {
        platform: "x86_64".into(),
        torch: None,
        backend: Backend::Cpu,
    };
    assert!(node.accepts(&v("torch-cpu")).is_ok());
    assert!(node.accepts(&v("torch29-cxx11-cpu-x86_64-linux")).is_err());
    assert!(node.accepts(&v("torch-cuda")).is_err());
}
