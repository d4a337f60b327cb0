//! The image table's decisions as cases: which images a driver and a site
//! get, in which order, under which names, and the words of every refusal.

use super::*;

fn refs(images: &[EngineImage]) -> Vec<String> {
    images.iter().map(EngineImage::reference).collect()
}

fn site(engine: &str, version: &str, arch: &str, driver: Option<&str>) -> Vec<String> {
    match site_images(engine, version, None, arch, driver) {
        Ok(i) => refs(&i),
        Err(e) => panic!("{engine} {version} {arch} {driver:?}: {e}"),
    }
}

const PLAIN: &str = "docker.io/vllm/vllm-openai:v0.34.0";
const CU129: &str = "docker.io/vllm/vllm-openai:v0.34.0-cu129";

#[test]
fn vllm_images_split_by_cuda_and_the_driver_chooses() {
    for arch in ["amd64", "arm64"] {
        let all = images("vllm", "0.34.0", None, arch, None).unwrap();
        assert_eq!(refs(&all), [PLAIN, CU129]);
        let facts = |i: &EngineImage| (i.variant.clone(), i.cuda.clone(), i.min_driver);
        assert_eq!(facts(&all[0]), ("cu130".into(), "13.0".into(), 580));
        assert_eq!(facts(&all[1]), ("cu129".into(), "12.9".into(), 525));
        assert!(all.iter().all(|i| i.platforms == ["amd64", "arm64"]));
        assert!(all.iter().all(|i| i.source.contains("PR #")));
        // A driver runs what its CUDA allows, best first.
        let on = |d| refs(&images("vllm", "0.34.0", None, arch, Some(d)).unwrap());
        assert_eq!(on("590.48.01"), [PLAIN, CU129]);
        assert_eq!(on("580"), [PLAIN, CU129]);
        assert_eq!(on("575.57.08"), [CU129]);
        assert_eq!(on("525"), [CU129]);
        // A site: the best image its newest driver runs; none given, all.
        assert_eq!(site("vllm", "0.34.0", arch, Some("575")), [CU129]);
        assert_eq!(site("vllm", "0.34.0", arch, Some("590")), [PLAIN]);
        assert_eq!(site("vllm", "0.34.0", arch, None), [PLAIN, CU129]);
    }
    // The first version the table holds, compared by number.
    assert_eq!(
        site("vllm", "0.20.2", "amd64", None),
        [
            "docker.io/vllm/vllm-openai:v0.20.2",
            "docker.io/vllm/vllm-openai:v0.20.2-cu129"
        ]
    );
    // Chosen by name: only that one, if the driver runs it.
    let only = images("vllm", "0.34.0", Some("cu129"), "amd64", Some("590")).unwrap();
    assert_eq!(refs(&only), [CU129]);
    let e = site_images("vllm", "0.34.0", Some("cu130"), "amd64", Some("575")).unwrap_err();
    assert_eq!(
        e.to_string(),
        "no build of vllm 0.34.0's images runs on this node: the cu130 image needs NVIDIA \
         driver 580 or newer; this node has 575"
    );
}

/// The image table and the build table agree on every driver floor: a
/// node that can run one version's cu129 wheel can run its cu129 image.
#[test]
fn image_floors_are_the_wheels_floors() {
    for (driver, wheel_variants) in [("575", vec!["cu129"]), ("590", vec!["cu13", "cu129"])] {
        let h = Host::nvidia("amd64", driver, 0.0);
        let builds: Vec<String> = candidates("vllm", "0.34.0", None, &h)
            .unwrap()
            .into_iter()
            .map(|b| b.variant)
            .collect();
        assert_eq!(builds, wheel_variants, "{driver}");
        let images = images("vllm", "0.34.0", None, "amd64", Some(driver)).unwrap();
        assert_eq!(images.len(), builds.len(), "{driver}");
    }
}

