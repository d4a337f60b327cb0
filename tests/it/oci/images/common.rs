//! What the image tests share: the command with nothing from the
//! environment that could change the run, and readers of what it wrote.

#![allow(dead_code)]

use std::path::{Path, PathBuf};
use std::process::{Command, Output};

pub use crate::bundle_kit::{fails, llmgw, ok, text};
use assert_cmd::cargo::CommandCargoExt;
use llmgw_shared::manifest::{Manifest, OciImage};

/// `llmgw bundle create` with a cache in `dir`, `HOME` there (so no
/// `~/.docker/config.json` of the machine is read) and no auth file.
pub fn create(dir: &Path) -> Command {
    let mut c = Command::cargo_bin("llmgw").unwrap();
    c.args(["bundle", "create", "--cache"])
        .arg(dir.join("cache"))
        .env("HOME", dir)
        .env_remove("REGISTRY_AUTH_FILE")
        .env_remove("SOURCE_DATE_EPOCH")
        .env("RUST_LOG", "warn");
    c
}

/// The manifest of a directory bundle, its images as the registry or
/// layout gave them: the SBOM referrer each image carries (#33: a manifest
/// whose `artifactType` is CycloneDX, its empty config, the SBOM), which
/// `tests/sbom/referrer.rs` checks, is left out of each image's record.
pub fn manifest(bundle: &Path) -> Manifest {
    let mut m =
        Manifest::from_json_bytes(&std::fs::read(bundle.join("manifest.json")).unwrap()).unwrap();
    for image in &mut m.images {
        image.manifests.retain(|d| {
            let bytes = blob(bundle, d.sha256.as_str());
            let v: serde_json::Value = serde_json::from_slice(&bytes).unwrap();
            v["artifactType"] != "application/vnd.cyclonedx+json"
        });
        image.blobs.retain(|d| {
            d.media_type != "application/vnd.cyclonedx+json"
                && d.media_type != "application/vnd.oci.empty.v1+json"
        });
    }
    m
}

/// The bundle's blob of `digest` (`sha256:…` or hex).
pub fn blob(bundle: &Path, digest: &str) -> Vec<u8> {
    std::fs::read(blob_path(bundle, digest)).unwrap()
}

pub fn blob_path(bundle: &Path, digest: &str) -> PathBuf {
    bundle
        .join("blobs/sha256")
        .join(digest.trim_start_matches("sha256:"))
}

/// `llmgw bundle import BUNDLE --sha256 SHA --store STORE`.
pub fn import(bundle: &Path, sha: &str, store: &Path) -> Output {
    llmgw()
        .args(["bundle", "import"])
        .arg(bundle)
        .args(["--sha256", sha, "--store"])
        .arg(store)
        .output()
        .unwrap()
}

/// The one image of a manifest.
pub fn only_image(m: &Manifest) -> &OciImage {
    assert_eq!(m.images.len(), 1, "{:?}", m.images);
    &m.images[0]
}

/// The bundle `bundle` (manifest `sha`) imported into `dir/store` and
/// served, and the `hosts.toml` of its one registry written where a node's
/// containerd looks (`dir/hosts/<registry>/`), as `mirror env` gives it:
/// (the mirror, the hosts folder). Each store here holds one registry's
/// images, so `mirror env` must name exactly `registry`.
pub fn served_to_containerd(
    dir: &Path,
    bundle: &Path,
    sha: &str,
    registry: &str,
) -> (crate::bundle_kit::Server, PathBuf) {
    let store = dir.join("store");
    ok(&import(bundle, sha, &store));
    let mirror = crate::bundle_kit::Server::start(&store);
    mirror.wait_for("/readyz", 200);
    let env = ok(&llmgw()
        .args(["mirror", "env", "--json", "--url", &mirror.url, "--store"])
        .arg(&store)
        .output()
        .unwrap());
    let env: serde_json::Value = serde_json::from_str(&env).unwrap();
    let files = env["containerd"].as_array().unwrap();
    assert_eq!(files.len(), 1, "{env}");
    assert_eq!(files[0]["registry"], registry);
    assert_eq!(
        files[0]["file"],
        format!("/etc/containerd/certs.d/{registry}/hosts.toml")
    );
    let hosts = dir.join("hosts").join(registry);
    std::fs::create_dir_all(&hosts).unwrap();
    std::fs::write(
        hosts.join("hosts.toml"),
        files[0]["content"].as_str().unwrap(),
    )
    .unwrap();
    (mirror, dir.join("hosts"))
}
