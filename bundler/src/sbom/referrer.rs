//! The SBOM as an OCI referrer of each image the bundle carries: an image
//! manifest (`artifactType` `application/vnd.cyclonedx+json`, the empty
//! config, the SBOM as its one layer, `subject` the image's top manifest or
//! index), carried as one more manifest of the image, so the mirror's
//! referrers API lists it under the image's digest as it lists any carried
//! referrer, and `oras discover` or `cosign` find it.
//!
//! Invariant: the referrer names the SBOM blob the manifest's evidence
//! names, and the image's record lists it, its empty config and the SBOM,
//! so the closed-tree check (which reaches a carried manifest through its
//! `subject`) accepts the image; the bytes are a function of the SBOM and
//! the image's top descriptor. The SBOM cannot list the referrer (which
//! names the SBOM's digest): they, and the empty config, are the only blobs
//! it does not list.

use llmgw_shared::Sha256;
use llmgw_shared::manifest::{
    BlobRef, Manifest, OCI_MANIFEST, OciDescriptor, SBOM_MEDIA_TYPE, SBOM_NAME,
};
use serde_json::json;

use crate::cache::Cache;
use crate::error::CreateError;
use crate::writer::Blob;

/// The OCI empty descriptor's media type and content (`{}`).
const EMPTY_MEDIA_TYPE: &str = "application/vnd.oci.empty.v1+json";
const EMPTY: &[u8] = b"{}";

/// Adds the SBOM referrer to every image of `manifest`; answers the blobs
/// made (the referrer manifests and the empty config), stored in `cache`.
pub fn add(
    manifest: &mut Manifest,
    sbom: &BlobRef,
    cache: &Cache,
) -> Result<Vec<Blob>, CreateError> {
    if manifest.images.is_empty() {
        return Ok(Vec::new());
    }
    let mut made = Vec::new();
    let mut store = |bytes: &[u8]| -> Result<Sha256, CreateError> {
        let (sha256, path) = cache
            .put_bytes(bytes)
            .map_err(|e| CreateError::io(cache.root(), e))?;
        if !made.iter().any(|b: &Blob| b.sha256 == sha256) {
            made.push(Blob {
                sha256: sha256.clone(),
                size: bytes.len() as u64,
                path,
            });
        }
        Ok(sha256)
    };
    let empty = store(EMPTY)?;
    for image in &mut manifest.images {
        let Some(top) = image
            .manifests
            .iter()
            .find(|d| d.sha256 == image.digest)
            .cloned()
        else {
            continue;
        };
        let bytes = referrer_bytes(&top, &empty, sbom);
        let sha = store(&bytes)?;
        image.manifests.push(OciDescriptor {
            sha256: sha,
            size: bytes.len() as u64,
            media_type: OCI_MANIFEST.to_string(),
            platform: None,
        });
        image.blobs.push(OciDescriptor {
            sha256: empty.clone(),
            size: EMPTY.len() as u64,
            media_type: EMPTY_MEDIA_TYPE.to_string(),
            platform: None,
        });
        image.blobs.push(OciDescriptor {
            sha256: sbom.sha256.clone(),
            size: sbom.size,
            media_type: SBOM_MEDIA_TYPE.to_string(),
            platform: None,
        });
        image.sort();
    }
    Ok(made)
}

/// The referrer manifest of the image whose top descriptor is `top`.
fn referrer_bytes(top: &OciDescriptor, empty: &Sha256, sbom: &BlobRef) -> Vec<u8> {
    let v = json!({
        "schemaVersion": 2,
        "mediaType": OCI_MANIFEST,
        "artifactType": SBOM_MEDIA_TYPE,
        "config": {"mediaType": EMPTY_MEDIA_TYPE, "digest": format!("sha256:{empty}"), "size": EMPTY.len()},
        "layers": [{
            "mediaType": SBOM_MEDIA_TYPE,
            "digest": format!("sha256:{}", sbom.sha256),
            "size": sbom.size,
            "annotations": {"org.opencontainers.image.title": SBOM_NAME}
        }],
        "subject": {"mediaType": top.media_type, "digest": format!("sha256:{}", top.sha256), "size": top.size},
    });
    serde_json::to_vec(&v).unwrap_or_default()
}
