//! The OCI step: every image and chart a bundle carries is a closed tree
//! under its top digest, read from the carried manifests' own bytes.
//!
//! Manifests and indexes are small blobs (at most
//! [`MAX_OCI_MANIFEST_BYTES`]), so like the signature files they are
//! captured as they stream — or read from the target when it holds them
//! already — and parsed at once (`oci-spec`, bounded); only what each names
//! is kept. Once every blob was seen, [`OciTrees::settle`] checks each
//! image with [`check_tree`].
//!
//! Invariant: an image whose tree was not checked is never taken as
//! checked: a manifest the bundle leaves to the store (a delta's
//! prerequisite, which `bundle verify` cannot read) is listed as
//! unchecked; any other manifest not seen refuses the bundle.
//!
//! [`MAX_OCI_MANIFEST_BYTES`]: llmgw_shared::manifest::MAX_OCI_MANIFEST_BYTES

use std::collections::{BTreeMap, BTreeSet};

use llmgw_shared::Sha256;
use llmgw_shared::manifest::{
    Manifest, Named, OciImage, OciTreeError, check_tree, image_name, parse_manifest,
};

use super::error::VerifyError;
use super::target::Target;

/// Every image of a bundle (charts' artifacts among them), waiting for the
/// bytes of its manifests.
pub(crate) struct OciTrees {
    /// `(name for messages, image)`.
    images: Vec<(String, OciImage)>,
    /// Each carried manifest's media type, by digest: the blobs whose
    /// bytes are wanted, and how to read them.
    wanted: BTreeMap<Sha256, String>,
    /// What each manifest read so far names.
    named: BTreeMap<Sha256, Named>,
}

impl OciTrees {
    /// Starts the check of every image of `manifest`, reading at once the
    /// manifests `target` holds already.
    pub(crate) fn start<T: Target + ?Sized>(
        manifest: &Manifest,
        target: &T,
    ) -> Result<Self, T::Error> {
        let images: Vec<(String, OciImage)> = manifest
            .images
            .iter()
            .map(|i| (image_name(i), i.clone()))
            .chain(manifest.charts.iter().map(|c| {
                let name = format!("chart {} {}", c.name, c.version);
                (name, c.artifact.clone())
            }))
            .collect();
        let mut wanted = BTreeMap::new();
        for (_, image) in &images {
            for d in &image.manifests {
                wanted.insert(d.sha256.clone(), d.media_type.clone());
            }
        }
        let mut trees = Self {
            images,
            wanted,
            named: BTreeMap::new(),
        };
        let held: Vec<(Sha256, u64)> = trees
            .images
            .iter()
            .flat_map(|(_, i)| i.manifests.iter().map(|d| (d.sha256.clone(), d.size)))
            .filter(|(sha, size)| target.have(sha, *size))
            .collect();
        for (sha, _) in held {
            if !trees.named.contains_key(&sha) {
                let bytes = target.read_have(&sha)?;
                trees.offer(&sha, &bytes)?;
            }
        }
        Ok(trees)
    }

    /// Whether this blob's bytes are wanted (it is a carried manifest not
    /// read yet).
    pub(crate) fn wants(&self, sha256: &str) -> bool {
        self.wanted.keys().any(|k| k.as_str() == sha256)
            && !self.named.keys().any(|k| k.as_str() == sha256)
    }

    /// Hands over a verified blob's bytes: a carried manifest is parsed at
    /// once, and refused naming its image when it cannot be read.
    pub(crate) fn offer(&mut self, sha256: &str, bytes: &[u8]) -> Result<(), VerifyError> {
        let Some((sha, media_type)) = self.wanted.iter().find(|(k, _)| k.as_str() == sha256) else {
            return Ok(());
        };
        let named = parse_manifest(media_type, bytes).map_err(|source| {
            let image = self
                .images
                .iter()
                .find(|(_, i)| i.manifests.iter().any(|d| &d.sha256 == sha))
                .map(|(n, _)| n.clone())
                .unwrap_or_default();
            VerifyError::Oci(Box::new(OciTreeError::Unreadable {
                image,
                blob: sha.clone(),
                source,
            }))
        })?;
        self.named.insert(sha.clone(), named);
        Ok(())
    }

    /// Once every blob was seen: checks each image's tree. An image with a
    /// manifest among `elsewhere` (a delta's prerequisites, not readable
    /// here) is added to `unchecked`; any other manifest not read refuses
    /// the bundle.
    pub(crate) fn settle(
        &self,
        elsewhere: &BTreeSet<&str>,
        unchecked: &mut Vec<String>,
    ) -> Result<(), VerifyError> {
        for (name, image) in &self.images {
            let unread: Vec<&Sha256> = image
                .manifests
                .iter()
                .map(|d| &d.sha256)
                .filter(|s| !self.named.contains_key(*s))
                .collect();
            if unread.is_empty() {
                check_tree(name, image, &self.named)?;
            } else if unread.iter().all(|s| elsewhere.contains(s.as_str())) {
                unchecked.push(format!(
                    "the tree of image {}: its manifests are prerequisites",
                    llmgw_shared::shown(name)
                ));
            } else {
                return Err(VerifyError::Missing {
                    count: unread.len(),
                    list: format!("the manifests of image {name}"),
                });
            }
        }
        Ok(())
    }
}
