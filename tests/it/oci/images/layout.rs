//! `--image NAME:TAG=oci-layout:PATH[:REF]` over a multi-platform layout
//! as BuildKit shapes it (#36): the index carried unchanged with the
//! `--arch` children and the attestation about them, the rest left out,
//! every blob byte-identical, no registry recorded, and the closed tree
//! accepted at import; a layout with none of the bundle's platforms is
//! refused listing what it has.

use std::collections::BTreeSet;

use llmgw_fixture::registry::TestImage;

use super::common::*;

#[test]
fn a_layout_index_is_carried_with_the_arch_children_and_their_attestation() {
    let dir = tempfile::tempdir().unwrap();
    let img = TestImage::build(
        &dir.path().join("layout"),
        "v1",
        3,
        &["amd64", "arm64", "s390x"],
        2,
        16 * 1024,
    )
    .unwrap();
    let flag = format!("acme/app:v1=oci-layout:{}:v1", img.layout.display());
    let out = dir.path().join("b");
    let o = create(dir.path())
        .env("SOURCE_DATE_EPOCH", "1764892800")
        .args(["--arch", "amd64", "--out"])
        .arg(&out)
        .args(["--image", &flag])
        .output()
        .unwrap();
    let sha = ok(&o).trim().to_string();
    let m = manifest(&out);
    let image = only_image(&m);
    assert_eq!(image.registry, None, "a layout's image has no registry");
    assert_eq!(
        (image.repository.as_str(), image.tag.as_deref()),
        ("acme/app", Some("v1"))
    );
    assert_eq!(format!("sha256:{}", image.digest), img.index);
    let digests = |list: &[llmgw_shared::manifest::OciDescriptor]| -> BTreeSet<String> {
        list.iter()
            .map(|d| format!("sha256:{}", d.sha256))
            .collect()
    };
    assert_eq!(
        digests(&image.manifests),
        BTreeSet::from([
            img.index.clone(),
            img.platforms["linux/amd64"].clone(),
            img.attestation.clone()
        ])
    );
    assert_eq!(
        digests(&image.left_out),
        BTreeSet::from([
            img.platforms["linux/arm64"].clone(),
            img.platforms["linux/s390x"].clone()
        ])
    );
    for d in image.all_blobs() {
        let digest = format!("sha256:{}", d.sha256);
        assert_eq!(blob(&out, &digest), img.blobs[&digest].1, "{digest}");
    }
    let o = import(&out, &sha, &dir.path().join("store"));
    ok(&o);

    // A copy the cache kept and that rotted since is replaced by the
    // layout's checked bytes, never carried.
    let layer = image
        .blobs
        .iter()
        .find(|d| d.media_type.contains("layer"))
        .unwrap();
    let cached = dir
        .path()
        .join("cache/blobs/sha256")
        .join(layer.sha256.as_str());
    let mut perm = std::fs::metadata(&cached).unwrap().permissions();
    #[allow(clippy::permissions_set_readonly_false)]
    perm.set_readonly(false);
    std::fs::set_permissions(&cached, perm).unwrap();
    std::fs::write(&cached, b"rot").unwrap();
    let again = dir.path().join("again");
    let o = create(dir.path())
        .env("SOURCE_DATE_EPOCH", "1764892800")
        .args(["--arch", "amd64", "--out"])
        .arg(&again)
        .args(["--image", &flag])
        .output()
        .unwrap();
    assert_eq!(ok(&o).trim(), sha, "the same bundle");
    let digest = format!("sha256:{}", layer.sha256);
    assert_eq!(blob(&again, &digest), img.blobs[&digest].1);

    let s390x = TestImage::build(&dir.path().join("s390x"), "v1", 4, &["s390x"], 1, 1024).unwrap();
    let o = create(dir.path())
        .args(["--arch", "amd64,arm64", "--dry-run", "--out"])
        .arg(dir.path().join("none"))
        .args([
            "--image",
            &format!("acme/z:v1=oci-layout:{}", s390x.layout.display()),
        ])
        .output()
        .unwrap();
    let err = fails(&o, 1);
    assert!(
        err.contains("no linux image for amd64, arm64") && err.contains("linux/s390x"),
        "{err}"
    );
}

/// Layouts as a real tool writes them: `skopeo copy` of the amd64 image
/// alone (index.json naming a manifest, not an index) and of the whole
/// index into the same folder under another ref name.
#[test]
fn layouts_skopeo_wrote_are_carried_and_ref_picks_among_them() {
    let dir = tempfile::tempdir().unwrap();
    let img = TestImage::build(
        &dir.path().join("src"),
        "v1",
        5,
        &["amd64", "arm64"],
        1,
        4096,
    )
    .unwrap();
    let copied = dir.path().join("copied");
    let src = format!("oci:{}:v1", img.layout.display());
    for (all, to) in [(false, "one"), (true, "all")] {
        let mut c = std::process::Command::new("skopeo");
        c.args(["--override-os", "linux", "--override-arch", "amd64", "copy"]);
        if all {
            c.arg("--all");
        }
        let o = c
            .args([&src, &format!("oci:{}:{to}", copied.display())])
            .output()
            .expect("skopeo (scripts/setup.sh installs it)");
        ok(&o);
    }
    let o = create(dir.path())
        .args(["--arch", "amd64", "--dry-run", "--out"])
        .arg(dir.path().join("x"))
        .args([
            "--image",
            &format!("acme/app:1=oci-layout:{}", copied.display()),
        ])
        .output()
        .unwrap();
    let err = fails(&o, 1);
    assert!(err.contains("\"one\"") && err.contains("\"all\""), "{err}");

    let out = dir.path().join("b");
    let o = create(dir.path())
        .args(["--arch", "amd64", "--out"])
        .arg(&out)
        .args([
            "--image",
            &format!("acme/one:1=oci-layout:{}:one", copied.display()),
        ])
        .args([
            "--image",
            &format!("acme/all:1=oci-layout:{}:all", copied.display()),
        ])
        .output()
        .unwrap();
    let sha = ok(&o).trim().to_string();
    let m = manifest(&out);
    let by_name = |name: &str| m.images.iter().find(|i| i.repository == name).unwrap();
    let one = by_name("acme/one");
    assert_eq!(
        format!("sha256:{}", one.digest),
        img.platforms["linux/amd64"]
    );
    assert_eq!(one.manifests.len(), 1, "a manifest, no index: {one:?}");
    assert_eq!(format!("sha256:{}", by_name("acme/all").digest), img.index);
    ok(&import(&out, &sha, &dir.path().join("store")));
}
