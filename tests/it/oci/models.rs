//! Models as OCI artifacts (#31), checked with real clients against a
//! store holding the Hub repository `acme/tiny`: skopeo copies the
//! mountable image (`models/acme/tiny`) and real `tar` unpacks its layers
//! into exactly the files; `skopeo inspect --raw` of the ModelPack
//! artifact (`modelpack/acme/tiny`) and its config checked against the
//! spec's pinned schema (`testdata/modelpack/`) with Python `jsonschema`;
//! the ORAS Python client pulls every file to its path; containerd's `ctr`
//! pulls and unpacks the image through a hosts.toml mirror entry; Range
//! at every boundary of a tar layer; a restart serves the same digests
//! without reading a file again. A missing client fails, naming it.

mod ask;
use crate::bundle_kit;
#[allow(dead_code)]
use crate::oci::clients;
mod made_again;
mod reserved;
mod served_at_once;
mod store;

use std::collections::BTreeMap;
use std::path::Path;
use std::process::Command;

use ask::{
    OCI_ACCEPT, blob, get_json, hashed_bytes, image_manifest, oci_python, one_entry, sha, walk,
};
use bundle_kit::{stderr, stdout};
use clients::{containerd, http, need};
use serde_json::Value;
use store::{COMMIT, Served, assembled_layer, files};

const MODEL_ARTIFACT: &str = "application/vnd.cncf.model.manifest.v1+json";
const MODEL_CONFIG: &str = "application/vnd.cncf.model.config.v1+json";
#[test]
fn skopeo_copies_the_image_and_tar_unpacks_exactly_the_files() {
    need("skopeo", "apt-get install -y skopeo");
    need("tar", "apt-get install -y tar");
    let s = Served::new();
    let layout = s.path("copied");
    let o = Command::new("skopeo")
        .args([
            "copy",
            "--src-tls-verify=false",
            "--dest-oci-accept-uncompressed-layers",
        ])
        .arg(format!("docker://{}/models/acme/tiny:main", s.host()))
        .arg(format!("oci:{}:main", layout.display()))
        .output()
        .unwrap();
    assert!(o.status.success(), "{}{}", stdout(&o), stderr(&o));
    let index: Value =
        serde_json::from_slice(&std::fs::read(layout.join("index.json")).unwrap()).unwrap();
    let top = index["manifests"][0]["digest"]
        .as_str()
        .unwrap()
        .trim_start_matches("sha256:")
        .to_string();
    let manifest: Value =
        serde_json::from_slice(&std::fs::read(layout.join("blobs/sha256").join(&top)).unwrap())
            .unwrap();
    let config_digest = manifest["config"]["digest"]
        .as_str()
        .unwrap()
        .trim_start_matches("sha256:");
    let config: Value = serde_json::from_slice(
        &std::fs::read(layout.join("blobs/sha256").join(config_digest)).unwrap(),
    )
    .unwrap();
    let layers = manifest["layers"].as_array().unwrap();
    assert_eq!(layers.len(), files().len());
    let served = image_manifest(&s, "main");
    assert_eq!(manifest, served, "skopeo kept the mirror's amd64 manifest");
    let unpacked = s.path("unpacked");
    std::fs::create_dir_all(&unpacked).unwrap();
    for (i, l) in layers.iter().enumerate() {
        assert_eq!(l["mediaType"], "application/vnd.oci.image.layer.v1.tar");
        assert_eq!(
            config["rootfs"]["diff_ids"][i], l["digest"],
            "diff_ids are the layer digests"
        );
        let file = layout
            .join("blobs/sha256")
            .join(l["digest"].as_str().unwrap().trim_start_matches("sha256:"));
        let o = Command::new("tar")
            .arg("-xf")
            .arg(&file)
            .arg("-C")
            .arg(&unpacked)
            .output()
            .unwrap();
        assert!(
            o.status.success(),
            "tar -xf {}: {}",
            file.display(),
            stderr(&o)
        );
    }
    // Exactly the files, byte for byte, and nothing else.
    let mut got = BTreeMap::new();
    for e in walk(&unpacked.join("models")) {
        let rel = e
            .strip_prefix(unpacked.join("models"))
            .unwrap()
            .to_string_lossy()
            .into_owned();
        let mode =
            std::os::unix::fs::PermissionsExt::mode(&std::fs::metadata(&e).unwrap().permissions());
        assert_eq!(mode & 0o777, 0o444, "{rel}");
        got.insert(rel, sha(&std::fs::read(&e).unwrap()));
    }
    let want: BTreeMap<String, String> = files().into_iter().map(|(p, b)| (p, sha(&b))).collect();
    assert_eq!(got, want);
}

