//! Models as OCI (#31) over a bucket: a replica hashes each file's tar
//! layer reading the object from the bucket, and sends the tar layer (its
//! headers, the object, the padding) whole and by range — through the
//! proxy and, with `--blob-delivery presigned`, still through the replica
//! (a tar layer is no object to presign).

use std::io::Read;

use llmgw_shared::Sha256;
use serde_json::Value;

use super::import::{import, model_bundle};
use super::replicas::Replica;
use super::server::on_each;

const ACCEPT: &str =
    "Accept: application/vnd.oci.image.manifest.v1+json, application/vnd.oci.image.index.v1+json";

fn json(r: &Replica, path: &str) -> Value {
    let (h, body) = r.ask(&["-H", ACCEPT], path);
    assert!(h.starts_with("HTTP/1.1 200"), "{path}: {h}");
    serde_json::from_slice(&body).unwrap()
}

#[test]
fn a_replica_over_a_bucket_serves_the_models_tar_layers() {
    on_each(|s3| {
        let dir = tempfile::tempdir().unwrap();
        let url = s3.url("models");
        let (kit, bundle) = model_bundle(dir.path(), "tiny", &[3 << 20, 999]);
        let o = import(s3, &url, &bundle, &kit.sha256());
        assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
        let files = &kit.manifest.repos[0].files;
        let proxy = Replica::start_with(s3, &url, &[]);
        let presigning = Replica::start_with(
            s3,
            &url,
            &[
                "--blob-delivery",
                "presigned",
                "--s3-public-endpoint",
                &s3.endpoint,
            ],
        );
        for r in [&proxy, &presigning] {
            r.wait_for("/v2/models/acme/tiny/manifests/main", "200");
            let index = json(r, "/v2/models/acme/tiny/manifests/main");
            let amd64 = index["manifests"][0]["digest"]
                .as_str()
                .unwrap()
                .to_string();
            let manifest = json(r, &format!("/v2/models/acme/tiny/manifests/{amd64}"));
            let layers = manifest["layers"].as_array().unwrap();
            assert_eq!(layers.len(), files.len());
            for l in layers {
                let digest = l["digest"].as_str().unwrap();
                let path = format!("/v2/models/acme/tiny/blobs/{digest}");
                let (h, whole) = r.ask(&[], &path);
                assert!(h.starts_with("HTTP/1.1 200"), "{h}");
                assert_eq!(format!("sha256:{}", Sha256::of(&whole)), digest);
                let mut a = tar::Archive::new(&whole[..]);
                let mut e = a.entries().unwrap().next().unwrap().unwrap();
                let name = e.path().unwrap().to_string_lossy().into_owned();
                let mut body = Vec::new();
                e.read_to_end(&mut body).unwrap();
                let file = files
                    .iter()
                    .find(|f| format!("models/{}", f.path) == name)
                    .unwrap();
                assert!(body == kit.blobs[file.sha256.as_str()], "{name}");
                // Across the header and the object, and across the object's end.
                let end = 512 + body.len();
                for (a, z) in [(500, 700), (end - 10, end + 10)] {
                    let (h, part) = r.ask(&["-r", &format!("{a}-{z}")], &path);
                    assert!(h.starts_with("HTTP/1.1 206"), "{h}");
                    assert!(part == whole[a..=z], "{name} bytes {a}-{z}");
                }
            }
        }
    });
}
