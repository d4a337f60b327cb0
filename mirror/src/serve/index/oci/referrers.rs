//! What a carried OCI manifest says about the image it refers to: its
//! `subject` (the referrers API files it under that digest), its
//! `artifactType` and its annotations.
//!
//! Invariants:
//! - A manifest's bytes are read bounded ([`MAX_MANIFEST_BYTES`]) and only
//!   off the request path, by the index thread.
//! - What was parsed is kept by digest between index builds
//!   ([`ParsedManifests`]): a digest names the same bytes for ever, so a
//!   kept parse is never stale; a manifest no held image lists any more is
//!   dropped at the next build, and one that could not be read is read
//!   again at the next build (the store may have been repaired).

use std::collections::{BTreeMap, HashMap, HashSet};

use llmgw_shared::Sha256;
use serde::Deserialize;

use crate::serve::index::entries::Blob;

/// Largest carried manifest read to find its `subject`: the size the spec
/// says registries should accept.
pub const MAX_MANIFEST_BYTES: u64 = 4 << 20;

/// Media types that may carry a `subject` (image manifests and indexes).
const SUBJECT_BEARING: [&str; 2] = [
    "application/vnd.oci.image.manifest.v1+json",
    "application/vnd.oci.image.index.v1+json",
];

/// A manifest with a `subject`, as the referrers API lists it.
#[derive(Debug, Clone)]
pub struct Referrer {
    pub blob: Blob,
    pub media_type: String,
    /// Its `artifactType`, else its config's media type (an index has none).
    pub artifact_type: Option<String>,
    pub annotations: BTreeMap<String, String>,
}

/// A manifest's fields the referrers API repeats.
#[derive(Debug, Deserialize)]
struct Carried {
    #[serde(rename = "artifactType")]
    artifact_type: Option<String>,
    config: Option<CarriedDescriptor>,
    subject: Option<CarriedDescriptor>,
    #[serde(default)]
    annotations: BTreeMap<String, String>,
}

#[derive(Debug, Deserialize)]
struct CarriedDescriptor {
    digest: String,
    #[serde(rename = "mediaType")]
    media_type: Option<String>,
}

/// The carried manifests parsed so far, by digest (`None`: read, but not a
/// manifest this module understands), kept from one index build to the
/// next so an unchanged set of manifests is not read again.
#[derive(Debug, Default)]
pub struct ParsedManifests {
    parsed: HashMap<Sha256, Option<Carried>>,
    /// The digests asked for during the build under way.
    used: HashSet<Sha256>,
}

impl ParsedManifests {
    /// How many parses are kept (for tests and the log).
    pub fn len(&self) -> usize {
        self.parsed.len()
    }

    /// Whether nothing is kept.
    pub fn is_empty(&self) -> bool {
        self.parsed.is_empty()
    }

    /// The subject and the referrer entry of the held manifest `blob` of
    /// `media_type`, if it has a `subject`; reads its bytes through `read`
    /// only when no earlier build parsed them.
    pub fn referrer(
        &mut self,
        blob: &Blob,
        media_type: &str,
        read: &dyn Fn(&Sha256, u64) -> Option<Vec<u8>>,
    ) -> Option<(Sha256, Referrer)> {
        if !SUBJECT_BEARING.contains(&media_type) || blob.size > MAX_MANIFEST_BYTES {
            return None;
        }
        self.used.insert(blob.sha256.clone());
        if !self.parsed.contains_key(&blob.sha256) {
            // A failed read is not kept: the next build tries again.
            let bytes = read(&blob.sha256, MAX_MANIFEST_BYTES)?;
            let carried = serde_json::from_slice::<Carried>(&bytes).ok();
            self.parsed.insert(blob.sha256.clone(), carried);
        }
        let c = self.parsed.get(&blob.sha256)?.as_ref()?;
        let subject = c
            .subject
            .as_ref()
            .and_then(|s| s.digest.strip_prefix("sha256:"))
            .and_then(|h| Sha256::parse_exact("subject", h).ok())?;
        let artifact_type = c
            .artifact_type
            .clone()
            .filter(|t| !t.is_empty())
            .or_else(|| {
                (media_type == SUBJECT_BEARING[0])
                    .then(|| c.config.as_ref().and_then(|d| d.media_type.clone()))
                    .flatten()
            });
        let referrer = Referrer {
            blob: blob.clone(),
            media_type: media_type.to_string(),
            artifact_type,
            annotations: c.annotations.clone(),
        };
        Some((subject, referrer))
    }

    /// Ends a build: forgets every parse the build did not ask for (a
    /// manifest no held image lists any more).
    pub fn finish_build(&mut self) {
        let used = std::mem::take(&mut self.used);
        self.parsed.retain(|sha, _| used.contains(sha));
    }
}