#[test]
fn sglang_images_are_tagged_per_cuda() {
    assert_eq!(
        site("sglang", "0.5.14", "arm64", None),
        [
            "docker.io/lmsysorg/sglang:v0.5.14-cu130",
            "docker.io/lmsysorg/sglang:v0.5.14-cu129"
        ]
    );
    assert_eq!(
        site("sglang", "0.5.12.post1", "amd64", Some("575")),
        ["docker.io/lmsysorg/sglang:v0.5.12.post1-cu129"]
    );
    let e = site_images("sglang", "0.5.10", None, "amd64", None).unwrap_err();
    assert!(e.to_string().contains("start at 0.5.11"), "{e}");
    // v0.5.19 was the last with a CUDA 12 lane (sgl-project/sglang PR #38404).
    assert_eq!(
        site("sglang", "0.5.19", "amd64", Some("575")),
        ["docker.io/lmsysorg/sglang:v0.5.19-cu129"]
    );
    assert_eq!(
        site("sglang", "0.5.20", "amd64", None),
        ["docker.io/lmsysorg/sglang:v0.5.20-cu130"]
    );
    let e = site_images("sglang", "0.5.20", None, "amd64", Some("575")).unwrap_err();
    assert_eq!(
        e.to_string(),
        "no build of sglang 0.5.20's images runs on this node: the cu130 image needs NVIDIA \
         driver 580 or newer; this node has 575"
    );
    let e = images("sglang", "0.5.20", Some("cu129"), "amd64", None).unwrap_err();
    assert_eq!(
        e.to_string(),
        "sglang 0.5.20's images have no \"cu129\": the table's cu129 images are of 0.5.11 to \
         0.5.19; it has cu130"
    );
}

const LLAMA: &str = "ghcr.io/ggml-org/llama.cpp";

fn llama(tags: &[&str]) -> Vec<String> {
    tags.iter().map(|t| format!("{LLAMA}:{t}")).collect()
}

#[test]
fn llamacpp_server_images_by_build_and_by_semver() {
    for (version, arch) in [("b9300", "amd64"), ("b9300", "arm64"), ("v0.4.1", "arm64")] {
        let all = images("llamacpp", version, None, arch, None).unwrap();
        let tag = |t: &str| format!("{t}-{version}");
        assert_eq!(
            refs(&all),
            llama(&[
                &tag("server-cuda13"),
                &tag("server-cuda"),
                &tag("server-vulkan"),
                &tag("server")
            ]),
            "{version} {arch}"
        );
        let facts: Vec<(&str, &str, &str, u64)> = all
            .iter()
            .map(|i| {
                (
                    i.variant.as_str(),
                    i.backend.as_str(),
                    i.cuda.as_str(),
                    i.min_driver,
                )
            })
            .collect();
        assert_eq!(
            facts,
            [
                ("cuda13", "cuda", "13", 580),
                ("cuda", "cuda", "12", 570),
                ("vulkan", "vulkan", "", 0),
                ("cpu", "cpu", "", 0)
            ]
        );
        assert!(all.iter().all(|i| i.platforms == ["amd64", "arm64"]));
        assert!(all.iter().all(|i| i.source.contains("PR #28394")));
        // An NVIDIA node: the CUDA images its driver starts, then Vulkan;
        // never the CPU server, as the build table never gives it the CPU
        // build.
        let on = |d| refs(&images("llamacpp", version, None, arch, Some(d)).unwrap());
        assert_eq!(on("590"), refs(&all[..3]));
        assert_eq!(on("575.57.08"), refs(&all[1..3]));
        assert_eq!(on("550"), refs(&all[2..3]));
        // A site: its newest driver's best image, and the CPU server for
        // its nodes with no GPU.
        let cpu = tag("server");
        assert_eq!(
            site("llamacpp", version, arch, Some("590")),
            llama(&[&tag("server-cuda13"), &cpu])
        );
        assert_eq!(
            site("llamacpp", version, arch, Some("550.54.15")),
            llama(&[&tag("server-vulkan"), &cpu])
        );
        assert_eq!(site("llamacpp", version, arch, None), refs(&all));
        // Named: only that one, the CPU server too.
        let only = site_images("llamacpp", version, Some("cpu"), arch, Some("590")).unwrap();
        assert_eq!(refs(&only), llama(&[&cpu]));
    }
    // Before arm64 images were built, a build is amd64's only.
    let amd = images("llamacpp", "b8000", None, "amd64", None).unwrap();
    assert!(amd.iter().all(|i| i.platforms == ["amd64"]), "{amd:?}");
    let e = images("llamacpp", "b8000", None, "arm64", None).unwrap_err();
    assert_eq!(
        e.to_string(),
        "llamacpp b8000 publishes no image for arm64; its images are for amd64 (the table's \
         arm64 from b9294)"
    );
}

