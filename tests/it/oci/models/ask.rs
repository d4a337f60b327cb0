//! What the model OCI tests ask of the mirror and the tools: JSON and
//! blobs over HTTP (curl), the image's amd64 manifest, a one-file tar read
//! back, a folder's files, the hashing metric, and the venv's Python with
//! `oras` and `jsonschema`.

use std::io::Read;
use std::path::{Path, PathBuf};
use std::process::Command;

use llmgw_shared::Sha256;
use serde_json::Value;

use super::bundle_kit;
use super::clients::{self, http};
use super::store::Served;

pub const OCI_ACCEPT: &str =
    "Accept: application/vnd.oci.image.manifest.v1+json, application/vnd.oci.image.index.v1+json";

/// The Python of the venv with `oras` and `jsonschema` (scripts/setup.sh's
/// `.venv-oci`, or `LLMGW_OCI_VENV`).
pub fn oci_python() -> PathBuf {
    let dir = std::env::var_os("LLMGW_OCI_VENV")
        .map(PathBuf::from)
        .unwrap_or_else(|| Path::new(env!("CARGO_MANIFEST_DIR")).join(".venv-oci"));
    let p = dir.join("bin/python");
    let ok = Command::new(&p)
        .args(["-c", "import oras.client, jsonschema"])
        .output()
        .is_ok_and(|o| o.status.success());
    assert!(
        ok,
        "{} cannot import oras and jsonschema: run scripts/setup.sh (it makes .venv-oci with \
         oras==0.2.43 jsonschema==4.26.0), or set LLMGW_OCI_VENV to a venv that has them",
        p.display()
    );
    p
}

pub fn sha(bytes: &[u8]) -> String {
    Sha256::of(bytes).to_string()
}

pub fn get_json(s: &Served, path: &str) -> Value {
    let a = http(&s.server.url, "GET", path, &[OCI_ACCEPT.to_string()]);
    assert_eq!(
        a.status,
        200,
        "{path}: {}",
        String::from_utf8_lossy(&a.body)
    );
    serde_json::from_slice(&a.body).unwrap()
}

pub fn blob(s: &Served, name: &str, digest: &str, range: Option<&str>) -> clients::Answer {
    let headers: Vec<String> = range
        .map(|r| format!("Range: bytes={r}"))
        .into_iter()
        .collect();
    http(
        &s.server.url,
        "GET",
        &format!("/v2/{name}/blobs/{digest}"),
        &headers,
    )
}

/// The amd64 manifest of the image at `tag`.
pub fn image_manifest(s: &Served, tag: &str) -> Value {
    let index = get_json(s, &format!("/v2/models/acme/tiny/manifests/{tag}"));
    assert_eq!(
        index["mediaType"],
        "application/vnd.oci.image.index.v1+json"
    );
    let amd64 = index["manifests"]
        .as_array()
        .unwrap()
        .iter()
        .find(|m| m["platform"]["architecture"] == "amd64")
        .unwrap()["digest"]
        .as_str()
        .unwrap()
        .to_string();
    get_json(s, &format!("/v2/models/acme/tiny/manifests/{amd64}"))
}

/// Reads a one-file tar: (path, mode, uid, gid, mtime, body).
pub fn one_entry(tar_bytes: &[u8]) -> (String, u32, u64, u64, u64, Vec<u8>) {
    let mut a = tar::Archive::new(tar_bytes);
    let mut entries = a.entries().unwrap();
    let mut e = entries.next().expect("one entry").unwrap();
    let h = e.header().clone();
    let path = e.path().unwrap().to_string_lossy().into_owned();
    let mut body = Vec::new();
    e.read_to_end(&mut body).unwrap();
    drop(e);
    assert!(entries.next().is_none(), "one file per layer");
    let (m, u, g, t) = (
        h.mode().unwrap(),
        h.uid().unwrap(),
        h.gid().unwrap(),
        h.mtime().unwrap(),
    );
    (path, m, u, g, t, body)
}

pub fn walk(dir: &Path) -> Vec<PathBuf> {
    let mut out = Vec::new();
    for e in std::fs::read_dir(dir).unwrap() {
        let p = e.unwrap().path();
        if p.is_dir() {
            out.extend(walk(&p));
        } else {
            out.push(p);
        }
    }
    out
}

/// `llmgw_mirror_model_layer_hashed_bytes_total` now.
pub fn hashed_bytes(s: &bundle_kit::Server) -> u64 {
    let (_, body) = s.get("/metrics");
    String::from_utf8(body)
        .unwrap()
        .lines()
        .find_map(|l| l.strip_prefix("llmgw_mirror_model_layer_hashed_bytes_total "))
        .and_then(|v| v.trim().parse().ok())
        .expect("the metric is exported")
}
