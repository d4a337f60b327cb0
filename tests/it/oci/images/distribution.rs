//! Against the real registry: an amd64+arm64(+s390x) index with an
//! attestation, pushed by `skopeo copy --all`, carried by `bundle create`,
//! imported; the digests are byte-identical to what `skopeo inspect --raw`
//! reads from the registry.

use llmgw_fixture::registry::{Distribution, TestImage};
use llmgw_shared::manifest::OCI_INDEX;

use super::common::*;

const REPO: &str = "acme/app";

fn pushed(dir: &std::path::Path, reg: &Distribution, seed: u64) -> TestImage {
    let img = TestImage::build(
        &dir.join(format!("layout-{seed}")),
        "v1",
        seed,
        &["amd64", "arm64", "s390x"],
        2,
        64 * 1024,
    )
    .unwrap();
    reg.push(&img.layout, "v1", REPO).unwrap();
    img
}

#[test]
fn an_index_is_carried_as_the_registry_serves_it_and_imports() {
    let reg = Distribution::start().unwrap();
    let dir = tempfile::tempdir().unwrap();
    let img = pushed(dir.path(), &reg, 1);
    let served = reg.inspect_raw(REPO, "v1").unwrap();
    let served_digest = llmgw_fixture::registry::sha256_digest(&served);
    assert_eq!(
        served_digest, img.index,
        "skopeo copy --all keeps the index digest"
    );

    // The dry run lists the image with its sizes, and writes nothing.
    let reference = format!("{}/{REPO}:v1", reg.host);
    let out = dir.path().join("b");
    let dry = ok(&create(dir.path())
        .args(["--arch", "amd64,arm64", "--dry-run", "--out"])
        .arg(&out)
        .args(["--image", &reference, "--insecure-registry", &reg.host])
        .output()
        .unwrap());
    assert!(dry.contains(&format!("image {reference}")), "{dry}");
    assert!(!out.exists());

    let o = create(dir.path())
        .args(["--arch", "amd64,arm64", "--out"])
        .arg(&out)
        .args(["--image", &reference, "--insecure-registry", &reg.host])
        .output()
        .unwrap();
    let sha = ok(&o).trim().to_string();
    let m = manifest(&out);
    assert_eq!(m.format_version, 4, "format 3 (images) with evidence (#33)");
    let image = only_image(&m);
    assert_eq!(image.registry.as_deref(), Some(reg.host.as_str()));
    assert_eq!(image.repository, REPO);
    assert_eq!(image.tag.as_deref(), Some("v1"));
    assert_eq!(format!("sha256:{}", image.digest), img.index);
    // The index bytes unchanged, and every manifest byte-identical to the
    // registry's.
    assert_eq!(blob(&out, &img.index), served);
    let top = image
        .manifests
        .iter()
        .find(|d| d.sha256 == image.digest)
        .unwrap();
    assert_eq!(top.media_type, OCI_INDEX);
    for platform in ["linux/amd64", "linux/arm64"] {
        let digest = &img.platforms[platform];
        let d = image
            .manifests
            .iter()
            .find(|d| format!("sha256:{}", d.sha256) == *digest)
            .unwrap_or_else(|| panic!("{platform} carried"));
        assert_eq!(d.platform.as_deref(), Some(platform));
        assert_eq!(blob(&out, digest), reg.inspect_raw(REPO, digest).unwrap());
    }
    // The attestation of amd64 travels with it; s390x is left out, named.
    assert!(
        image
            .manifests
            .iter()
            .any(|d| format!("sha256:{}", d.sha256) == img.attestation
                && d.platform.as_deref() == Some("unknown/unknown"))
    );
    assert_eq!(image.left_out.len(), 1, "{:?}", image.left_out);
    assert_eq!(image.left_out[0].platform.as_deref(), Some("linux/s390x"));
    // Every config and layer of the carried platforms, as pushed.
    for d in &image.blobs {
        let bytes = blob(&out, d.sha256.as_str());
        let (media_type, pushed) = &img.blobs[&format!("sha256:{}", d.sha256)];
        assert_eq!(&bytes, pushed);
        assert_eq!(&d.media_type, media_type);
    }
    assert_eq!(image.blobs.len(), 2 * 3 + 2, "{:?}", image.blobs);

    let store = dir.path().join("store");
    ok(&import(&out, &sha, &store));

    // A pin that the tag no longer names is refused with both digests.
    let other = "0".repeat(64);
    let e = fails(
        &create(dir.path())
            .args(["--arch", "amd64", "--out"])
            .arg(dir.path().join("pinned"))
            .args(["--image", &format!("{reference}@sha256:{other}")])
            .args(["--insecure-registry", &reg.host])
            .output()
            .unwrap(),
        1,
    );
    assert!(e.contains(&other) && e.contains(&img.index[7..]), "{e}");
    assert!(e.contains("tag moved") || e.contains("pins"), "{e}");
    // Pinned by digest alone: no tag recorded.
    let out2 = dir.path().join("by-digest");
    ok(&create(dir.path())
        .args(["--arch", "arm64", "--out"])
        .arg(&out2)
        .args(["--image", &format!("{}/{REPO}@{}", reg.host, img.index)])
        .args(["--insecure-registry", &reg.host])
        .output()
        .unwrap());
    let m2 = manifest(&out2);
    assert_eq!(only_image(&m2).tag, None);
    // amd64, s390x, and the attestation about amd64 go with it.
    let left: Vec<_> = only_image(&m2)
        .left_out
        .iter()
        .map(|d| d.platform.clone().unwrap_or_default())
        .collect();
    assert_eq!(left.len(), 3, "{left:?}");
    assert!(left.contains(&"unknown/unknown".to_string()), "{left:?}");
}