/// The image table and llama.cpp's archive table agree on every driver
/// floor: a node the CUDA 12.8 archive runs from PTX (a Turing GPU, 7.5)
/// runs the `server-cuda` image, and one it does not, does not.
#[test]
fn llamacpp_image_floors_are_the_archives_floors() {
    for (driver, archives, image) in [
        ("590", vec!["cuda-13.3", "cuda-12.8", "vulkan"], "cuda13"),
        ("575", vec!["cuda-12.8", "vulkan"], "cuda"),
        ("560", vec!["vulkan"], "vulkan"),
    ] {
        let h = Host::nvidia("amd64", driver, 7.5);
        let builds: Vec<String> = candidates("llamacpp", "b9300", None, &h)
            .unwrap()
            .into_iter()
            .map(|b| b.variant)
            .collect();
        assert_eq!(builds, archives, "{driver}");
        let images = images("llamacpp", "b9300", None, "amd64", Some(driver)).unwrap();
        assert_eq!(images.len(), archives.len(), "{driver}");
        assert_eq!(images[0].variant, image, "{driver}");
    }
}

#[test]
fn llamacpp_refusals_name_the_first_build_and_the_forms() {
    let says = |version: &str, variant: Option<&str>| {
        images("llamacpp", version, variant, "amd64", None)
            .unwrap_err()
            .to_string()
    };
    let e = says("b7000", None);
    assert!(
        e.starts_with(
            "the recipe table has no image of llamacpp b7000: the table's llama.cpp server \
             images start at b7609 (arm64 at b9294)"
        ),
        "{e}"
    );
    assert!(e.contains("--image"), "{e}");
    let e = says("v0.3.0", None);
    assert!(
        e.contains("from v0.4.0 (v0.3.0, build b10621, has none"),
        "{e}"
    );
    for bare in ["0.4.1", "latest", "v0.4", "b12x"] {
        let e = says(bare, None);
        assert!(
            e.contains("a build (b8000) or a SemVer release (v0.4.0)"),
            "{bare}: {e}"
        );
    }
    assert_eq!(
        says("b9300", Some("cuda12")),
        "llamacpp b9300's images has no build \"cuda12\" here; it has cuda13, cuda, vulkan, cpu"
    );
    // A variant the driver cannot start, named.
    let e = images("llamacpp", "b9300", Some("cuda13"), "arm64", Some("575")).unwrap_err();
    assert!(
        e.to_string()
            .contains("the cuda13 image needs NVIDIA driver 580"),
        "{e}"
    );
}

#[test]
fn refusals_name_what_there_is() {
    let e = images("vllm", "0.34.0", Some("cu13"), "amd64", None).unwrap_err();
    assert_eq!(
        e.to_string(),
        "vllm 0.34.0's images has no build \"cu13\" here; it has cu130, cu129"
    );
    let e = images("vllm", "0.19.1", None, "amd64", None).unwrap_err();
    assert!(
        e.to_string().starts_with(
            "the recipe table has no image of vllm 0.19.1: the table's vLLM images start at 0.20"
        ),
        "{e}"
    );
    let e = images("vllm", "v0.34.0", None, "amd64", None).unwrap_err();
    assert!(
        e.to_string().contains("without the tag's v (0.34.0)"),
        "{e}"
    );
    let e = images("vllm", "0.34.0", None, "amd64", Some("510")).unwrap_err();
    let said = e.to_string();
    assert!(
        said.contains("the cu130 image needs NVIDIA driver 580"),
        "{said}"
    );
    assert!(
        said.contains("the cu129 image needs NVIDIA driver 525"),
        "{said}"
    );
    let e = images("vllm", "0.34.0", None, "riscv64", None).unwrap_err();
    assert_eq!(
        e.to_string(),
        "vllm 0.34.0 publishes no image for riscv64; its images are for amd64 and arm64"
    );
    let e = images("uv", "0.9.0", None, "amd64", None).unwrap_err();
    assert!(e.to_string().contains("release archives"), "{e}");
    let e = images("vllm", "0.34/../x", None, "amd64", None).unwrap_err();
    assert!(matches!(e, RecipeError::InvalidVersion { .. }), "{e}");
    let e = images("nginx", "1", None, "amd64", None).unwrap_err();
    assert!(matches!(e, RecipeError::UnknownEngine { .. }), "{e}");
}

#[test]
fn drivers_are_dotted_numbers() {
    for good in ["550", "550.54", "550.54.15", "9999"] {
        assert_eq!(driver_problem(good), None, "{good}");
    }
    for bad in [
        "",
        "abc",
        "550.",
        ".54",
        "550.54.15.1",
        "550 ",
        "v550",
        "5-5",
    ] {
        let e = driver_problem(bad).unwrap_or_else(|| panic!("{bad:?} accepted"));
        assert!(
            e.contains("is not an NVIDIA driver version"),
            "{bad:?}: {e}"
        );
    }
}
