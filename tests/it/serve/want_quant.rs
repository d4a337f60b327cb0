//! llama.cpp's `-hf OWNER/NAME:TAG` misses plan the GGUF they ask for
//! (issue #32 item 3, the quantization route): a mirror holding part of a
//! model answers 404 to `/v2/acme/tiny/manifests/q4_k_m` (route
//! `hub_manifests`, the manifest older llama.cpp asks for a quant by tag)
//! and to a tag the repository has no file of; `mirror misses --out`
//! writes the want-list; `bundle create --want` against the fixture's Hub
//! plans exactly the GGUF holding the tag as a word (any case), and records
//! the other as a gap naming the tag; imported, the same request is
//! answered by the running mirror.

use std::path::Path;

use crate::bundle_kit::{Server, import_bundle, ok_for as ok};
use llmgw_fixture::{Fixture, FixtureOptions};
use llmgw_shared::manifest::Manifest;

fn create(fx: &Fixture, work: &Path, out: &Path, args: &[&str]) -> serde_json::Value {
    let o = crate::python::create(fx, &fx.raw_github_url(), work, out)
        .arg("--json")
        .args(args)
        .arg("--hf-endpoint")
        .arg(fx.hf_endpoint())
        .env_remove("HF_TOKEN")
        .env_remove("HF_ENDPOINT")
        .output()
        .unwrap();
    serde_json::from_str(&ok("bundle create", &o)).unwrap()
}

use super::want::{eventually, want_list_of_misses};

#[test]
fn a_quant_tag_miss_plans_the_gguf_that_holds_it() {
    let fx = Fixture::start_blocking(FixtureOptions::default()).expect("start the fixture");
    let d = tempfile::tempdir().unwrap();
    let store = d.path().join("store");
    let first = d.path().join("first.tar");
    let r1 = create(
        &fx,
        d.path(),
        &first,
        &["--model", "acme/tiny@main:config.json"],
    );
    let sha = r1["manifest_sha256"].as_str().unwrap();
    ok("bundle import", &import_bundle(&first, sha, &store, &[]));
    let server = Server::start(&store);
    let quant = "/v2/acme/tiny/manifests/q4_k_m";
    let absent = "/v2/acme/tiny/manifests/Q2_K";
    assert_eq!(server.get(quant).0, 404);
    assert_eq!(server.get(absent).0, 404);

    let want = d.path().join("want.json");
    want_list_of_misses(&store, &["manifests/q4_k_m", "manifests/Q2_K"], &want);

    let second = d.path().join("second.tar");
    let r2 = create(&fx, d.path(), &second, &["--want", want.to_str().unwrap()]);
    let sha2 = r2["manifest_sha256"].as_str().unwrap();
    ok("bundle import", &import_bundle(&second, sha2, &store, &[]));
    let m = Manifest::from_json_bytes(
        &std::fs::read(store.join("bundles").join(format!("{sha2}.json"))).unwrap(),
    )
    .unwrap();
    let files: Vec<&str> = m
        .repos
        .iter()
        .filter(|r| r.id == "acme/tiny")
        .flat_map(|r| r.files.iter().map(|f| f.path.as_str()))
        .collect();
    assert_eq!(files, ["tiny-Q4_K_M.gguf"], "{:?}", m.repos);
    let gap = m
        .gaps
        .iter()
        .find(|g| g.what.contains("manifests/Q2_K"))
        .unwrap_or_else(|| panic!("no gap for Q2_K: {:?}", m.gaps));
    assert!(
        gap.reason
            .contains("no GGUF file with the quantization tag Q2_K"),
        "{}",
        gap.reason
    );
    eventually("the mirror answers the quant", || {
        let (status, body) = server.get(quant);
        status == 200 && String::from_utf8_lossy(&body).contains("tiny-Q4_K_M.gguf")
    });
}
