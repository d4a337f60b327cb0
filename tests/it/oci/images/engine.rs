//! Engine images from the recipe table (#52): the real `docker-registry`
//! holds vllm-openai-like images — `v0.34.0` (the CUDA 13.0 build) and
//! `v0.34.0-cu129`, each an amd64 + arm64 index pushed by `skopeo` — and
//! `--registry docker.io=URL` points Docker Hub's name at it. `--driver`
//! chooses which the bundle carries; each is recorded under its own name
//! (`docker.io/vllm/vllm-openai`), and after import containerd pulls it
//! through the mirror by that name and tag, with the `hosts.toml` for
//! docker.io that `mirror env` prints.

use std::path::Path;

use llmgw_fixture::registry::{Distribution, TestImage};

use super::common::*;
use crate::oci::clients::containerd;

const REPO: &str = "vllm/vllm-openai";
const PLAIN: &str = "v0.34.0";
const CU129: &str = "v0.34.0-cu129";

/// The registry with both variants pushed; the index digest of each.
fn registry(dir: &Path) -> (Distribution, String, String) {
    let reg = Distribution::start().unwrap();
    let mut digests = Vec::new();
    for (seed, tag) in [(31, PLAIN), (32, CU129)] {
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
        digests.push(img.index);
    }
    let cu129 = digests.pop().unwrap();
    let plain = digests.pop().unwrap();
    (reg, plain, cu129)
}

/// `bundle create --engine-image vllm=0.34.0` for both arches from the
/// test's registry, `extra` added; the bundle's manifest and sha256.
fn carry(dir: &Path, reg: &Distribution, name: &str, extra: &[&str]) -> (String, Vec<String>) {
    let out = dir.join(name);
    let o = create(dir)
        .args(["--arch", "amd64,arm64", "--out"])
        .arg(&out)
        .args(["--engine-image", "vllm=0.34.0"])
        .args(["--registry", &format!("docker.io=http://{}", reg.host)])
        .args(extra)
        .output()
        .unwrap();
    let sha = ok(&o).trim().to_string();
    // What the table chose is said, with what it needs.
    if extra.contains(&"575.57.08") {
        let says = format!(
            "--engine-image vllm=0.34.0: docker.io/{REPO}:{CU129} (cu129, CUDA 12.9, driver 525 \
             or newer) for amd64, arm64"
        );
        assert!(text(&o.stderr).contains(&says), "{}", text(&o.stderr));
    }
    let m = manifest(&out);
    let mut carried = Vec::new();
    for image in &m.images {
        assert_eq!(image.registry.as_deref(), Some("docker.io"), "{image:?}");
        assert_eq!(image.repository, REPO);
        // Both platforms of the index, each as the registry serves it.
        for platform in ["linux/amd64", "linux/arm64"] {
            assert!(
                image
                    .manifests
                    .iter()
                    .any(|d| d.platform.as_deref() == Some(platform)),
                "{platform} of {:?}",
                image.tag
            );
        }
        let tag = image.tag.clone().unwrap_or_default();
        assert_eq!(
            blob(&out, image.digest.as_str()),
            reg.inspect_raw(REPO, &tag).unwrap(),
            "{tag}: the index as the registry serves it"
        );
        carried.push(format!("{tag}@sha256:{}", image.digest));
    }
    carried.sort();
    (sha, carried)
}

#[test]
fn the_driver_chooses_the_cuda_variant_and_containerd_pulls_it_by_name() {
    let dir = tempfile::tempdir().unwrap();
    let (reg, plain, cu129) = registry(dir.path());
    let at = |tag: &str, digest: &str| format!("{tag}@{digest}");

    let (sha, carried) = carry(dir.path(), &reg, "old", &["--driver", "575.57.08"]);
    assert_eq!(carried, [at(CU129, &cu129)]);
    let (_, carried) = carry(dir.path(), &reg, "new", &["--driver", "590"]);
    assert_eq!(carried, [at(PLAIN, &plain)]);
    let (_, carried) = carry(dir.path(), &reg, "all", &[]);
    let mut both = vec![at(PLAIN, &plain), at(CU129, &cu129)];
    both.sort();
    assert_eq!(carried, both);

    // The 575 site's bundle, imported and served: containerd pulls the
    // carried image by its Docker Hub name through the mirror.
    // The hosts.toml a node is given: what `mirror env` prints for every
    // registry the store holds images from (here docker.io only).
    let (_mirror, hosts_dir) =
        served_to_containerd(dir.path(), &dir.path().join("old"), &sha, "docker.io");
    let c = containerd(dir.path());
    let reference = format!("docker.io/{REPO}:{CU129}");
    let o = c.ctr(&[
        "images",
        "pull",
        "--snapshotter",
        "native",
        "--hosts-dir",
        hosts_dir.to_str().unwrap(),
        &reference,
    ]);
    assert!(
        o.status.success(),
        "ctr pull {reference}: {}{}",
        text(&o.stdout),
        text(&o.stderr)
    );
    let ls = text(&c.ctr(&["images", "ls"]).stdout);
    let line = ls
        .lines()
        .find(|l| l.starts_with(&format!("{reference} ")))
        .unwrap_or_else(|| panic!("{reference} not listed: {ls}"));
    assert!(line.contains(&cu129), "{line}");
    // The chart's engine Deployment, given the carried digest, names the
    // image containerd pulls through the mirror (#52 item 5).
    let rendered = chart_engine_image(&cu129);
    assert_eq!(rendered, format!("docker.io/{REPO}@{cu129}"));
    let o = c.ctr(&["images", "rm", &reference]);
    assert!(o.status.success(), "{}", text(&o.stderr));
    let o = c.ctr(&[
        "images",
        "pull",
        "--snapshotter",
        "native",
        "--hosts-dir",
        hosts_dir.to_str().unwrap(),
        &rendered,
    ]);
    assert!(
        o.status.success(),
        "ctr pull {rendered}: {}{}",
        text(&o.stdout),
        text(&o.stderr)
    );
    // The CUDA 13 build was not carried: the mirror does not have it.
    let o = c.ctr(&[
        "images",
        "pull",
        "--snapshotter",
        "native",
        "--hosts-dir",
        hosts_dir.to_str().unwrap(),
        &format!("docker.io/{REPO}:{PLAIN}"),
    ]);
    assert!(!o.status.success(), "the cu130 image was served");
}

