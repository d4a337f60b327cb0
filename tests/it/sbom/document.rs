//! The SBOM itself: valid CycloneDX 1.6 by the official schema (through
//! CycloneDX's Python library), read back by that library with nothing
//! lost, the same bytes from two creates, every blob once with its sha256,
//! covered by the manifest like any blob, and served by the mirror.

use std::collections::BTreeMap;

use llmgw_fixture::{PICKLED_COMMIT, TINY_COMMIT};
use serde_json::Value;

use super::kit::{
    create, curl, cyclonedx_python, fails, fixture, llmgw, manifest_of_dir, ok, run_python, serve,
};

/// Validates argv[1] against the 1.6 schema, reads it back into the
/// library's model and writes it out again: prints the errors (or null)
/// and each component's bom-ref with its hashes, as read back.
const CHECK: &str = r#"
import json, sys
from cyclonedx.schema import SchemaVersion
from cyclonedx.validation.json import JsonStrictValidator
from cyclonedx.model.bom import Bom
from cyclonedx.output.json import JsonV1Dot6
text = open(sys.argv[1]).read()
errors = JsonStrictValidator(SchemaVersion.V1_6).validate_str(text)
bom = Bom.from_json(json.loads(text))
again = json.loads(JsonV1Dot6(bom).output_as_string())
JsonStrictValidator(SchemaVersion.V1_6).validate_str(json.dumps(again)) and sys.exit("re-serialised SBOM invalid")
out = {c["bom-ref"]: [h["content"] for h in c.get("hashes", [])] for c in again["components"]}
print(json.dumps({"errors": None if errors is None else str(errors), "components": out,
                  "serial": bom.serial_number.urn}))
"#;

fn sbom_of(bundle: &std::path::Path) -> Vec<u8> {
    let o = llmgw()
        .args(["bundle", "sbom"])
        .arg(bundle)
        .output()
        .unwrap();
    ok(&o);
    o.stdout
}

#[test]
fn sbom_is_valid_cyclonedx_reproducible_and_names_every_blob_once() {
    let python = cyclonedx_python();
    let fx = fixture();
    let d = tempfile::tempdir().unwrap();
    let what = [
        "--engine",
        "llamacpp=b6123",
        "--model",
        "acme/tiny",
        "--model",
        "acme/pickled",
        "--dataset",
        "acme/data",
    ];
    let a = d.path().join("a.tar");
    let b = d.path().join("b.tar");
    let dir = d.path().join("dir");
    let sha_a = create(&fx, &d.path().join("c1"), &a, &what);
    let sha_b = create(&fx, &d.path().join("c2"), &b, &what);
    let sha_dir = create(&fx, &d.path().join("c1"), &dir, &what);
    assert_eq!(sha_a, sha_b, "two creates, two manifests");
    assert_eq!(sha_a, sha_dir);
    assert_eq!(std::fs::read(&a).unwrap(), std::fs::read(&b).unwrap());
    let sbom = sbom_of(&a);
    assert_eq!(sbom, sbom_of(&b), "two creates, two SBOMs");
    assert_eq!(sbom, sbom_of(&dir));

    // Named by the manifest (format 4), so its hash and signature cover it.
    let m = manifest_of_dir(&dir);
    assert_eq!(m.format_version, 4);
    let e = m.evidence.as_ref().expect("evidence");
    assert_eq!(e.sbom.sha256, llmgw_shared::Sha256::of(&sbom));
    assert_eq!(e.sbom.size, sbom.len() as u64);

    // The official schema, and CycloneDX's own reader and writer.
    let file = d.path().join("sbom.cdx.json");
    std::fs::write(&file, &sbom).unwrap();
    let checked: Value =
        serde_json::from_str(&run_python(&python, CHECK, &[file.to_str().unwrap()])).unwrap();
    assert_eq!(checked["errors"], Value::Null, "{checked}");
    let doc: Value = serde_json::from_slice(&sbom).unwrap();
    assert_eq!(doc["specVersion"], "1.6");
    assert_eq!(
        checked["serial"].as_str(),
        doc["serialNumber"].as_str(),
        "the serial number survives the round trip"
    );
    let mut ours: BTreeMap<String, Vec<String>> = BTreeMap::new();
    for c in doc["components"].as_array().unwrap() {
        let hashes = c["hashes"].as_array().map_or_else(Vec::new, |h| {
            h.iter()
                .map(|h| h["content"].as_str().unwrap().to_string())
                .collect()
        });
        ours.insert(c["bom-ref"].as_str().unwrap().to_string(), hashes);
    }
    let back: BTreeMap<String, Vec<String>> =
        serde_json::from_value(checked["components"].clone()).unwrap();
    assert_eq!(
        ours, back,
        "read back by cyclonedx-python-lib with nothing lost"
    );

    // Every blob but the SBOM itself is exactly one component, its sha256.
    let mut counted: BTreeMap<String, usize> = BTreeMap::new();
    for c in doc["components"].as_array().unwrap() {
        for h in c["hashes"].as_array().into_iter().flatten() {
            assert_eq!(h["alg"], "SHA-256");
            *counted
                .entry(h["content"].as_str().unwrap().to_string())
                .or_default() += 1;
        }
    }
    let blobs: BTreeMap<String, usize> = m
        .blobs()
        .keys()
        .filter(|s| **s != e.sbom.sha256)
        .map(|s| (s.to_string(), 1))
        .collect();
    assert_eq!(counted, blobs);
    for (sha, _) in counted {
        let bytes = std::fs::read(dir.join("blobs/sha256").join(&sha)).unwrap();
        assert_eq!(llmgw_shared::sha256_hex(&bytes), sha);
    }

    // Purls and licences where the publisher states one.
    let find = |purl: &str| {
        doc["components"]
            .as_array()
            .unwrap()
            .iter()
            .find(|c| c["purl"] == purl)
            .unwrap_or_else(|| panic!("no component {purl}"))
            .clone()
    };
    let tiny = find(&format!("pkg:huggingface/acme/tiny@{TINY_COMMIT}"));
    assert_eq!(tiny["type"], "machine-learning-model");
    assert_eq!(tiny["licenses"][0]["license"]["name"], "mit");
    let pickled = find(&format!("pkg:huggingface/acme/pickled@{PICKLED_COMMIT}"));
    assert_eq!(pickled["licenses"][0]["license"]["name"], "apache-2.0");
    let config = find(&format!(
        "pkg:huggingface/acme/tiny@{TINY_COMMIT}#config.json"
    ));
    assert_eq!(config["type"], "file");
    find("pkg:github/ggml-org/llama.cpp@b6123");
    let data = doc["components"]
        .as_array()
        .unwrap()
        .iter()
        .find(|c| c["type"] == "data")
        .unwrap();
    assert_eq!(data["licenses"][0]["license"]["name"], "cc0-1.0");
}

