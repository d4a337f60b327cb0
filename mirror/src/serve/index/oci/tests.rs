//! Tests of the OCI index: trusted order for tags ([`Authority::moves`]),
//! names kept apart, `ns`, referrers from carried bytes (parsed once).

use super::*;
use std::collections::HashMap;

use llmgw_shared::BundleId;
use llmgw_shared::manifest::{Manifest, OciDescriptor};

const INDEX: &str = "application/vnd.oci.image.index.v1+json";
const MANIFEST: &str = "application/vnd.oci.image.manifest.v1+json";

fn desc(bytes: &[u8], media_type: &str) -> OciDescriptor {
    OciDescriptor {
        sha256: Sha256::of(bytes),
        size: bytes.len() as u64,
        media_type: media_type.into(),
        platform: None,
    }
}

fn image(registry: Option<&str>, repo: &str, tag: &str, top: &[u8], layer: &[u8]) -> OciImage {
    OciImage {
        registry: registry.map(str::to_string),
        repository: repo.into(),
        tag: Some(tag.into()),
        digest: Sha256::of(top),
        manifests: vec![desc(top, MANIFEST)],
        blobs: vec![desc(layer, "application/vnd.oci.image.layer.v1.tar+gzip")],
        left_out: vec![],
    }
}

fn bundle(id: &str, images: Vec<OciImage>) -> Held {
    let mut m = Manifest::new(vec!["amd64".into()], 0);
    m.images = images;
    crate::test_ids::held(id, m)
}

fn none(_: &Sha256, _: u64) -> Option<Vec<u8>> {
    None
}

/// The index with every bundle of one standing (no signatures), so the
/// later bundle in the order given moves a tag.
fn build(bundles: &[Held], read: ReadBlob<'_>) -> OciIndex {
    OciIndex::build(
        bundles,
        &Authority::default(),
        read,
        &mut ParsedManifests::default(),
    )
}

#[test]
fn a_tag_follows_the_trusted_order_and_blobs_stay_with_their_name() {
    let old = bundle(
        "a",
        vec![image(Some("docker.io"), "acme/app", "v1", b"m1", b"l1")],
    );
    let new = bundle(
        "b",
        vec![image(Some("docker.io"), "acme/app", "v1", b"m2", b"l2")],
    );
    let other = bundle(
        "c",
        vec![image(Some("docker.io"), "acme/other", "v1", b"m3", b"l3")],
    );
    let ix = build(&[old.clone(), new.clone(), other.clone()], &none);
    let Lookup::Found(r) = ix.lookup("acme/app", None) else {
        panic!()
    };
    assert_eq!(r.tags["v1"], Sha256::of(b"m2"));
    // Both held manifests stay reachable by digest, and their blobs.
    assert!(r.manifests.contains_key(&Sha256::of(b"m1")));
    assert!(r.blobs.contains_key(&Sha256::of(b"l1")));
    assert!(
        !r.blobs.contains_key(&Sha256::of(b"l3")),
        "another name's blob"
    );
    let ix = build(&[new, old, other], &none);
    let Lookup::Found(r) = ix.lookup("acme/app", Some("registry-1.docker.io")) else {
        panic!()
    };
    assert_eq!(r.tags["v1"], Sha256::of(b"m1"));
}

#[test]
fn ns_picks_the_registry_and_two_holders_without_it_are_named() {
    let b = bundle(
        "a",
        vec![
            image(Some("docker.io"), "acme/app", "v1", b"d", b"l1"),
            image(Some("ghcr.io"), "acme/app", "v1", b"g", b"l2"),
            image(None, "charts/acme", "0.1.0", b"c", b"l3"),
        ],
    );
    let ix = build(&[b], &none);
    match ix.lookup("acme/app", None) {
        Lookup::Ambiguous(held) => assert_eq!(held, ["docker.io", "ghcr.io"]),
        other => panic!("{other:?}"),
    }
    let Lookup::Found(r) = ix.lookup("acme/app", Some("ghcr.io")) else {
        panic!()
    };
    assert_eq!(r.tags["v1"], Sha256::of(b"g"));
    assert!(matches!(
        ix.lookup("acme/app", Some("quay.io")),
        Lookup::NotFrom { .. }
    ));
    assert!(matches!(
        ix.lookup("charts/acme", Some("docker.io")),
        Lookup::Found(_)
    ));
    assert!(matches!(ix.lookup("acme/none", None), Lookup::Unknown));
}

#[test]
fn names_tags_and_trees_the_grammar_refuses_are_not_served() {
    let mut bad_top = image(None, "acme/app", "v1", b"m", b"l");
    bad_top.digest = Sha256::of(b"elsewhere");
    let b = bundle(
        "a",
        vec![
            image(None, "../etc", "v1", b"m", b"l"),
            image(None, "acme/app", "../x", b"m", b"l"),
            image(Some("a/b"), "acme/app", "v1", b"m", b"l"),
            bad_top,
        ],
    );
    let ix = build(&[b], &none);
    assert_eq!(ix.names().count(), 0);
}

