//! Every image and chart as a kubelet, containerd or Helm meets it: the
//! top manifest by its tag (or digest), each carried manifest by digest,
//! a HEAD of every carried blob; a chart's entry in the classic
//! `index.yaml` and its package, hashed against the manifest.
//!
//! Invariant: one row per image or chart; a failure names the request and
//! what the mirror answered.

use llmgw_shared::Sha256;
use llmgw_shared::manifest::{Manifest, OciImage, image_name};

use crate::client::{Mirror, seg};
use crate::report::Check;

/// Every manifest media type a pull accepts.
const ACCEPT: &str = "application/vnd.oci.image.index.v1+json, \
    application/vnd.oci.image.manifest.v1+json, \
    application/vnd.docker.distribution.manifest.list.v2+json, \
    application/vnd.docker.distribution.manifest.v2+json";

const REMAKE: &str = "make the bundle again (the image is not served as carried): report it, \
                      with this line, as a fault of llmgw";

/// The rows for every image and chart of `m`.
pub async fn check(mirror: &Mirror, m: &Manifest) -> Vec<Check> {
    let mut out = Vec::new();
    for image in &m.images {
        let subject = format!(
            "{}: {} manifests, {} blobs",
            image_name(image),
            image.manifests.len(),
            image.blobs.len()
        );
        out.push(match pull(mirror, image).await {
            Ok(()) => Check::pass("image", subject),
            Err(e) => Check::fail("image", subject, e, REMAKE),
        });
    }
    for chart in &m.charts {
        let subject = format!("chart {} {}", chart.name, chart.version);
        let result = match pull(mirror, &chart.artifact).await {
            Ok(()) => classic(mirror, &chart.name, &chart.version, &chart.package).await,
            Err(e) => Err(e),
        };
        out.push(match result {
            Ok(()) => Check::pass("chart", subject),
            Err(e) => Check::fail("chart", subject, e, REMAKE),
        });
    }
    out
}

/// The pull of one image: top manifest, every manifest, every blob.
async fn pull(mirror: &Mirror, image: &OciImage) -> Result<(), String> {
    let ns = image
        .registry
        .as_deref()
        .map(|r| format!("?ns={}", seg(r)))
        .unwrap_or_default();
    let repo = &image.repository;
    let top = image
        .tag
        .clone()
        .unwrap_or_else(|| format!("sha256:{}", image.digest));
    let accept = [("accept", ACCEPT)];
    let want = |d: &Sha256| format!("sha256:{d}");
    let url = format!("/v2/{repo}/manifests/{top}{ns}");
    let a = mirror.get_ok(&url, &accept).await?;
    if a.header("docker-content-digest") != want(&image.digest) {
        return Err(format!(
            "GET {url}: Docker-Content-Digest {:?}, the bundle has {}",
            a.header("docker-content-digest"),
            want(&image.digest)
        ));
    }
    for d in &image.manifests {
        let url = format!("/v2/{repo}/manifests/sha256:{}{ns}", d.sha256);
        let a = mirror.get_ok(&url, &accept).await?;
        if Sha256::of(&a.body) != d.sha256 {
            return Err(format!("GET {url}: the bytes served are not {}", d.sha256));
        }
    }
    for d in &image.blobs {
        let url = format!("/v2/{repo}/blobs/sha256:{}{ns}", d.sha256);
        let a = mirror.head_ok(&url, &[]).await?;
        if a.header("content-length") != d.size.to_string() {
            return Err(format!(
                "HEAD {url}: Content-Length {:?}, the bundle has {}",
                a.header("content-length"),
                d.size
            ));
        }
    }
    Ok(())
}

/// A chart in the classic repository: listed, and its package the bytes
/// the manifest names.
async fn classic(
    mirror: &Mirror,
    name: &str,
    version: &str,
    package: &Sha256,
) -> Result<(), String> {
    let file = format!("{name}-{version}.tgz");
    let index = mirror.get_ok("/charts/index.yaml", &[]).await?;
    if !String::from_utf8_lossy(&index.body).contains(&file) {
        return Err(format!("GET /charts/index.yaml does not list {file}"));
    }
    let url = format!("/charts/{}", seg(&file));
    let a = mirror.get_ok(&url, &[]).await?;
    if Sha256::of(&a.body) != *package {
        return Err(format!("GET {url}: the bytes served are not {package}"));
    }
    Ok(())
}
