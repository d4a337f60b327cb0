//! Planning one image (or an OCI chart): the tag resolved once, a pin
//! checked, the top manifest or index kept exactly as served, the children
//! for the bundle's platforms (`linux/<arch>`, any variant) and the
//! attestation manifests about them fetched by digest (each distinct
//! digest once, however often the index names it), the other children
//! recorded in `left_out`, and every config and layer planned as a
//! verified download (the run's fetcher: cache, resume, retries, checked
//! against the descriptor's digest and size).
//!
//! Invariant: the image planned is a closed tree under the digest the tag
//! named when it was asked — every manifest was fetched by digest after
//! that, checked against its parent's descriptor, and
//! [`check_tree`] (the check import makes) passes before it is returned.
//! The walk down the manifests ([`ManifestWalk`]) and the last check
//! ([`finish`]) are the same for an image read from a local layout.

use std::collections::BTreeMap;

use llmgw_shared::Sha256;
use llmgw_shared::manifest::{
    Named, OciDescriptor, OciImage, check_tree, is_image_manifest, is_index,
};

use super::auth::RegistryAuth;
use super::client::{ManifestAnswer, Repo, get_manifest};
use super::error::OciError;
use super::walk::ManifestWalk;
use crate::cache::{Cache, Expect};
use crate::error::CreateError;
use crate::fetch::Download;
use crate::http::Http;
use crate::plan::Plan;
use crate::spec::oci::reference::Reference;
use crate::spec::oci::registries::Registries;

/// What planning an image needs.
pub struct Ctx<'a> {
    pub http: &'a Http,
    pub auth: &'a RegistryAuth,
    pub cache: &'a Cache,
    /// Where each registry is asked (`--insecure-registry`, `--registry`).
    pub registries: &'a Registries,
    /// The bundle's `--arch` list (`amd64`, `arm64`).
    pub arches: &'a [String],
}

/// An image planned: its record, and its config and layer downloads (in
/// the plan too).
pub struct PlannedImage {
    pub image: OciImage,
    /// Where the image's blobs are asked for.
    pub repo: Repo,
}

/// Plans `r` into `plan`: see the module docs.
pub async fn plan_image(
    ctx: &Ctx<'_>,
    r: &Reference,
    plan: &mut Plan,
) -> Result<PlannedImage, CreateError> {
    let repo = Repo::of(r, ctx.registries)?;
    let top = get_manifest(ctx.http, ctx.auth, &repo, &r.asked()).await?;
    if let Some(pin) = &r.pin
        && &top.sha256 != pin
    {
        return Err(OciError::PinMismatch {
            image: repo.shown.clone(),
            pinned: Box::new(pin.clone()),
            actual: top.sha256.clone(),
        }
        .into());
    }
    let top_d = OciDescriptor {
        sha256: top.sha256.clone(),
        size: top.bytes.len() as u64,
        media_type: top.media_type.clone(),
        platform: None,
    };
    let (mut walk, carried) =
        ManifestWalk::start(&repo.shown, top_d, &top, ctx.arches, ctx.cache, plan)?;
    for d in carried {
        if walk.again(&d) {
            continue;
        }
        let child = get_child(ctx, &repo, &d).await?;
        walk.child(d, &child, ctx.cache, plan)?;
    }
    let mut blobs = Vec::new();
    for m in &walk.images {
        for c in &walk.named[m].children {
            let d = OciDescriptor {
                sha256: c.sha256.clone(),
                size: c.size,
                media_type: c.media_type.clone(),
                platform: None,
            };
            plan.download(Download {
                label: format!(
                    "{} {} sha256:{}",
                    repo.shown,
                    if c.is_config { "config" } else { "layer" },
                    &c.sha256.as_str()[..12]
                ),
                url: repo.blob_url(&c.sha256),
                size: c.size,
                expect: Expect::Sha256(c.sha256.clone()),
                denied_hint: Some(
                    "the registry refused the blob; log in (`docker login`) or set \
                     REGISTRY_AUTH_FILE"
                        .into(),
                ),
            });
            blobs.push(d);
        }
    }
    let image = OciImage {
        registry: Some(r.registry.clone()),
        repository: r.repository.clone(),
        tag: r.tag.clone(),
        digest: top.sha256.clone(),
        manifests: walk.manifests,
        blobs,
        left_out: walk.left_out,
    };
    let image = finish(&repo.shown, image, &walk.named)?;
    Ok(PlannedImage { image, repo })
}

/// The image record sorted, and checked to be a closed tree under its top
/// digest ([`check_tree`], the check import makes) before it enters the
/// plan.
pub(super) fn finish(
    shown: &str,
    mut image: OciImage,
    named: &BTreeMap<Sha256, Named>,
) -> Result<OciImage, CreateError> {
    image.sort();
    check_tree(shown, &image, named).map_err(|e| {
        CreateError::Manifest(llmgw_shared::manifest::ManifestError::Inconsistent(
            llmgw_shared::chain(&*e),
        ))
    })?;
    Ok(image)
}

/// A child manifest by digest, checked against its descriptor: the same
/// digest, size and media type.
async fn get_child(
    ctx: &Ctx<'_>,
    repo: &Repo,
    d: &OciDescriptor,
) -> Result<ManifestAnswer, OciError> {
    let child = get_manifest(ctx.http, ctx.auth, repo, &format!("sha256:{}", d.sha256)).await?;
    let mismatch = |expected: String, actual: String| OciError::Descriptor {
        image: repo.shown.clone(),
        blob: Box::new(d.sha256.clone()),
        expected,
        actual,
    };
    if child.bytes.len() as u64 != d.size {
        return Err(mismatch(
            format!("{} bytes", d.size),
            format!("{} bytes", child.bytes.len()),
        ));
    }
    if child.sha256 != d.sha256 {
        return Err(mismatch(
            format!("sha256:{}", d.sha256),
            format!("bytes hashing to sha256:{}", child.sha256),
        ));
    }
    let same_kind = (is_index(&d.media_type) && is_index(&child.media_type))
        || (is_image_manifest(&d.media_type) && d.media_type == child.media_type);
    if !same_kind {
        return Err(mismatch(
            format!("media type {}", d.media_type),
            format!("media type {}", child.media_type),
        ));
    }
    Ok(child)
}