#[test]
fn the_modelpack_artifact_is_as_the_spec_says() {
    need("skopeo", "apt-get install -y skopeo");
    let python = oci_python();
    let s = Served::new();
    let o = Command::new("skopeo")
        .args(["inspect", "--raw", "--tls-verify=false"])
        .arg(format!("docker://{}/modelpack/acme/tiny:main", s.host()))
        .output()
        .unwrap();
    assert!(o.status.success(), "{}", stderr(&o));
    let m: Value = serde_json::from_slice(&o.stdout).unwrap();
    let spec_types = std::fs::read_to_string(
        Path::new(env!("CARGO_MANIFEST_DIR")).join("testdata/modelpack/media-types.txt"),
    )
    .unwrap();
    let spec_types: Vec<&str> = spec_types.lines().collect();
    assert_eq!(m["schemaVersion"], 2);
    assert_eq!(m["mediaType"], "application/vnd.oci.image.manifest.v1+json");
    assert_eq!(m["artifactType"], MODEL_ARTIFACT);
    assert!(spec_types.contains(&MODEL_ARTIFACT));
    assert_eq!(m["config"]["mediaType"], MODEL_CONFIG);
    let want = files();
    let layers = m["layers"].as_array().unwrap();
    assert_eq!(layers.len(), want.len());
    let mut kinds = BTreeMap::new();
    for l in layers {
        let t = l["mediaType"].as_str().unwrap();
        assert!(spec_types.contains(&t) && t.ends_with(".raw"), "{t}");
        let path = l["annotations"]["org.cncf.model.filepath"]
            .as_str()
            .unwrap();
        let body = &want[path];
        assert_eq!(
            l["digest"],
            format!("sha256:{}", sha(body)),
            "{path}: the layer is the file"
        );
        assert_eq!(l["size"], body.len());
        kinds.insert(path.to_string(), t.to_string());
    }
    assert_eq!(
        kinds["model.safetensors"],
        "application/vnd.cncf.model.weight.v1.raw"
    );
    assert_eq!(
        kinds["config.json"],
        "application/vnd.cncf.model.weight.config.v1.raw"
    );
    assert_eq!(kinds["README.md"], "application/vnd.cncf.model.doc.v1.raw");
    // The config, fetched as a blob, against the spec's schema.
    let config = blob(
        &s,
        "modelpack/acme/tiny",
        m["config"]["digest"].as_str().unwrap(),
        None,
    );
    assert_eq!(config.status, 200);
    let c: Value = serde_json::from_slice(&config.body).unwrap();
    assert_eq!(c["descriptor"]["revision"], COMMIT);
    assert_eq!(
        c["descriptor"]["sourceURL"],
        "https://huggingface.co/acme/tiny"
    );
    assert_eq!(c["config"]["format"], "safetensors");
    assert_eq!(c["config"]["architecture"], "TinyForCausalLM");
    // The config against ModelPack's schema; the manifests and the image's
    // index against the OCI image-spec's.
    let write = |name: &str, bytes: &[u8]| {
        let p = s.path(name);
        std::fs::write(&p, bytes).unwrap();
        p
    };
    let config_file = write("config.json", &config.body);
    validate(&python, "modelpack", "config-schema.json", &[&config_file]);
    let pack_manifest = write("modelpack-manifest.json", &o.stdout);
    let index = http(
        &s.server.url,
        "GET",
        "/v2/models/acme/tiny/manifests/main",
        &[OCI_ACCEPT.to_string()],
    );
    let index_file = write("image-index.json", &index.body);
    let amd64 = write(
        "image-manifest.json",
        &serde_json::to_vec(&image_manifest(&s, "main")).unwrap(),
    );
    let spec = "oci-image-spec";
    validate(
        &python,
        spec,
        "image-manifest-schema.json",
        &[&pack_manifest, &amd64],
    );
    validate(&python, spec, "image-index-schema.json", &[&index_file]);
}

/// `tests/it/oci/models/validate.py`: the documents against a schema of
/// `testdata/<dir>/` (it also fails when a broken copy of the first passes).
fn validate(python: &Path, dir: &str, schema: &str, docs: &[&Path]) {
    let root = Path::new(env!("CARGO_MANIFEST_DIR"));
    let o = Command::new(python)
        .arg(root.join("tests/it/oci/models/validate.py"))
        .arg(root.join("testdata").join(dir))
        .arg(schema)
        .args(docs)
        .output()
        .unwrap();
    assert!(o.status.success(), "{schema}: {}{}", stdout(&o), stderr(&o));
}

