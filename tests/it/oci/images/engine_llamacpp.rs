//! llama.cpp's server images from the recipe table (#52): the real
//! `docker-registry` holds ghcr.io/ggml-org/llama.cpp-like images, each an
//! amd64 + arm64 index pushed by `skopeo` — build b9300's `server-cuda13`,
//! `server-cuda`, `server-vulkan` and CPU `server`, and the SemVer release
//! v0.4.1's re-tags of two of them — and `--registry ghcr.io=URL` points
//! ghcr.io's name at it. `--driver` chooses the GPU image; the CPU server
//! comes with it for nodes with no GPU. After import, containerd pulls the
//! CPU server through the mirror by its ghcr.io name and tag.

use std::path::Path;

use llmgw_fixture::registry::{Distribution, TestImage};

use super::common::*;
use crate::oci::clients::containerd;

const REPO: &str = "ggml-org/llama.cpp";

/// The registry with b9300's four server images and v0.4.1's CUDA 13 and
/// CPU ones; each tag's index digest.
fn registry(dir: &Path) -> (Distribution, Vec<(String, String)>) {
    let reg = Distribution::start().unwrap();
    let mut digests = Vec::new();
    for (seed, tag) in [
        (41, "server-cuda13-b9300"),
        (42, "server-cuda-b9300"),
        (43, "server-vulkan-b9300"),
        (44, "server-b9300"),
        (41, "server-cuda13-v0.4.1"),
        (44, "server-v0.4.1"),
    ] {
        let img = TestImage::build(
            &dir.join(format!("layout-{tag}")),
            tag,
            seed,
            &["amd64", "arm64"],
            1,
            8 * 1024,
        )
        .unwrap();
        reg.push(&img.layout, tag, REPO).unwrap();
        digests.push((tag.to_string(), img.index));
    }
    (reg, digests)
}

/// `bundle create --engine-image SPEC` for `arch` from the test's
/// registry, `extra` added: its stderr, and each carried image as
/// `tag@digest`, sorted.
fn carry(
    dir: &Path,
    reg: &Distribution,
    name: &str,
    spec: &str,
    extra: &[&str],
) -> (String, String, Vec<String>) {
    let out = dir.join(name);
    let o = create(dir)
        .args(["--out"])
        .arg(&out)
        .args(["--engine-image", spec])
        .args(["--registry", &format!("ghcr.io=http://{}", reg.host)])
        .args(extra)
        .output()
        .unwrap();
    let sha = ok(&o).trim().to_string();
    // Every bundle made here imports: the far side takes it.
    ok(&import(&out, &sha, &dir.join(format!("store-{name}"))));
    let m = manifest(&out);
    let mut carried = Vec::new();
    for image in &m.images {
        assert_eq!(image.registry.as_deref(), Some("ghcr.io"), "{image:?}");
        assert_eq!(image.repository, REPO);
        let tag = image.tag.clone().unwrap_or_default();
        assert_eq!(
            blob(&out, image.digest.as_str()),
            reg.inspect_raw(REPO, &tag).unwrap(),
            "{tag}: the index as the registry serves it"
        );
        carried.push(format!("{tag}@sha256:{}", image.digest));
    }
    carried.sort();
    (sha, text(&o.stderr), carried)
}

#[test]
fn the_driver_chooses_the_server_image_and_the_cpu_server_comes_with_it() {
    let dir = tempfile::tempdir().unwrap();
    let (reg, digests) = registry(dir.path());
    let at = |tags: &[&str]| {
        let mut v: Vec<String> = tags
            .iter()
            .map(|t| {
                let (_, d) = digests.iter().find(|(tag, _)| tag == t).unwrap();
                format!("{t}@{d}")
            })
            .collect();
        v.sort();
        v
    };
    let both = ["--arch", "amd64,arm64"];

    // A 575 site: the CUDA 12.8 server (570 is what its PTX needs), and
    // the CPU server for the nodes with no GPU.
    let driver = ["--driver", "575.57.08"];
    let (sha, said, carried) = carry(
        dir.path(),
        &reg,
        "575",
        "llamacpp=b9300",
        &[&both[..], &driver[..]].concat(),
    );
    assert_eq!(carried, at(&["server-cuda-b9300", "server-b9300"]));
    for line in [
        "--engine-image llamacpp=b9300: ghcr.io/ggml-org/llama.cpp:server-cuda-b9300 (cuda, \
         CUDA 12, driver 570 or newer) for amd64, arm64",
        "--engine-image llamacpp=b9300: ghcr.io/ggml-org/llama.cpp:server-b9300 (cpu, CPU only) \
         for amd64, arm64",
    ] {
        assert!(said.contains(line), "{said}");
    }
    // A 550 site's GPU nodes run the Vulkan server.
    let (_, _, carried) = carry(
        dir.path(),
        &reg,
        "550",
        "llamacpp=b9300",
        &["--arch", "amd64", "--driver", "550"],
    );
    assert_eq!(carried, at(&["server-vulkan-b9300", "server-b9300"]));
    // No driver: every image the table lists.
    let (_, _, carried) = carry(dir.path(), &reg, "all", "llamacpp=b9300", &both);
    assert_eq!(
        carried,
        at(&[
            "server-cuda13-b9300",
            "server-cuda-b9300",
            "server-vulkan-b9300",
            "server-b9300"
        ])
    );
    // A SemVer release, by its own tags; a 590 site gets CUDA 13.
    let (_, _, carried) = carry(
        dir.path(),
        &reg,
        "semver",
        "llamacpp=v0.4.1",
        &["--arch", "arm64", "--driver", "590"],
    );
    assert_eq!(carried, at(&["server-cuda13-v0.4.1", "server-v0.4.1"]));

    // The 575 bundle imported and served: containerd pulls the CPU server
    // by its ghcr.io name through the mirror, with the hosts.toml for
    // ghcr.io that `mirror env` prints.
    let (_mirror, hosts_dir) =
        served_to_containerd(dir.path(), &dir.path().join("575"), &sha, "ghcr.io");
    let c = containerd(dir.path());
    let pull = |reference: &str| {
        c.ctr(&[
            "images",
            "pull",
            "--snapshotter",
            "native",
            "--hosts-dir",
            hosts_dir.to_str().unwrap(),
            reference,
        ])
    };
    let reference = format!("ghcr.io/{REPO}:server-b9300");
    let o = pull(&reference);
    assert!(
        o.status.success(),
        "ctr pull {reference}: {}{}",
        text(&o.stdout),
        text(&o.stderr)
    );
    let ls = text(&c.ctr(&["images", "ls"]).stdout);
    let (_, cpu) = digests.iter().find(|(t, _)| t == "server-b9300").unwrap();
    assert!(
        ls.lines()
            .any(|l| l.starts_with(&format!("{reference} ")) && l.contains(cpu.as_str())),
        "{ls}"
    );
    // The CUDA 13 server was not carried for this site.
    let o = pull(&format!("ghcr.io/{REPO}:server-cuda13-b9300"));
    assert!(!o.status.success(), "the cuda13 server was served");
}

