//! Hostile registries (the fixture's stand-in serves whatever it is
//! given): a descriptor whose size or digest lies, a manifest naming
//! 100 000 layers, a config said to be 10 GB, a Docker-Content-Digest
//! that is not the bytes', a chart whose package reaches outside its
//! folder. Each is refused, naming the image and the blob, and no bundle
//! is written. An index naming one child a thousand times costs one fetch
//! of it.

use std::io::Write;

use llmgw_fixture::registry::{
    CONFIG, HELM_CHART, HELM_CONFIG, INDEX, LAYER, MANIFEST, TokenRegistry, sha256_digest,
};
use serde_json::{Value, json};

use super::common::*;

const REPO: &str = "acme/hostile";

fn desc(media_type: &str, digest: &str, size: usize) -> Value {
    json!({"mediaType": media_type, "digest": digest, "size": size})
}

fn manifest_bytes(config: Value, layers: Vec<Value>) -> Vec<u8> {
    serde_json::to_vec(&json!({
        "schemaVersion": 2, "mediaType": MANIFEST, "config": config, "layers": layers,
    }))
    .unwrap()
}

/// Serves a manifest as tag `tag`, makes the bundle, expects exit 1.
fn refused(reg: &TokenRegistry, tag: &str, bytes: Vec<u8>) -> String {
    reg.put_manifest(REPO, Some(tag), MANIFEST, bytes);
    let dir = tempfile::tempdir().unwrap();
    let out = dir.path().join("b");
    let e = fails(
        &create(dir.path())
            .args(["--arch", "amd64", "--out"])
            .arg(&out)
            .args(["--image", &format!("{}/{REPO}:{tag}", reg.host)])
            .args(["--insecure-registry", &reg.host])
            .output()
            .unwrap(),
        1,
    );
    assert!(!out.exists(), "{tag}: no bundle may be written");
    e
}

#[test]
fn lying_descriptors_and_absurd_manifests_are_refused() {
    let reg = TokenRegistry::start().unwrap();
    let config = br#"{"architecture":"amd64","os":"linux"}"#.to_vec();
    let layer = b"not much of a layer, but real bytes".to_vec();
    let config_d = reg.put_blob(config.clone(), None);
    let layer_d = reg.put_blob(layer.clone(), None);

    // A layer descriptor one byte longer than the blob.
    let e = refused(
        &reg,
        "size-lies",
        manifest_bytes(
            desc(CONFIG, &config_d, config.len()),
            vec![desc(LAYER, &layer_d, layer.len() + 1)],
        ),
    );
    // The registry sends what it has; the fetcher stops short of the
    // promised size, tries again, and gives up naming the blob.
    let short = format!("{} of {} bytes", layer.len(), layer.len() + 1);
    assert!(e.contains(&layer_d[7..]) && e.contains(&short), "{e}");

    // A descriptor naming other bytes than those served under it.
    let liar = reg.put_blob(
        b"the bytes actually served".to_vec(),
        Some(&sha256_digest(b"what was promised")),
    );
    let e = refused(
        &reg,
        "digest-lies",
        manifest_bytes(
            desc(CONFIG, &config_d, config.len()),
            vec![desc(LAYER, &liar, 25)],
        ),
    );
    assert!(e.contains(&liar[7..]) && e.contains("do not match"), "{e}");

    // 100 000 layers: refused by its size or its count, unread further.
    let many: Vec<Value> = (0..100_000)
        .map(|_| desc(LAYER, &layer_d, layer.len()))
        .collect();
    let e = refused(
        &reg,
        "many",
        manifest_bytes(desc(CONFIG, &config_d, config.len()), many),
    );
    assert!(e.contains("4194304"), "{e}");
    let many: Vec<Value> = (0..10_001)
        .map(|_| desc(LAYER, &layer_d, layer.len()))
        .collect();
    let e = refused(
        &reg,
        "many2",
        manifest_bytes(desc(CONFIG, &config_d, config.len()), many),
    );
    assert!(e.contains("10002 children") && e.contains("10000"), "{e}");

    // A config said to be 10 GB.
    let e = refused(
        &reg,
        "huge-config",
        manifest_bytes(desc(CONFIG, &config_d, 10_000_000_000), vec![]),
    );
    assert!(
        e.contains("10000000000") && e.contains(&config_d[7..]),
        "{e}"
    );
}