#[test]
fn oras_pulls_every_file_to_its_filepath() {
    let python = oci_python();
    let s = Served::new();
    let out = s.path("oras");
    let pull = "import sys, oras.client\n\
        c = oras.client.OrasClient(hostname=sys.argv[1], insecure=True)\n\
        for f in c.pull(target=sys.argv[1] + '/modelpack/acme/tiny:main', outdir=sys.argv[2]): print(f)\n";
    let o = Command::new(&python)
        .args(["-c", pull, s.host()])
        .arg(&out)
        .output()
        .unwrap();
    assert!(
        o.status.success(),
        "oras pull: {}{}",
        stdout(&o),
        stderr(&o)
    );
    for (path, body) in files() {
        let got = std::fs::read(out.join(&path)).unwrap_or_else(|e| panic!("{path}: {e}"));
        assert_eq!(sha(&got), sha(&body), "{path}");
    }
}

#[test]
fn containerd_pulls_and_unpacks_the_image_through_a_hosts_toml_mirror() {
    let s = Served::new();
    let c = containerd(s.dir.path());
    let hosts = s.path("hosts");
    std::fs::create_dir_all(hosts.join("registry.example")).unwrap();
    std::fs::write(
        hosts.join("registry.example/hosts.toml"),
        format!(
            "server = \"https://registry.example\"\n[host.\"{}\"]\n  capabilities = [\"pull\", \"resolve\"]\n",
            s.server.url
        ),
    )
    .unwrap();
    let reference = "registry.example/models/acme/tiny:main";
    let o = c.ctr(&[
        "images",
        "pull",
        "--snapshotter",
        "native",
        "--hosts-dir",
        hosts.to_str().unwrap(),
        reference,
    ]);
    assert!(o.status.success(), "ctr pull: {}{}", stdout(&o), stderr(&o));
    let ls = stdout(&c.ctr(&["images", "ls"]));
    let top = http(
        &s.server.url,
        "HEAD",
        "/v2/models/acme/tiny/manifests/main",
        &[OCI_ACCEPT.to_string()],
    )
    .header("docker-content-digest");
    assert!(
        ls.lines()
            .any(|l| l.starts_with(reference) && l.contains(&top)),
        "{ls}"
    );
    // Unpacking checked every layer against the config's diff_ids.
    let o = c.ctr(&["images", "check"]);
    assert!(
        stdout(&o)
            .lines()
            .any(|l| l.starts_with(reference) && l.contains("complete")),
        "{}",
        stdout(&o)
    );
}

#[test]
fn ranges_into_a_tar_layer_are_right_at_every_boundary() {
    let s = Served::new();
    let manifest = image_manifest(&s, "main");
    let mut by_path = BTreeMap::new();
    for l in manifest["layers"].as_array().unwrap() {
        let digest = l["digest"].as_str().unwrap().to_string();
        let whole = blob(&s, "models/acme/tiny", &digest, None);
        assert_eq!(whole.status, 200);
        assert_eq!(
            format!("sha256:{}", sha(&whole.body)),
            digest,
            "the bytes hash to the digest"
        );
        assert_eq!(whole.header("docker-content-digest"), digest);
        let (path, mode, uid, gid, mtime, body) = one_entry(&whole.body);
        assert_eq!((mode, uid, gid, mtime), (0o444, 0, 0, 0), "{path}");
        by_path.insert(path, (digest, whole.body, body));
    }
    let files = files();
    // The short-named file: the mirror's layer is the one the tar crate writes.
    let (digest, whole, body) = &by_path["models/model.safetensors"];
    assert_eq!(body, &files["model.safetensors"]);
    let want = assembled_layer("models/model.safetensors", body);
    assert_eq!(whole, &want, "byte-identical to the tar assembled here");
    let n = want.len() as u64;
    let data_end = 512 + body.len() as u64;
    let pad_end = data_end.div_ceil(512) * 512;
    for b in [
        1u64,
        511,
        512,
        513,
        data_end - 1,
        data_end,
        data_end + 1,
        pad_end - 1,
        pad_end,
        pad_end + 1,
        n - 1,
    ] {
        for (a, z) in [
            (b - 1, b),
            (b, b),
            (b - 1, (b + 700).min(n - 1)),
            (b, n - 1),
        ] {
            let r = blob(&s, "models/acme/tiny", digest, Some(&format!("{a}-{z}")));
            assert_eq!(r.status, 206, "{a}-{z}");
            assert_eq!(r.header("content-range"), format!("bytes {a}-{z}/{n}"));
            assert_eq!(r.body, want[a as usize..=z as usize], "bytes {a}-{z}");
        }
    }
    let r = blob(&s, "models/acme/tiny", digest, Some("-1030"));
    assert_eq!(
        r.body,
        want[(n - 1030) as usize..],
        "a suffix: padding and the end blocks"
    );
    let r = blob(&s, "models/acme/tiny", digest, Some(&format!("{n}-")));
    assert_eq!(r.status, 416);
    let head = http(
        &s.server.url,
        "HEAD",
        &format!("/v2/models/acme/tiny/blobs/{digest}"),
        &[],
    );
    assert_eq!(head.header("content-length"), n.to_string());
    // The long-named file: a PAX header first; ranges across it.
    let long = by_path
        .iter()
        .find(|(p, _)| p.len() > 100)
        .map(|(_, v)| v)
        .expect("the long path read back whole");
    let (digest, whole, _) = long;
    assert_eq!(whole[156], b'x', "a PAX header");
    for (a, z) in [(0, 1023), (511, 1536), (1023, 1024), (1535, 1536)] {
        let r = blob(&s, "models/acme/tiny", digest, Some(&format!("{a}-{z}")));
        assert_eq!(r.body, whole[a..=z], "bytes {a}-{z}");
    }
    // The raw file is not a blob of the image's name, only of ModelPack's.
    let raw = format!("sha256:{}", sha(&files["model.safetensors"]));
    assert_eq!(
        blob(&s, "models/acme/tiny", &raw, None).code(),
        "BLOB_UNKNOWN"
    );
    assert_eq!(
        blob(&s, "modelpack/acme/tiny", &raw, None).body,
        files["model.safetensors"]
    );
}

