//! Tests of the `/v2/` decision: grammar, methods, negotiation, pages.

use super::*;
use crate::serve::oci::error::OciCode;
use llmgw_shared::Sha256;
use llmgw_shared::manifest::{Manifest, OciDescriptor, OciImage};

const INDEX: &str = "application/vnd.oci.image.index.v1+json";

fn index() -> OciIndex {
    let d = |b: &[u8], t: &str| OciDescriptor {
        sha256: Sha256::of(b),
        size: b.len() as u64,
        media_type: t.into(),
        platform: None,
    };
    let mut m = Manifest::new(vec!["amd64".into()], 0);
    for tag in ["v1", "v2", "a"] {
        m.images.push(OciImage {
            registry: Some("docker.io".into()),
            repository: "acme/app".into(),
            tag: Some(tag.into()),
            digest: Sha256::of(b"top"),
            manifests: vec![d(b"top", INDEX)],
            blobs: vec![d(b"layer", "application/octet-stream")],
            left_out: vec![],
        });
    }
    OciIndex::build(
        &[crate::test_ids::held("x", m)],
        &Default::default(),
        &|_, _| None,
        &mut Default::default(),
    )
}

fn ask<'a>(ix: &'a OciIndex, method: Method, path: &str, query: &str) -> Outcome<'a> {
    let segs: Vec<&str> = path.split('/').collect();
    let query = crate::serve::http::paths::query_pairs(Some(query));
    decide(
        ix,
        &Ask {
            method: &method,
            segs: &segs,
            query: &query,
            accept: &[],
        },
    )
}

fn code(o: Outcome<'_>) -> &'static str {
    match o {
        Outcome::Refused(e) => e.code().0.as_str(),
        other => panic!("not refused: {other:?}"),
    }
}

#[test]
fn path_tricks_are_refused_by_grammar() {
    let ix = index();
    let top = format!("sha256:{}", Sha256::of(b"top"));
    for name in [
        "acme/../acme/app",
        "acme%2Fapp",
        "acme//app",
        "ACME/app",
        "acme/.app",
    ] {
        let o = ask(&ix, Method::GET, &format!("{name}/manifests/v1"), "");
        assert_eq!(code(o), "NAME_INVALID", "{name}");
    }
    let o = ask(&ix, Method::GET, "acme/app/manifests/..", "");
    assert_eq!(code(o), "MANIFEST_INVALID");
    let o = ask(&ix, Method::GET, "acme/app/manifests/sha256:..%2F..", "");
    assert_eq!(code(o), "DIGEST_INVALID");
    let o = ask(&ix, Method::GET, "acme/app/blobs/..", "");
    assert_eq!(code(o), "DIGEST_INVALID");
    assert!(matches!(
        ask(&ix, Method::HEAD, &format!("acme/app/manifests/{top}"), ""),
        Outcome::Manifest(_)
    ));
    // The manifest's own digest is a blob of the name; another's is not.
    let other = format!("sha256:{}", Sha256::of(b"other"));
    let o = ask(&ix, Method::GET, &format!("acme/app/blobs/{other}"), "");
    assert_eq!(code(o), "BLOB_UNKNOWN");
    let o = ask(&ix, Method::GET, "acme/none/tags/list", "");
    assert_eq!(code(o), "NAME_UNKNOWN");
}

#[test]
fn every_write_is_unsupported() {
    let ix = index();
    for (m, path) in [
        (Method::POST, "acme/app/blobs/uploads/"),
        (Method::PUT, "acme/app/manifests/v1"),
        (Method::PATCH, "acme/app/blobs/uploads/x"),
        (Method::DELETE, "acme/app/manifests/v1"),
    ] {
        assert_eq!(code(ask(&ix, m, path, "")), OciCode::Unsupported.as_str());
    }
}

#[test]
fn accept_lines_are_combined() {
    let lines = [
        "application/vnd.oci.image.manifest.v1+json",
        "application/vnd.docker.distribution.manifest.v2+json",
        INDEX,
    ];
    assert!(accepts(&lines, INDEX));
    assert!(!accepts(&lines[..2], INDEX));
    assert!(accepts(&[], INDEX));
    assert!(accepts(&["text/html, */*"], INDEX));
    assert!(!accepts(&[&format!("{INDEX};q=0, */*")], INDEX));
}

#[test]
fn tags_page_with_n_and_last() {
    let ix = index();
    let Outcome::Tags { tags, next, .. } = ask(&ix, Method::GET, "acme/app/tags/list", "n=2")
    else {
        panic!()
    };
    assert_eq!(tags, ["a", "v1"]);
    assert_eq!(next.as_deref(), Some("n=2&last=v1"));
    let Outcome::Tags { tags, next, .. } =
        ask(&ix, Method::GET, "acme/app/tags/list", "n=2&last=v1")
    else {
        panic!()
    };
    assert_eq!(tags, ["v2"]);
    assert_eq!(next, None);
    let Outcome::Tags { tags, next, .. } = ask(&ix, Method::GET, "acme/app/tags/list", "n=0")
    else {
        panic!()
    };
    assert!(tags.is_empty() && next.is_none());
    let Outcome::Catalog { names, .. } = ask(&ix, Method::GET, "_catalog", "") else {
        panic!()
    };
    assert_eq!(names, ["acme/app"]);
}