#[test]
fn referrers_come_from_the_carried_subject() {
    let top = br#"{"schemaVersion":2,"mediaType":"application/vnd.oci.image.manifest.v1+json"}"#;
    let sbom = format!(
        r#"{{"schemaVersion":2,"artifactType":"application/spdx+json","config":{{"mediaType":"application/vnd.oci.empty.v1+json","digest":"sha256:{e}","size":2}},"layers":[],"subject":{{"mediaType":"{MANIFEST}","digest":"sha256:{s}","size":{n}}},"annotations":{{"k":"v"}}}}"#,
        e = Sha256::of(b"{}"),
        s = Sha256::of(top),
        n = top.len()
    );
    let mut img = image(None, "acme/app", "v1", top, b"l");
    img.manifests.push(desc(sbom.as_bytes(), MANIFEST));
    img.manifests.push(desc(b"[not json", INDEX));
    let blobs: HashMap<Sha256, Vec<u8>> = [
        (Sha256::of(top), top.to_vec()),
        (Sha256::of(sbom.as_bytes()), sbom.clone().into_bytes()),
        (Sha256::of(b"[not json"), b"[not json".to_vec()),
    ]
    .into();
    let read = |s: &Sha256, _max: u64| blobs.get(s).cloned();
    let ix = build(&[bundle("a", vec![img])], &read);
    let Lookup::Found(r) = ix.lookup("acme/app", None) else {
        panic!()
    };
    let list = &r.referrers[&Sha256::of(top)];
    assert_eq!(list.len(), 1);
    assert_eq!(list[0].blob.sha256, Sha256::of(sbom.as_bytes()));
    assert_eq!(
        list[0].artifact_type.as_deref(),
        Some("application/spdx+json")
    );
    assert_eq!(list[0].annotations["k"], "v");
}

#[test]
fn a_tag_a_followed_series_serves_moves_only_with_that_series() {
    use crate::store::series::Policy;
    use crate::store::series::follow::Followed;
    let app = |id: &str, tag: &str, top: &[u8]| {
        bundle(
            id,
            vec![image(Some("docker.io"), "acme/app", tag, top, b"l")],
        )
    };
    // s1: followed, v1 -> m1; u2: unsigned, v1 -> m2 and a new tag;
    // o3: another channel, v1 -> m3; s4: followed again, v1 -> m4.
    let bundles = [
        app("s1", "v1", b"m1"),
        app("u2", "v1", b"m2"),
        app("u2b", "fresh", b"m2b"),
        app("o3", "v1", b"m3"),
        app("s4", "v2", b"m4"),
    ];
    let signer = |id: &BundleId, _: &Manifest| {
        let channel = match crate::test_ids::name(id).as_bytes()[0] {
            b's' => "stable",
            b'o' => "other",
            _ => return None,
        };
        Some(Followed {
            key_id: "K".into(),
            channel: channel.into(),
        })
    };
    let authority = Authority::decide(&bundles, signer, &Policy::default());
    let ix = OciIndex::build(&bundles, &authority, &none, &mut ParsedManifests::default());
    let Lookup::Found(r) = ix.lookup("acme/app", None) else {
        panic!()
    };
    assert_eq!(
        r.tags["v1"],
        Sha256::of(b"m1"),
        "neither u2 nor o3 moved it"
    );
    assert_eq!(r.tag_bundles["v1"], crate::test_ids::id("s1").as_str());
    assert_eq!(r.tags["fresh"], Sha256::of(b"m2b"), "a tag nobody signed");
    assert_eq!(r.tags["v2"], Sha256::of(b"m4"));
    for held in [&b"m2"[..], b"m3"] {
        assert!(r.manifests.contains_key(&Sha256::of(held)), "by digest");
    }
    // Following the other channel lets o3 move v1.
    let policy = Policy {
        follow: vec![
            Followed {
                key_id: "K".into(),
                channel: "stable".into(),
            },
            Followed {
                key_id: "K".into(),
                channel: "other".into(),
            },
        ],
        ..Policy::default()
    };
    let authority = Authority::decide(&bundles, signer, &policy);
    let ix = OciIndex::build(&bundles, &authority, &none, &mut ParsedManifests::default());
    let Lookup::Found(r) = ix.lookup("acme/app", None) else {
        panic!()
    };
    assert_eq!(r.tags["v1"], Sha256::of(b"m3"));
}

#[test]
fn a_manifest_is_parsed_once_over_builds_and_forgotten_when_no_longer_held() {
    let top = br#"{"schemaVersion":2}"#;
    let sbom = format!(
        r#"{{"schemaVersion":2,"subject":{{"mediaType":"{MANIFEST}","digest":"sha256:{s}","size":{n}}}}}"#,
        s = Sha256::of(top),
        n = top.len()
    );
    let mut img = image(None, "acme/app", "v1", top, b"l");
    img.manifests.push(desc(sbom.as_bytes(), MANIFEST));
    let blobs: HashMap<Sha256, Vec<u8>> = [
        (Sha256::of(top), top.to_vec()),
        (Sha256::of(sbom.as_bytes()), sbom.clone().into_bytes()),
    ]
    .into();
    let reads = std::cell::Cell::new(0);
    let read = |s: &Sha256, _max: u64| {
        reads.set(reads.get() + 1);
        blobs.get(s).cloned()
    };
    let held = [bundle("a", vec![img])];
    let mut parsed = ParsedManifests::default();
    let referrers = |ix: &OciIndex| match ix.lookup("acme/app", None) {
        Lookup::Found(r) => r.referrers.get(&Sha256::of(top)).map_or(0, Vec::len),
        _ => 0,
    };
    let ix = OciIndex::build(&held, &Authority::default(), &read, &mut parsed);
    assert_eq!((reads.get(), referrers(&ix), parsed.len()), (2, 1, 2));
    let ix = OciIndex::build(&held, &Authority::default(), &read, &mut parsed);
    assert_eq!((reads.get(), referrers(&ix)), (2, 1), "nothing read again");
    // A build that no longer holds them forgets them; a failed read is
    // not kept, so it is tried again next time.
    let _ = OciIndex::build(&[], &Authority::default(), &read, &mut parsed);
    assert!(parsed.is_empty());
    let ix = OciIndex::build(&held, &Authority::default(), &none, &mut parsed);
    assert_eq!((referrers(&ix), parsed.len()), (0, 0));
}