/// The image of the Deployment the Helm chart renders with `engine.image`
/// pinned to `digest` (Helm's Go SDK through the venv's helm-python-sdk).
fn chart_engine_image(digest: &str) -> String {
    let deploy = Path::new(env!("CARGO_MANIFEST_DIR")).join("deploy/tests");
    let script = format!(
        "import sys; sys.path.insert(0, {deploy:?}); import chartlib\n\
         v = {{'engine': {{'enabled': True, 'image': {{'repository': 'docker.io/{REPO}', \
         'tag': '{CU129}', 'digest': '{digest}', 'pullPolicy': 'IfNotPresent'}}}}}}\n\
         d = [o for o in chartlib.render(v) if chartlib.is_engine(o) and o['kind'] == 'Deployment']\n\
         print(d[0]['spec']['template']['spec']['containers'][0]['image'])\n",
        deploy = deploy.display().to_string()
    );
    let o = std::process::Command::new(crate::oci::clients::venv_python())
        .args(["-c", &script])
        .output()
        .unwrap();
    assert!(o.status.success(), "{}", text(&o.stderr));
    text(&o.stdout).trim().to_string()
}

#[test]
fn bad_engine_image_driver_and_registry_values_are_usage_errors() {
    let dir = tempfile::tempdir().unwrap();
    let out = dir.path().join("b");
    for (args, says) in [
        (
            vec!["--engine-image", "vllm=0.34.0", "--driver", "abc"],
            "--driver: \"abc\" is not an NVIDIA driver version",
        ),
        (
            vec!["--engine-image", "vllm=0.34.0:cu13"],
            "has no build \"cu13\" here; it has cu130, cu129",
        ),
        (
            vec!["--image", "acme/app:v1", "--driver", "575"],
            "it chooses among engine images, and no --engine-image",
        ),
        (
            vec!["--engine-image", "vllm=0.34.0", "--registry", "docker.io"],
            "--registry docker.io: no '='; expected HOST=URL",
        ),
        (
            vec!["--engine-image", "vllm"],
            "expected ENGINE=VERSION[:VARIANT]",
        ),
    ] {
        let e = fails(
            &create(dir.path())
                .args(["--arch", "amd64", "--out"])
                .arg(&out)
                .args(&args)
                .output()
                .unwrap(),
            2,
        );
        assert!(e.contains(says), "{args:?}: {e}");
        assert!(!out.exists());
    }
}

/// `--registry` changes only where a registry is asked: an `--image` that
/// names docker.io is fetched from the address and recorded as docker.io,
/// and a pin the address's tag does not name is refused with both
/// digests, as from the registry itself (#52 item 3).
#[test]
fn an_address_is_checked_as_the_registry_itself() {
    let dir = tempfile::tempdir().unwrap();
    let (reg, plain, _) = registry(dir.path());
    let via = format!("docker.io=http://{}", reg.host);
    let out = dir.path().join("b");
    ok(&create(dir.path())
        .args(["--arch", "amd64", "--out"])
        .arg(&out)
        .args(["--image", &format!("vllm/vllm-openai:{PLAIN}")])
        .args(["--registry", &via])
        .output()
        .unwrap());
    let m = manifest(&out);
    let image = only_image(&m);
    assert_eq!(image.registry.as_deref(), Some("docker.io"));
    assert_eq!(format!("sha256:{}", image.digest), plain);
    let other = "0".repeat(64);
    let e = fails(
        &create(dir.path())
            .args(["--arch", "amd64", "--out"])
            .arg(dir.path().join("pinned"))
            .args([
                "--image",
                &format!("vllm/vllm-openai:{PLAIN}@sha256:{other}"),
            ])
            .args(["--registry", &via])
            .output()
            .unwrap(),
        1,
    );
    assert!(e.contains(&other) && e.contains(&plain[7..]), "{e}");
    assert!(e.contains("docker.io/vllm/vllm-openai"), "{e}");
}