#[test]
fn names_are_listed_and_a_restart_serves_the_same_digests_without_rehashing() {
    let s = Served::new();
    let total: u64 = files().values().map(|b| b.len() as u64).sum();
    assert_eq!(
        hashed_bytes(&s.server),
        0,
        "the import hashed each layer in its own pass (#47 item 5): the server reads no file"
    );
    let catalog = get_json(&s, "/v2/_catalog");
    assert_eq!(
        catalog["repositories"],
        serde_json::json!(["modelpack/acme/tiny", "models/acme/tiny"])
    );
    for name in ["modelpack/acme/tiny", "models/acme/tiny"] {
        let tags = get_json(&s, &format!("/v2/{name}/tags/list"));
        assert_eq!(tags["tags"], serde_json::json!([COMMIT, "main"]), "{name}");
    }
    // The Hub's routes are unchanged.
    let (code, _) = s.server.get("/api/models/acme/tiny/revision/main");
    assert_eq!(code, 200);
    let digests = |server: &bundle_kit::Server| -> Vec<String> {
        ["modelpack/acme/tiny", "models/acme/tiny"]
            .iter()
            .flat_map(|n| {
                [
                    format!("/v2/{n}/manifests/main"),
                    format!("/v2/{n}/manifests/{COMMIT}"),
                ]
            })
            .map(|p| {
                http(&server.url, "HEAD", &p, &[OCI_ACCEPT.to_string()])
                    .header("docker-content-digest")
            })
            .collect()
    };
    let before = digests(&s.server);
    assert!(
        before.iter().all(|d| d.starts_with("sha256:")),
        "{before:?}"
    );
    assert_eq!(before[0], before[1], "main and its commit are one manifest");
    let learned: Vec<std::path::PathBuf> = std::fs::read_dir(s.store.join("state"))
        .unwrap()
        .map(|e| e.unwrap().path())
        .filter(|p| {
            let name = p.file_name().unwrap().to_string_lossy();
            name.starts_with("model-layers-") && name.ends_with(".json")
        })
        .collect();
    assert_eq!(
        learned.len(),
        1,
        "the import kept its digests beside the bundle"
    );
    let again = store::start(&s.store, &s.path("serve-2.log"));
    assert_eq!(digests(&again), before);
    assert_eq!(
        hashed_bytes(&again),
        0,
        "a restart reads no file to learn a digest"
    );
    drop(again);
    // Without the state files, the digests are learned again, the same.
    std::fs::remove_file(&learned[0]).unwrap();
    let _ = std::fs::remove_file(s.store.join("state/model-layers.json"));
    let third = store::start(&s.store, &s.path("serve-3.log"));
    assert_eq!(digests(&third), before);
    assert_eq!(hashed_bytes(&third), total);
}
