//! What a replica writes into a store in a bucket outlives its work
//! folder (#31, #32): the models' tar layer digests it hashed go up, so a
//! replica started afterwards in a fresh folder serves the same digests
//! without reading a byte of the model again; and its miss log goes up,
//! so `llmgw mirror misses --store s3://…` (and another replica) reads it.

use std::time::{Duration, Instant};

use super::import::{import, model_bundle};
use super::replicas::Replica;
use super::server::{S3, on_each};

const ACCEPT: &str =
    "Accept: application/vnd.oci.image.manifest.v1+json, application/vnd.oci.image.index.v1+json";
const MANIFEST: &str = "/v2/models/acme/tiny/manifests/main";
const MISS: &str = "/acme/never-carried/resolve/main/weights.gguf";

/// `llmgw_mirror_model_layer_hashed_bytes_total` of `r` now.
fn hashed_bytes(r: &Replica) -> u64 {
    let (_, body) = r.ask(&[], "/metrics");
    String::from_utf8(body)
        .unwrap()
        .lines()
        .find_map(|l| l.strip_prefix("llmgw_mirror_model_layer_hashed_bytes_total "))
        .and_then(|v| v.trim().parse().ok())
        .expect("the metric is exported")
}

/// The image index and the amd64 manifest, byte for byte.
fn image(r: &Replica) -> (Vec<u8>, Vec<u8>) {
    r.wait_for(MANIFEST, "200");
    let (h, index) = r.ask(&["-H", ACCEPT], MANIFEST);
    assert!(h.starts_with("HTTP/1.1 200"), "{h}");
    let v: serde_json::Value = serde_json::from_slice(&index).unwrap();
    let digest = v["manifests"][0]["digest"].as_str().unwrap();
    let (h, manifest) = r.ask(
        &["-H", ACCEPT],
        &format!("/v2/models/acme/tiny/manifests/{digest}"),
    );
    assert!(h.starts_with("HTTP/1.1 200"), "{h}");
    (index, manifest)
}

fn until(what: &str, done: impl Fn() -> bool) {
    let start = Instant::now();
    while !done() {
        assert!(
            start.elapsed() < Duration::from_secs(30),
            "{what}: not within 30 s"
        );
        std::thread::sleep(Duration::from_millis(200));
    }
}

fn has_key(s3: &S3, prefix: &str, want: impl Fn(&str) -> bool) -> bool {
    s3.keys(prefix).iter().any(|k| want(k))
}

#[test]
fn a_replicas_layer_digests_and_misses_outlive_its_work_folder() {
    on_each(|s3| {
        let dir = tempfile::tempdir().unwrap();
        let prefix = "state";
        let url = s3.url(prefix);
        let (kit, bundle) = model_bundle(dir.path(), "tiny", &[3 << 20, 999]);
        let o = import(s3, &url, &bundle, &kit.sha256());
        assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));

        // The import learned every layer's digest in its pass and sent them
        // with the bundle (#47 item 5); taken away here, as for a bundle
        // imported by an earlier llmgw, the first replica hashes every
        // file's tar layer itself, and records a miss.
        let learned: Vec<String> = s3
            .keys(prefix)
            .into_iter()
            .filter(|k| k.contains("state/model-layers-"))
            .collect();
        assert_eq!(
            learned.len(),
            1,
            "the import's layer digests are in the bucket"
        );
        for k in &learned {
            s3.delete(prefix, k);
        }
        let first = Replica::start_with(s3, &url, &[]);
        let served = image(&first);
        assert!(hashed_bytes(&first) > 3 << 20, "every layer hashed once");
        assert!(first.ask(&[], MISS).0.starts_with("HTTP/1.1 404"));
        until(
            "the layer digests and the miss log reach the bucket",
            || {
                has_key(s3, prefix, |k| k.ends_with("state/model-layers.json"))
                    && has_key(s3, prefix, |k| {
                        k.contains("state/misses-") && k.ends_with(".json")
                    })
            },
        );
        drop(first);

        // A replica in a fresh folder reads none of the model again.
        let second = Replica::start_with(s3, &url, &[]);
        assert_eq!(image(&second), served, "the same image, byte for byte");
        assert_eq!(hashed_bytes(&second), 0, "nothing hashed again");
        let (h, misses) = second.ask(&[], "/-/misses");
        assert!(h.starts_with("HTTP/1.1 200"), "{h}");
        assert!(
            String::from_utf8_lossy(&misses).contains("never-carried"),
            "the first replica's miss is known: {}",
            String::from_utf8_lossy(&misses)
        );
        drop(second);

        // And the operator's command reads it from the bucket.
        let o = s3
            .llmgw()
            .args(["mirror", "misses", "--json", "--store", &url])
            .output()
            .unwrap();
        assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
        assert!(String::from_utf8_lossy(&o.stdout).contains("never-carried"));
    });
}
