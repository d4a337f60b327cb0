//! What a carried OCI manifest or index names, read from its own bytes
//! (bounded, with the `oci-spec` types); the check that an image is a
//! closed tree under its top digest is [`super::oci_closed`].
//!
//! Invariant: the manifest's `images` section is only a claim; the bytes of
//! the manifests are what a registry client will follow. `check_tree`
//! accepts an image only when every blob the section lists is named by a
//! carried manifest's descriptor with the same size and media type, and
//! every child a carried manifest names is carried (or, for an index's
//! children, listed in `left_out`). So the top digest, vouched for by the
//! bundle's hash or signature, vouches for every byte served under it.
//! A carried manifest whose `subject` is a reached manifest of the image
//! counts as named (a referrer: the bundle's SBOM, format 4), its own
//! children checked the same way; the bundle's hash or signature vouches
//! for it, the referrers API lists it under its subject.
//! The bundler plans with [`parse_manifest`] too, so both sides read a
//! manifest the same way.

use oci_spec::image::{Descriptor, ImageIndex, ImageManifest};
use thiserror::Error;

use crate::Sha256;

/// The largest manifest or index read: a registry's own limit
/// (distribution refuses a manifest over 4 MiB), far above any real one.
pub const MAX_OCI_MANIFEST_BYTES: u64 = 4 * 1024 * 1024;
/// The most children (layers, or an index's manifests) a manifest may
/// name; real images have tens, the largest a few hundred.
pub const MAX_OCI_CHILDREN: usize = 10_000;
/// The largest image config accepted: configs are small JSON documents
/// (kilobytes); a descriptor promising gigabytes is a trap.
pub const MAX_OCI_CONFIG_BYTES: u64 = 64 * 1024 * 1024;

/// The OCI image index media type.
pub const OCI_INDEX: &str = "application/vnd.oci.image.index.v1+json";
/// The OCI image manifest media type.
pub const OCI_MANIFEST: &str = "application/vnd.oci.image.manifest.v1+json";
/// Docker's manifest list (the index's predecessor).
pub const DOCKER_LIST: &str = "application/vnd.docker.distribution.manifest.list.v2+json";
/// Docker's image manifest, schema 2.
pub const DOCKER_MANIFEST: &str = "application/vnd.docker.distribution.manifest.v2+json";
/// The annotation BuildKit marks an attestation manifest with.
pub const REFERENCE_TYPE: &str = "vnd.docker.reference.type";
/// The annotation naming the manifest an attestation is about.
pub const REFERENCE_DIGEST: &str = "vnd.docker.reference.digest";

/// Whether a media type is an index (an OCI index or a Docker list).
pub fn is_index(media_type: &str) -> bool {
    media_type == OCI_INDEX || media_type == DOCKER_LIST
}

/// Whether a media type is an image manifest (OCI or Docker schema 2).
pub fn is_image_manifest(media_type: &str) -> bool {
    media_type == OCI_MANIFEST || media_type == DOCKER_MANIFEST
}

/// Whether a blob of this media type is itself a manifest or an index.
pub fn is_manifest(media_type: &str) -> bool {
    is_index(media_type) || is_image_manifest(media_type)
}

/// One descriptor a manifest or index names.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Child {
    /// Its digest.
    pub sha256: Sha256,
    /// Its size, as the parent gives it.
    pub size: u64,
    /// Its media type, as the parent gives it.
    pub media_type: String,
    /// For an index's child, `os/arch[/variant]`.
    pub platform: Option<String>,
    /// For an attestation manifest: the manifest it is about.
    pub attests: Option<Sha256>,
    /// Whether it is an image manifest's config (not a layer).
    pub is_config: bool,
}

/// What a manifest or index names, read from its bytes.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Named {
    /// Whether it is an index (its children are manifests).
    pub index: bool,
    /// Its children: an index's manifests, or a manifest's config first
    /// and then its layers.
    pub children: Vec<Child>,
    /// The manifest it refers to (`subject`, sha256 only): a referrer, such
    /// as the SBOM an image carries, is reached through it.
    pub subject: Option<Sha256>,
}

/// Why the bytes of a manifest were refused.
#[derive(Debug, Error)]
pub enum OciParseError {
    /// Larger than any manifest a registry accepts.
    #[error("it is {actual} bytes; a manifest may be at most {max}")]
    TooLarge {
        /// Its length.
        actual: u64,
        /// [`MAX_OCI_MANIFEST_BYTES`].
        max: u64,
    },
    /// Not a manifest or index of the media type it was given as.
    #[error("it is not a valid {media_type} document")]
    NotJson {
        /// The media type it was read as.
        media_type: String,
        /// oci-spec's words.
        #[source]
        source: oci_spec::OciSpecError,
    },
    /// Its own `mediaType` field contradicts its descriptor's.
    #[error("its own mediaType is {inside}, but it was named as {outside}")]
    MediaType {
        /// The mediaType inside the document.
        inside: String,
        /// The one its descriptor (or the registry) gave.
        outside: String,
    },
    /// A media type that is not a manifest's or an index's.
    #[error("{media_type} is not a manifest or index media type")]
    NotAManifest {
        /// The media type.
        media_type: String,
    },
    /// A child named by another algorithm than sha256.
    #[error("it names {digest}, which is not a sha256 digest")]
    NotSha256 {
        /// The digest as written.
        digest: String,
    },
    /// Absurdly many children.
    #[error("it names {count} children; at most {max} are accepted")]
    TooManyChildren {
        /// How many it names.
        count: usize,
        /// [`MAX_OCI_CHILDREN`].
        max: usize,
    },
    /// A config descriptor promising an absurd size.
    #[error("its config {sha256} is said to be {size} bytes; at most {max} are accepted")]
    ConfigTooLarge {
        /// The config's digest.
        sha256: Sha256,
        /// The size its descriptor gives.
        size: u64,
        /// [`MAX_OCI_CONFIG_BYTES`].
        max: u64,
    },
    /// A child manifest whose descriptor promises more than a manifest may
    /// be.
    #[error("its child manifest {sha256} is said to be {size} bytes; at most {max} are accepted")]
    ChildTooLarge {
        /// The child's digest.
        sha256: Sha256,
        /// The size its descriptor gives.
        size: u64,
        /// [`MAX_OCI_MANIFEST_BYTES`].
        max: u64,
    },
}

