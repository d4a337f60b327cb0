//! One image's manifest tree as it is read, from a registry or a local
//! layout alike: the top manifest and, under an index, the children for
//! the bundle's platforms (`linux/<arch>`, any variant) and the
//! attestation manifests about them; the other children recorded as left
//! out. How a child's bytes are fetched is the source's; what is done with
//! them is here.
//!
//! Invariant: every manifest taken is parsed (else refused naming the image
//! and the digest), is not an index under an index, and is in the cache
//! and the plan's stored blobs before the walk goes on; each distinct
//! digest is fetched and taken once, however often an index names it.

use std::collections::BTreeMap;

use llmgw_shared::Sha256;
use llmgw_shared::manifest::{Named, OciDescriptor, OciParseError, parse_manifest};

use super::client::ManifestAnswer;
use super::error::OciError;
use crate::cache::Cache;
use crate::error::CreateError;
use crate::plan::Plan;

/// The manifests of one image read so far.
pub(super) struct ManifestWalk<'a> {
    /// The image as messages name it.
    shown: &'a str,
    /// Every manifest's descriptor, the top one first.
    pub manifests: Vec<OciDescriptor>,
    /// Each manifest parsed, by digest.
    pub named: BTreeMap<Sha256, Named>,
    /// The image manifests: the top one when it is not an index, else the
    /// children taken.
    pub images: Vec<Sha256>,
    /// The index's children not carried.
    pub left_out: Vec<OciDescriptor>,
}

impl<'a> ManifestWalk<'a> {
    /// Takes the top manifest (`top`, described by `top_d`); returns the
    /// walk and the children still to fetch (none when it is an image).
    pub fn start(
        shown: &'a str,
        top_d: OciDescriptor,
        top: &ManifestAnswer,
        arches: &[String],
        cache: &Cache,
        plan: &mut Plan,
    ) -> Result<(Self, Vec<OciDescriptor>), CreateError> {
        let top_named = parse_manifest(&top.media_type, &top.bytes)
            .map_err(|e| unreadable(shown, &top.sha256, e))?;
        keep(cache, top, plan)?;
        let mut walk = ManifestWalk {
            shown,
            manifests: vec![top_d],
            named: BTreeMap::new(),
            images: Vec::new(),
            left_out: Vec::new(),
        };
        let mut carried = Vec::new();
        if top_named.index {
            (carried, walk.left_out) = split_children(shown, &top_named, arches)?;
        } else {
            walk.images.push(top.sha256.clone());
        }
        walk.named.insert(top.sha256.clone(), top_named);
        Ok((walk, carried))
    }

    /// Whether child `d`'s digest was taken already (an index may name one
    /// manifest many times): its descriptor is then recorded again, and
    /// nothing is fetched or read twice. [`check_tree`] holds every
    /// descriptor the index names to the one set of bytes taken.
    ///
    /// [`check_tree`]: llmgw_shared::manifest::check_tree
    pub fn again(&mut self, d: &OciDescriptor) -> bool {
        if !self.named.contains_key(&d.sha256) {
            return false;
        }
        self.manifests.push(d.clone());
        true
    }

    /// Takes a child `d` of the top index, its bytes fetched and checked
    /// against `d` by the source.
    pub fn child(
        &mut self,
        d: OciDescriptor,
        child: &ManifestAnswer,
        cache: &Cache,
        plan: &mut Plan,
    ) -> Result<(), CreateError> {
        let child_named = parse_manifest(&child.media_type, &child.bytes)
            .map_err(|e| unreadable(self.shown, &d.sha256, e))?;
        if child_named.index {
            return Err(nested_index(self.shown, &child.media_type).into());
        }
        keep(cache, child, plan)?;
        self.named.insert(d.sha256.clone(), child_named);
        self.images.push(d.sha256.clone());
        self.manifests.push(d);
        Ok(())
    }
}

/// A manifest of the image that does not parse as its media type says.
fn unreadable(shown: &str, blob: &Sha256, source: OciParseError) -> OciError {
    OciError::Unreadable {
        image: shown.to_string(),
        blob: Box::new(blob.clone()),
        source,
    }
}

/// Whether an index child's platform is one the bundle carries.
fn wanted(platform: Option<&str>, arches: &[String]) -> bool {
    let Some(p) = platform else { return false };
    let mut parts = p.split('/');
    parts.next() == Some("linux") && parts.next().is_some_and(|a| arches.iter().any(|x| x == a))
}

/// An index's children split into those the bundle carries — the images
/// for its platforms (`linux/<arch>`, any variant) and the attestation
/// manifests about them — and those left out; none carried is an error
/// naming the platforms the index has.
pub(super) fn split_children(
    shown: &str,
    index: &Named,
    arches: &[String],
) -> Result<(Vec<OciDescriptor>, Vec<OciDescriptor>), OciError> {
    let wanted_images: Vec<&Sha256> = index
        .children
        .iter()
        .filter(|c| wanted(c.platform.as_deref(), arches))
        .map(|c| &c.sha256)
        .collect();
    if wanted_images.is_empty() {
        let available: Vec<&str> = index
            .children
            .iter()
            .filter_map(|c| c.platform.as_deref())
            .collect();
        return Err(OciError::NoPlatform {
            image: shown.to_string(),
            asked: arches.join(", "),
            available: available.join(", "),
        });
    }
    let (mut carried, mut left_out) = (Vec::new(), Vec::new());
    for c in &index.children {
        let attests_carried = c
            .attests
            .as_ref()
            .is_some_and(|a| wanted_images.contains(&a));
        let d = OciDescriptor {
            sha256: c.sha256.clone(),
            size: c.size,
            media_type: c.media_type.clone(),
            platform: c.platform.clone(),
        };
        if wanted_images.contains(&&c.sha256) || attests_carried {
            carried.push(d);
        } else {
            left_out.push(d);
        }
    }
    Ok((carried, left_out))
}

/// An index named as a child of an index: not carried.
pub(super) fn nested_index(shown: &str, media_type: &str) -> OciError {
    OciError::MediaType {
        image: shown.to_string(),
        content_type: format!("{media_type} (an index inside an index)"),
    }
}

/// Puts a manifest's verified bytes into the cache, for the writer.
pub(super) fn keep(cache: &Cache, m: &ManifestAnswer, plan: &mut Plan) -> Result<(), CreateError> {
    let (sha, path) = cache
        .put_bytes(&m.bytes)
        .map_err(|e| CreateError::io(cache.root(), e))?;
    if !plan.stored.iter().any(|s| s.sha256 == sha) {
        plan.store(sha, path, m.bytes.len() as u64);
    }
    Ok(())
}