/// #47 item 1: the attestation's config is the two-byte `{}` under the image
/// config media type, and the bundle's own SBOM referrer names the same
/// bytes as OCI 1.1's empty descriptor. The bundle records both
/// descriptors, says format 5, and imports.
#[test]
fn one_blob_named_as_a_config_and_as_the_empty_descriptor_imports() {
    const EMPTY: &str = "application/vnd.oci.empty.v1+json";
    let reg = Distribution::start().unwrap();
    let dir = tempfile::tempdir().unwrap();
    let img = TestImage::build_with(
        &dir.path().join("layout"),
        "v1",
        7,
        &["amd64", "arm64"],
        (1, 4096),
        true,
    )
    .unwrap();
    reg.push(&img.layout, "v1", REPO).unwrap();
    let out = dir.path().join("b");
    let sha = ok(&create(dir.path())
        .args(["--arch", "amd64,arm64", "--out"])
        .arg(&out)
        .args(["--image", &format!("{}/{REPO}:v1", reg.host)])
        .args(["--insecure-registry", &reg.host])
        .output()
        .unwrap())
    .trim()
    .to_string();
    let m = llmgw_shared::manifest::Manifest::from_json_bytes(
        &std::fs::read(out.join("manifest.json")).unwrap(),
    )
    .unwrap();
    let empty = llmgw_shared::Sha256::of(b"{}");
    let mut types: Vec<&str> = only_image(&m)
        .blobs
        .iter()
        .filter(|d| d.sha256 == empty)
        .map(|d| d.media_type.as_str())
        .collect();
    types.sort_unstable();
    assert_eq!(types, [EMPTY, "application/vnd.oci.image.config.v1+json"]);
    assert_eq!(m.format_version, 5);
    let store = dir.path().join("store");
    ok(&import(&out, &sha, &store));
    // A node pulls it whole from the mirror: every manifest, every blob.
    let report = ok(&llmgw()
        .args(["bundle", "rehearse", "--sha256", &sha])
        .arg(&out)
        .output()
        .unwrap());
    assert!(
        report.contains(&format!("ok   image    {}/{REPO}:v1@sha256:", reg.host)),
        "{report}"
    );
    assert!(report.contains(" 0 failed"), "{report}");
}