/// Reads what a manifest or index of `media_type` names from its bytes:
/// bounded, its own `mediaType` agreeing, every child a sha256 digest, no
/// more than [`MAX_OCI_CHILDREN`] children, a config no larger than
/// [`MAX_OCI_CONFIG_BYTES`].
pub fn parse_manifest(media_type: &str, bytes: &[u8]) -> Result<Named, OciParseError> {
    if bytes.len() as u64 > MAX_OCI_MANIFEST_BYTES {
        return Err(OciParseError::TooLarge {
            actual: bytes.len() as u64,
            max: MAX_OCI_MANIFEST_BYTES,
        });
    }
    let not_json = |source| OciParseError::NotJson {
        media_type: media_type.to_string(),
        source,
    };
    let agree = |inside: Option<String>| match inside {
        Some(inside) if inside != media_type => Err(OciParseError::MediaType {
            inside,
            outside: media_type.to_string(),
        }),
        _ => Ok(()),
    };
    if is_index(media_type) {
        let index = ImageIndex::from_reader(bytes).map_err(not_json)?;
        agree(index.media_type().as_ref().map(ToString::to_string))?;
        count(index.manifests().len())?;
        let children = index
            .manifests()
            .iter()
            .map(|d| child(d, false))
            .collect::<Result<Vec<_>, _>>()?;
        for c in &children {
            if c.size > MAX_OCI_MANIFEST_BYTES {
                return Err(OciParseError::ChildTooLarge {
                    sha256: c.sha256.clone(),
                    size: c.size,
                    max: MAX_OCI_MANIFEST_BYTES,
                });
            }
        }
        Ok(Named {
            index: true,
            children,
            subject: subject_of(index.subject().as_ref()),
        })
    } else if is_image_manifest(media_type) {
        let m = ImageManifest::from_reader(bytes).map_err(not_json)?;
        agree(m.media_type().as_ref().map(ToString::to_string))?;
        count(m.layers().len().saturating_add(1))?;
        let config = child(m.config(), true)?;
        if config.size > MAX_OCI_CONFIG_BYTES {
            return Err(OciParseError::ConfigTooLarge {
                sha256: config.sha256,
                size: config.size,
                max: MAX_OCI_CONFIG_BYTES,
            });
        }
        let mut children = vec![config];
        for l in m.layers() {
            children.push(child(l, false)?);
        }
        Ok(Named {
            index: false,
            children,
            subject: subject_of(m.subject().as_ref()),
        })
    } else {
        Err(OciParseError::NotAManifest {
            media_type: media_type.to_string(),
        })
    }
}

/// A `subject` descriptor's sha256, if it has one.
fn subject_of(d: Option<&Descriptor>) -> Option<Sha256> {
    d.and_then(|d| d.as_digest_sha256())
        .and_then(|hex| Sha256::parse_exact("subject", hex).ok())
}

fn count(n: usize) -> Result<(), OciParseError> {
    if n > MAX_OCI_CHILDREN {
        return Err(OciParseError::TooManyChildren {
            count: n,
            max: MAX_OCI_CHILDREN,
        });
    }
    Ok(())
}

fn child(d: &Descriptor, is_config: bool) -> Result<Child, OciParseError> {
    let digest = d.digest().to_string();
    let sha256 = d
        .as_digest_sha256()
        .and_then(|hex| Sha256::parse_exact("digest", hex).ok())
        .ok_or(OciParseError::NotSha256 { digest })?;
    let platform = d.platform().as_ref().map(|p| {
        let mut s = format!("{}/{}", p.os(), p.architecture());
        if let Some(v) = p.variant().as_deref().filter(|v| !v.is_empty()) {
            s.push('/');
            s.push_str(v);
        }
        s
    });
    let annotations = d.annotations().as_ref();
    let attests = annotations
        .filter(|a| a.get(REFERENCE_TYPE).map(String::as_str) == Some("attestation-manifest"))
        .and_then(|a| a.get(REFERENCE_DIGEST))
        .and_then(|v| v.strip_prefix("sha256:"))
        .and_then(|hex| Sha256::parse_exact("attested digest", hex).ok());
    Ok(Child {
        sha256,
        size: d.size(),
        media_type: d.media_type().to_string(),
        platform,
        attests,
        is_config,
    })
}

#[cfg(test)]
#[path = "oci_tree_tests.rs"]
mod tests;
