//! The SBOM as an OCI referrer of each image: the mirror's referrers API
//! lists it under the image's digest, and its manifest and layer are
//! served, the layer being the SBOM the bundle's manifest names.

use llmgw_fixture::registry::TestImage;
use serde_json::Value;

use super::kit::{create, curl, fixture, llmgw, manifest_of_dir, ok, serve};

const OCI_ACCEPT: &str =
    "Accept: application/vnd.oci.image.manifest.v1+json, application/vnd.oci.image.index.v1+json";

#[test]
fn each_image_has_its_sbom_as_a_referrer() {
    let fx = fixture();
    let d = tempfile::tempdir().unwrap();
    let img = TestImage::build(
        &d.path().join("layout"),
        "v1",
        5,
        &["amd64", "arm64"],
        1,
        4096,
    )
    .unwrap();
    let flag = format!("acme/app:v1=oci-layout:{}:v1", img.layout.display());
    let dir = d.path().join("b");
    let sha = create(&fx, &d.path().join("c"), &dir, &["--image", &flag]);
    let m = manifest_of_dir(&dir);
    let sbom = m.evidence.as_ref().unwrap().sbom.clone();
    let store = d.path().join("store");
    ok(&llmgw()
        .args(["bundle", "import", "--sha256", &sha, "--store"])
        .arg(&store)
        .arg(&dir)
        .output()
        .unwrap());
    let (_server, url) = serve(&store);
    let digest = &img.index;
    let (head, body) = curl(&format!("{url}/v2/acme/app/referrers/{digest}"), &[]);
    assert!(head.starts_with("HTTP/1.1 200"), "{head}");
    let index: Value = serde_json::from_slice(&body).unwrap();
    let found: Vec<&Value> = index["manifests"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|d| d["artifactType"] == "application/vnd.cyclonedx+json")
        .collect();
    assert_eq!(found.len(), 1, "{index}");
    let referrer = found[0]["digest"].as_str().unwrap();
    let (head, body) = curl(
        &format!("{url}/v2/acme/app/manifests/{referrer}"),
        &[OCI_ACCEPT],
    );
    assert!(head.starts_with("HTTP/1.1 200"), "{head}");
    let rm: Value = serde_json::from_slice(&body).unwrap();
    assert_eq!(rm["subject"]["digest"], digest.as_str());
    let layer = rm["layers"][0]["digest"].as_str().unwrap();
    assert_eq!(layer, format!("sha256:{}", sbom.sha256));
    let (head, body) = curl(&format!("{url}/v2/acme/app/blobs/{layer}"), &[]);
    assert!(head.starts_with("HTTP/1.1 200"), "{head}");
    assert_eq!(
        body,
        std::fs::read(dir.join("blobs/sha256").join(sbom.sha256.as_str())).unwrap()
    );
    let config = rm["config"]["digest"].as_str().unwrap();
    let (head, body) = curl(&format!("{url}/v2/acme/app/blobs/{config}"), &[]);
    assert!(head.starts_with("HTTP/1.1 200"), "{head}");
    assert_eq!(body, b"{}");
}