/// An index naming one child manifest 1 000 times (#54 item 5): the child
/// is fetched once, and the image is carried and imported.
#[test]
fn a_child_named_a_thousand_times_is_fetched_once() {
    let reg = TokenRegistry::start().unwrap();
    let config = br#"{"architecture":"amd64","os":"linux"}"#.to_vec();
    let layer = b"the one layer of the one child".to_vec();
    let config_d = reg.put_blob(config.clone(), None);
    let layer_d = reg.put_blob(layer.clone(), None);
    let child = manifest_bytes(
        desc(CONFIG, &config_d, config.len()),
        vec![desc(LAYER, &layer_d, layer.len())],
    );
    let child_d = reg.put_manifest(REPO, None, MANIFEST, child.clone());
    let mut d = desc(MANIFEST, &child_d, child.len());
    d["platform"] = json!({"os": "linux", "architecture": "amd64"});
    let index = json!({"schemaVersion": 2, "mediaType": INDEX, "manifests": vec![d; 1000]});
    reg.put_manifest(
        REPO,
        Some("repeats"),
        INDEX,
        serde_json::to_vec(&index).unwrap(),
    );
    let dir = tempfile::tempdir().unwrap();
    let out = dir.path().join("b");
    let sha = ok(&create(dir.path())
        .args(["--arch", "amd64", "--out"])
        .arg(&out)
        .args(["--image", &format!("{}/{REPO}:repeats", reg.host)])
        .args(["--insecure-registry", &reg.host])
        .output()
        .unwrap())
    .trim()
    .to_string();
    let log = reg.requests();
    let asked = format!("GET /v2/{REPO}/manifests/{child_d}");
    let fetched = log.iter().filter(|(r, _)| r.starts_with(&asked)).count();
    assert_eq!(fetched, 1, "{asked}: asked {fetched} times");
    let m = manifest(&out);
    let image = only_image(&m);
    assert_eq!(image.manifests.len(), 2, "the index and its one child");
    assert_eq!(image.blobs.len(), 2, "the child's config and layer");
    ok(&import(&out, &sha, &dir.path().join("store")));
}

/// A gzipped tar whose entries are written as named, `..` and all (the
/// `tar` crate refuses to write such a path by its own API).
fn raw_tgz(entries: &[(&str, &[u8])]) -> Vec<u8> {
    let mut b = tar::Builder::new(Vec::new());
    for (name, data) in entries {
        let mut h = tar::Header::new_gnu();
        h.as_gnu_mut().unwrap().name[..name.len()].copy_from_slice(name.as_bytes());
        h.set_size(data.len() as u64);
        h.set_mode(0o644);
        h.set_mtime(0);
        h.set_cksum();
        b.append(&h, *data).unwrap();
    }
    let mut gz = flate2::write::GzEncoder::new(Vec::new(), flate2::Compression::fast());
    gz.write_all(&b.into_inner().unwrap()).unwrap();
    gz.finish().unwrap()
}

/// A chart pulled from a registry whose package holds a `../` entry (#54
/// item 6) is refused as the same `.tgz` given as a file is: one check.
#[test]
fn a_registry_chart_reaching_outside_its_folder_is_refused_as_a_file_is() {
    let reg = TokenRegistry::start().unwrap();
    let chart_yaml = b"apiVersion: v2\nname: acme\nversion: 0.1.0\n";
    let tgz = raw_tgz(&[
        ("acme/Chart.yaml", chart_yaml),
        ("acme/../../escaped.yaml", b"kind: ConfigMap\n"),
    ]);
    let config = br#"{"name":"acme","version":"0.1.0","apiVersion":"v2"}"#.to_vec();
    let config_d = reg.put_blob(config.clone(), None);
    let tgz_d = reg.put_blob(tgz.clone(), None);
    let m = serde_json::to_vec(&json!({
        "schemaVersion": 2, "mediaType": MANIFEST,
        "config": desc(HELM_CONFIG, &config_d, config.len()),
        "layers": [desc(HELM_CHART, &tgz_d, tgz.len())],
    }))
    .unwrap();
    reg.put_manifest("acme/acme", Some("0.1.0"), MANIFEST, m);
    let dir = tempfile::tempdir().unwrap();
    let file = dir.path().join("acme-0.1.0.tgz");
    std::fs::write(&file, &tgz).unwrap();
    let chart = format!("oci://{}/acme/acme:0.1.0", reg.host);
    for (given, names) in [
        (chart.as_str(), tgz_d[7..].to_string()),
        (file.to_str().unwrap(), file.display().to_string()),
    ] {
        let out = dir.path().join("never");
        let e = fails(
            &create(dir.path())
                .args(["--arch", "amd64", "--out"])
                .arg(&out)
                .args(["--chart", given, "--insecure-registry", &reg.host])
                .output()
                .unwrap(),
            1,
        );
        assert!(
            e.contains("\"acme/../../escaped.yaml\" reaches outside the chart")
                && e.contains(&names),
            "{given}: {e}"
        );
        assert!(!out.exists(), "{given}");
    }
}
