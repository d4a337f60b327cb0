//! The OCI parts: a closed tree passes, every lie is named; the manifest's
//! validation of images.

use std::collections::BTreeMap;

use super::*;
use crate::Sha256;
use crate::manifest::{FORMAT_OCI, Manifest, ManifestError, OciDescriptor, OciImage};
use crate::manifest::{OciTreeError, check_tree};

const LAYER: &str = "application/vnd.oci.image.layer.v1.tar+gzip";
const CONFIG: &str = "application/vnd.oci.image.config.v1+json";

fn desc(bytes: &[u8], media_type: &str, platform: Option<&str>) -> OciDescriptor {
    OciDescriptor {
        sha256: Sha256::of(bytes),
        size: bytes.len() as u64,
        media_type: media_type.into(),
        platform: platform.map(Into::into),
    }
}

fn json_desc(d: &OciDescriptor) -> serde_json::Value {
    let mut v = serde_json::json!({
        "mediaType": d.media_type, "digest": format!("sha256:{}", d.sha256), "size": d.size,
    });
    if let Some(p) = &d.platform {
        let mut parts = p.split('/');
        v["platform"] = serde_json::json!({
            "os": parts.next().unwrap(), "architecture": parts.next().unwrap(),
        });
    }
    v
}

fn manifest_bytes(config: &OciDescriptor, layers: &[OciDescriptor]) -> Vec<u8> {
    serde_json::to_vec(&serde_json::json!({
        "schemaVersion": 2, "mediaType": OCI_MANIFEST,
        "config": json_desc(config),
        "layers": layers.iter().map(json_desc).collect::<Vec<_>>(),
    }))
    .unwrap()
}

/// An index over two platforms, the amd64 child carried and the arm64 one
/// left out; what each carried manifest names, by digest.
fn sample_image() -> (OciImage, BTreeMap<Sha256, Named>) {
    let config = desc(b"{\"architecture\":\"amd64\"}", CONFIG, None);
    let layer = desc(b"layer bytes", LAYER, None);
    let amd = manifest_bytes(&config, std::slice::from_ref(&layer));
    let arm = manifest_bytes(&desc(b"{}", CONFIG, None), &[]);
    let amd_d = desc(&amd, OCI_MANIFEST, Some("linux/amd64"));
    let arm_d = desc(&arm, OCI_MANIFEST, Some("linux/arm64"));
    let index = serde_json::to_vec(&serde_json::json!({
        "schemaVersion": 2, "mediaType": OCI_INDEX,
        "manifests": [json_desc(&amd_d), json_desc(&arm_d)],
    }))
    .unwrap();
    let index_d = desc(&index, OCI_INDEX, None);
    let mut named = BTreeMap::new();
    named.insert(
        index_d.sha256.clone(),
        parse_manifest(OCI_INDEX, &index).unwrap(),
    );
    named.insert(
        amd_d.sha256.clone(),
        parse_manifest(OCI_MANIFEST, &amd).unwrap(),
    );
    let image = OciImage {
        registry: Some("127.0.0.1:5000".into()),
        repository: "acme/app".into(),
        tag: Some("v1".into()),
        digest: index_d.sha256.clone(),
        manifests: vec![index_d, amd_d],
        blobs: vec![config, layer],
        left_out: vec![arm_d],
    };
    (image, named)
}

#[test]
fn a_closed_tree_passes() {
    let (image, named) = sample_image();
    check_tree("x", &image, &named).unwrap();
}

#[test]
fn a_lying_size_or_type_is_named() {
    let (mut image, named) = sample_image();
    image.blobs[1].size += 1;
    let e = check_tree("acme/app", &image, &named).unwrap_err();
    let text = e.to_string();
    assert!(
        matches!(*e, OciTreeError::Differs { field: "size", .. }),
        "{text}"
    );
    assert!(text.contains("acme/app") && text.contains(image.blobs[1].sha256.as_str()));
    assert!(text.contains("11") && text.contains("12"), "{text}");

    let (mut image, named) = sample_image();
    image.blobs[0].media_type = LAYER.into();
    let e = check_tree("x", &image, &named).unwrap_err();
    assert!(
        matches!(
            *e,
            OciTreeError::Differs {
                field: "media type",
                ..
            }
        ),
        "{e}"
    );
}

/// `{}` as an attestation manifest's legacy config and as OCI 1.1's empty
/// descriptor of a referrer, in one image (#47 item 1): each descriptor is
/// checked against a record of its own media type; a record of a media
/// type no parent names is refused; the manifest says format 5.
#[test]
fn one_blob_named_under_two_media_types() {
    const EMPTY: &str = "application/vnd.oci.empty.v1+json";
    let (mut image, mut named) = sample_image();
    let referrer = serde_json::to_vec(&serde_json::json!({
        "schemaVersion": 2, "mediaType": OCI_MANIFEST, "artifactType": "application/spdx+json",
        "config": json_desc(&desc(b"{}", EMPTY, None)), "layers": [],
        "subject": json_desc(&image.manifests[0]),
    }))
    .unwrap();
    let referrer_d = desc(&referrer, OCI_MANIFEST, None);
    // An attestation as legacy artifact tools write it: `{}` as an image
    // config, attached to the index by `subject` as the referrer is.
    let att = serde_json::to_vec(&serde_json::json!({
        "schemaVersion": 2, "mediaType": OCI_MANIFEST,
        "config": json_desc(&desc(b"{}", CONFIG, None)), "layers": [],
        "subject": json_desc(&image.manifests[0]),
    }))
    .unwrap();
    let att_d = desc(&att, OCI_MANIFEST, None);
    for (d, bytes) in [(&att_d, &att), (&referrer_d, &referrer)] {
        named.insert(
            d.sha256.clone(),
            parse_manifest(OCI_MANIFEST, bytes).unwrap(),
        );
        image.manifests.push(d.clone());
    }
    image.blobs.push(desc(b"{}", CONFIG, None));
    image.blobs.push(desc(b"{}", EMPTY, None));
    image.sort();
    check_tree("x", &image, &named).unwrap();
    let m = with_image(image.clone());
    assert_eq!(m.needed_format(), crate::manifest::FORMAT_SHARED_BLOBS);
    let (plain, _) = sample_image();
    assert_eq!(with_image(plain).needed_format(), FORMAT_OCI);

    // A third record of `{}` under a type no parent names is a stowaway.
    image.blobs.push(desc(b"{}", "application/x-other", None));
    let e = check_tree("x", &image, &named).unwrap_err();
    assert!(matches!(*e, OciTreeError::Unnamed { .. }), "{e}");
}