#[test]
fn a_record_that_lies_about_a_descriptor_is_refused_at_import() {
    let reg = Distribution::start().unwrap();
    let dir = tempfile::tempdir().unwrap();
    let img = pushed(dir.path(), &reg, 2);
    let out = dir.path().join("b");
    ok(&create(dir.path())
        .args(["--arch", "amd64", "--out"])
        .arg(&out)
        .args(["--image", &format!("{}/{REPO}:v1", reg.host)])
        .args(["--insecure-registry", &reg.host])
        .output()
        .unwrap());
    // The record says a layer is a config: the manifest's descriptor says
    // otherwise. The bundle's hash is recomputed, as a forger would. The
    // manifest as written (its SBOM referrer kept, which `manifest` leaves out).
    let mut m = llmgw_shared::manifest::Manifest::from_json_bytes(
        &std::fs::read(out.join("manifest.json")).unwrap(),
    )
    .unwrap();
    let layer = m.images[0]
        .blobs
        .iter_mut()
        .find(|d| d.media_type.ends_with("tar+gzip"))
        .unwrap();
    layer.media_type = "application/vnd.oci.image.config.v1+json".into();
    let lied = layer.sha256.clone();
    let bytes = m.to_canonical_json();
    std::fs::write(out.join("manifest.json"), &bytes).unwrap();
    let sha = llmgw_shared::sha256_hex(&bytes);
    let store = dir.path().join("store");
    let e = fails(&import(&out, &sha, &store), 1);
    assert!(
        e.contains("acme/app") && e.contains(lied.as_str()) && e.contains("media type"),
        "{e}"
    );
    assert!(
        e.contains("tar+gzip") && e.contains("config.v1+json"),
        "{e}"
    );
    assert!(
        !store.join("bundles").exists()
            || std::fs::read_dir(store.join("bundles"))
                .unwrap()
                .next()
                .is_none()
    );
    let _ = img;
}

#[test]
fn a_chart_is_carried_as_helm_pushed_it() {
    use llmgw_fixture::registry::HELM_CHART;
    let reg = Distribution::start().unwrap();
    let dir = tempfile::tempdir().unwrap();
    let chart =
        TestImage::chart(&dir.path().join("chart"), "acme", "0.1.0+build.7", "1.0").unwrap();
    reg.push(&chart.layout, &chart.tag, "charts/acme").unwrap();
    let out = dir.path().join("b");
    let sha = ok(&create(dir.path())
        .args(["--arch", "amd64", "--out"])
        .arg(&out)
        .args([
            "--chart",
            &format!("oci://{}/charts/acme:0.1.0+build.7", reg.host),
        ])
        .args(["--insecure-registry", &reg.host])
        .output()
        .unwrap())
    .trim()
    .to_string();
    let m = manifest(&out);
    assert_eq!(m.format_version, 4, "format 3 (images) with evidence (#33)");
    assert_eq!(m.charts.len(), 1);
    let c = &m.charts[0];
    assert_eq!(
        (c.name.as_str(), c.version.as_str()),
        ("acme", "0.1.0+build.7")
    );
    assert_eq!(c.app_version.as_deref(), Some("1.0"));
    assert_eq!(c.artifact.tag.as_deref(), Some("0.1.0_build.7"));
    assert_eq!(format!("sha256:{}", c.artifact.digest), chart.index);
    let (_, tgz) = chart.blobs.values().find(|(t, _)| t == HELM_CHART).unwrap();
    assert_eq!(
        &blob(&out, c.package.as_str()),
        tgz,
        "the .tgz exactly as pushed"
    );
    ok(&import(&out, &sha, &dir.path().join("store")));
}

/// The real registry over plain HTTP, asked without `--insecure-registry`
/// (#54 item 7): the first failed TLS handshake says the registry speaks
/// plain HTTP and names the flag to pass, with no retry.
#[test]
fn a_plain_http_registry_asked_over_tls_names_the_flag_at_once() {
    let reg = Distribution::start().unwrap();
    let dir = tempfile::tempdir().unwrap();
    let out = dir.path().join("b");
    let started = std::time::Instant::now();
    let e = fails(
        &create(dir.path())
            .args(["--arch", "amd64", "--out"])
            .arg(&out)
            .args(["--image", &format!("{}/{REPO}:v1", reg.host)])
            .output()
            .unwrap(),
        1,
    );
    let took = started.elapsed();
    let says = format!(
        "this registry speaks plain HTTP; pass --insecure-registry {} if you trust the network",
        reg.host
    );
    assert!(e.contains(&says), "{e}");
    assert!(took < std::time::Duration::from_secs(10), "{took:?}: {e}");
    assert!(!out.exists());
}