/// A build from before llama.cpp built arm64 images: the amd64 nodes get
/// theirs, and the arm64 nodes' lack is a gap in the manifest with the
/// table's reason, said as create runs; the bundle imports.
#[test]
fn an_arch_a_build_has_no_image_for_is_a_gap() {
    let dir = tempfile::tempdir().unwrap();
    let reg = Distribution::start().unwrap();
    let tag = "server-b9000";
    let img =
        TestImage::build(&dir.path().join("layout"), tag, 45, &["amd64"], 1, 8 * 1024).unwrap();
    reg.push(&img.layout, tag, REPO).unwrap();
    let (sha, said, carried) = carry(
        dir.path(),
        &reg,
        "b",
        "llamacpp=b9000:cpu",
        &["--arch", "amd64,arm64"],
    );
    assert_eq!(carried, [format!("{tag}@{}", img.index)]);
    let what = "--engine-image llamacpp=b9000:cpu for arm64";
    let why = "llamacpp b9000 publishes no image for arm64; its images are for amd64 (the \
               table's arm64 from b9294)";
    assert!(
        said.contains(&format!("{what}: no image ({why})")),
        "{said}"
    );
    let m = manifest(&dir.path().join("b"));
    let gaps: Vec<(&str, &str)> = m
        .gaps
        .iter()
        .map(|g| (g.what.as_str(), g.reason.as_str()))
        .collect();
    assert_eq!(gaps, [(what, why)]);
    ok(&import(
        &dir.path().join("b"),
        &sha,
        &dir.path().join("store"),
    ));
}

/// What the table lacks is refused before any network, naming what it
/// has; what the table names but the registry lacks is refused by the
/// registry's answer, naming the image. Nothing is written either way.
#[test]
fn a_build_variant_or_image_there_is_none_of_is_refused() {
    let dir = tempfile::tempdir().unwrap();
    let out = dir.path().join("b");
    for (spec, arch, says) in [
        (
            "llamacpp=b7000",
            "amd64",
            "llama.cpp server images start at b7609 (arm64 at b9294)",
        ),
        (
            "llamacpp=b9300:cuda12",
            "amd64",
            "has no build \"cuda12\" here; it has cuda13, cuda, vulkan, cpu",
        ),
        // Before arm64 images were built: no cuda13 image for arm64.
        (
            "llamacpp=b9000:cuda13",
            "arm64",
            "publishes no image for arm64; its images are for amd64 (the table's arm64 from \
             b9294)",
        ),
        (
            "llamacpp=v0.3.0",
            "amd64",
            "from v0.4.0 (v0.3.0, build b10621, has none",
        ),
        (
            "llamacpp=0.4.1",
            "amd64",
            "a build (b8000) or a SemVer release (v0.4.0)",
        ),
    ] {
        let e = fails(
            &create(dir.path())
                .args(["--arch", arch, "--out"])
                .arg(&out)
                .args(["--engine-image", spec])
                .output()
                .unwrap(),
            2,
        );
        assert!(e.contains(says), "{spec}: {e}");
        assert!(e.contains(&format!("--engine-image {spec}")), "{spec}: {e}");
        assert!(!out.exists());
    }
    // The table names b9301's images; this registry has none of them.
    let (reg, _) = registry(dir.path());
    let e = fails(
        &create(dir.path())
            .args(["--arch", "amd64", "--driver", "590", "--out"])
            .arg(&out)
            .args(["--engine-image", "llamacpp=b9301"])
            .args(["--registry", &format!("ghcr.io=http://{}", reg.host)])
            .output()
            .unwrap(),
        1,
    );
    assert!(
        e.contains("ghcr.io/ggml-org/llama.cpp") && e.contains("server-cuda13-b9301"),
        "{e}"
    );
    assert!(!out.exists());
}