#[test]
fn an_unnamed_or_missing_blob_is_refused() {
    let (mut image, named) = sample_image();
    image.blobs.push(desc(b"stowaway", LAYER, None));
    let e = check_tree("x", &image, &named).unwrap_err();
    assert!(matches!(*e, OciTreeError::Unnamed { .. }), "{e}");

    let (mut image, named) = sample_image();
    image.blobs.remove(1);
    let e = check_tree("x", &image, &named).unwrap_err();
    assert!(matches!(*e, OciTreeError::Missing { .. }), "{e}");

    // An index child neither carried nor left out.
    let (mut image, named) = sample_image();
    image.left_out.clear();
    let e = check_tree("x", &image, &named).unwrap_err();
    assert!(matches!(*e, OciTreeError::Missing { .. }), "{e}");
}

#[test]
fn absurd_manifests_are_refused_by_their_bytes() {
    let layer = desc(b"l", LAYER, None);
    let many = vec![layer; MAX_OCI_CHILDREN * 10];
    let bytes = manifest_bytes(&desc(b"{}", CONFIG, None), &many);
    let e = parse_manifest(OCI_MANIFEST, &bytes).unwrap_err();
    // 100 000 descriptors do not fit in 4 MiB either; either refusal names it.
    assert!(
        matches!(
            e,
            OciParseError::TooManyChildren { .. } | OciParseError::TooLarge { .. }
        ),
        "{e}"
    );
    let few = vec![desc(b"l", LAYER, None); MAX_OCI_CHILDREN + 1];
    let bytes = manifest_bytes(&desc(b"{}", CONFIG, None), &few);
    assert!(bytes.len() as u64 <= MAX_OCI_MANIFEST_BYTES);
    let e = parse_manifest(OCI_MANIFEST, &bytes).unwrap_err();
    assert!(matches!(e, OciParseError::TooManyChildren { .. }), "{e}");

    let mut huge = desc(b"{}", CONFIG, None);
    huge.size = 10 << 30;
    let e = parse_manifest(OCI_MANIFEST, &manifest_bytes(&huge, &[])).unwrap_err();
    assert!(matches!(e, OciParseError::ConfigTooLarge { .. }), "{e}");

    let bytes = manifest_bytes(&desc(b"{}", CONFIG, None), &[]);
    let e = parse_manifest(DOCKER_MANIFEST, &bytes).unwrap_err();
    assert!(matches!(e, OciParseError::MediaType { .. }), "{e}");
    let e = parse_manifest(OCI_MANIFEST, b"{\"schemaVersion\":").unwrap_err();
    assert!(matches!(e, OciParseError::NotJson { .. }), "{e}");
}

fn with_image(image: OciImage) -> Manifest {
    let mut m = Manifest::new(vec!["amd64".into()], 0);
    m.format_version = m.needed_format();
    m.images.push(image);
    m.format_version = m.needed_format();
    m
}

fn refused(m: &Manifest) -> String {
    let e = Manifest::from_json_bytes(&m.to_canonical_json()).unwrap_err();
    llmgw_chain(&e)
}

fn llmgw_chain(e: &ManifestError) -> String {
    crate::chain(e)
}

#[test]
fn validation_of_images() {
    let (image, _) = sample_image();
    let m = with_image(image.clone());
    assert_eq!(m.format_version, FORMAT_OCI);
    Manifest::from_json_bytes(&m.to_canonical_json()).unwrap();

    let mut old = m.clone();
    old.format_version = 2;
    assert!(refused(&old).contains("need format 3"), "{}", refused(&old));

    for (field, value) in [
        ("repository", "Acme/App"),
        ("repository", "acme/../etc"),
        ("tag", "a/b"),
        ("registry", "host:99999"),
    ] {
        let mut i = image.clone();
        match field {
            "repository" => i.repository = value.into(),
            "tag" => i.tag = Some(value.into()),
            _ => i.registry = Some(value.into()),
        }
        let text = refused(&with_image(i));
        assert!(text.contains(value), "{field}: {text}");
    }

    let mut i = image.clone();
    i.digest = Sha256::of(b"elsewhere");
    assert!(refused(&with_image(i)).contains("top digest"));

    let mut i = image.clone();
    i.blobs[0].media_type = "application/json; charset=utf-8".into();
    assert!(refused(&with_image(i)).contains("media type"));

    // One size per sha256: the same layer twice with two sizes.
    let mut i = image.clone();
    let mut twin = i.blobs[1].clone();
    twin.size += 5;
    twin.media_type = CONFIG.into();
    i.blobs.push(twin);
    assert!(refused(&with_image(i)).contains("sizes"));
}