#[test]
fn a_tampered_sbom_is_refused_and_the_mirror_serves_a_held_one() {
    let fx = fixture();
    let d = tempfile::tempdir().unwrap();
    let dir = d.path().join("b");
    let sha = create(&fx, &d.path().join("c"), &dir, &["--model", "acme/tiny"]);
    let m = manifest_of_dir(&dir);
    let sbom_sha = m.evidence.as_ref().unwrap().sbom.sha256.to_string();
    let blob = dir.join("blobs/sha256").join(&sbom_sha);
    let good = std::fs::read(&blob).unwrap();

    // Altered in place of the link into the cache, so the cache stays whole.
    let mut bad = good.clone();
    let at = bad.iter().position(|b| *b == b'1').unwrap();
    bad[at] = b'2';
    std::fs::remove_file(&blob).unwrap();
    std::fs::write(&blob, &bad).unwrap();
    let store = d.path().join("store");
    let o = llmgw()
        .args(["bundle", "import", "--sha256", &sha, "--store"])
        .arg(&store)
        .arg(&dir)
        .output()
        .unwrap();
    let err = fails(&o, 1);
    assert!(err.contains(&sbom_sha), "{err}");
    assert_eq!(
        std::fs::read_dir(store.join("bundles")).map_or(0, |r| r.count()),
        0
    );
    let o = llmgw().args(["bundle", "sbom"]).arg(&dir).output().unwrap();
    let err = fails(&o, 1);
    assert!(err.contains("damaged or was altered"), "{err}");

    // Put back, imported, served at /-/bundles/<sha>/sbom.cdx.json.
    std::fs::remove_file(&blob).unwrap();
    std::fs::write(&blob, &good).unwrap();
    ok(&llmgw()
        .args(["bundle", "import", "--sha256", &sha, "--store"])
        .arg(&store)
        .arg(&dir)
        .output()
        .unwrap());
    let (_server, url) = serve(&store);
    let (head, body) = curl(&format!("{url}/-/bundles/{sha}/sbom.cdx.json"), &[]);
    assert!(head.starts_with("HTTP/1.1 200"), "{head}");
    assert!(
        head.contains("content-type: application/vnd.cyclonedx+json"),
        "{head}"
    );
    assert_eq!(body, good);
    let (other, body) = curl(
        &format!("{url}/-/bundles/{}/sbom.cdx.json", "0".repeat(64)),
        &[],
    );
    assert!(other.starts_with("HTTP/1.1 404"), "{other}");
    let other = String::from_utf8_lossy(&body);
    assert!(other.contains("holds no bundle"), "{other}");
}
