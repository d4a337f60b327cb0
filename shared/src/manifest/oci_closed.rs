//! The check that an image is a closed tree under its top digest, over
//! what its carried manifests name ([`super::oci_tree`]).
//!
//! Invariant: [`check_tree`] accepts an image only when every blob record
//! is named by a carried manifest's descriptor of the same size and media
//! type (one blob may have several records, one per media type it is named
//! under), and every child a carried manifest names is carried (or, for an
//! index's children, listed in `left_out`); a referrer is reached through
//! its `subject`.

use std::collections::{BTreeMap, BTreeSet};

use thiserror::Error;

use super::oci::{OciDescriptor, OciImage};
use super::oci_tree::{Child, Named, OciParseError};
use crate::Sha256;

/// Why an image is not the closed tree its section claims.
#[derive(Debug, Error)]
pub enum OciTreeError {
    /// A carried manifest's bytes were refused.
    #[error("image {image}: manifest {blob} cannot be read")]
    Unreadable {
        /// The image, as the operator names it.
        image: String,
        /// The manifest's digest.
        blob: Sha256,
        /// Why.
        #[source]
        source: OciParseError,
    },
    /// A blob the section lists that no carried manifest names.
    #[error(
        "image {image}: blob {blob} is carried, but no manifest of the image names it; \
         the bundle was edited or made wrong: make it again"
    )]
    Unnamed {
        /// The image.
        image: String,
        /// The blob.
        blob: Sha256,
    },
    /// The section and the manifest that names a blob disagree about it.
    #[error(
        "image {image}: blob {blob}: manifest {parent} gives its {field} as {expected}, \
         but the bundle's manifest records {actual}; the descriptor or the record lies: \
         make the bundle again"
    )]
    Differs {
        /// The image.
        image: String,
        /// The blob.
        blob: Sha256,
        /// The carried manifest naming it.
        parent: Sha256,
        /// `size` or `media type`.
        field: &'static str,
        /// What the manifest's descriptor says.
        expected: String,
        /// What the bundle's manifest records.
        actual: String,
    },
    /// A child a carried manifest names that the bundle neither carries
    /// nor lists as left out.
    #[error(
        "image {image}: manifest {parent} names {blob} ({media_type}), which the bundle \
         neither carries nor lists as left out"
    )]
    Missing {
        /// The image.
        image: String,
        /// The missing child.
        blob: Sha256,
        /// Its media type, as its parent gives it.
        media_type: String,
        /// The manifest naming it.
        parent: Sha256,
    },
}

/// Checks that `image` (named `who` in errors) is a closed tree under its
/// top digest, given what each of its carried manifests names (`named`,
/// by digest; every carried manifest must be there).
pub fn check_tree(
    who: &str,
    image: &OciImage,
    named: &BTreeMap<Sha256, Named>,
) -> Result<(), Box<OciTreeError>> {
    let pools = Pools {
        manifests: pool(&image.manifests),
        blobs: pool(&image.blobs),
        left_out: pool(&image.left_out),
    };
    let mut reached = Reached {
        digests: BTreeSet::from([&image.digest]),
        typed: BTreeSet::new(),
    };
    walk(who, &pools, named, vec![&image.digest], &mut reached)?;
    // Referrers: a carried manifest whose `subject` is a reached manifest
    // of the image is reached, and its own children checked, in turn.
    loop {
        let found: Vec<&Sha256> = image
            .manifests
            .iter()
            .map(|d| &d.sha256)
            .filter(|d| !reached.digests.contains(d))
            .filter(|d| {
                named
                    .get(*d)
                    .and_then(|n| n.subject.as_ref())
                    .is_some_and(|s| reached.digests.contains(s) && pools.manifests.contains_key(s))
            })
            .collect();
        if found.is_empty() {
            break;
        }
        reached.digests.extend(found.iter().copied());
        walk(who, &pools, named, found, &mut reached)?;
    }
    // A manifest is reached by its digest (the top one and a referrer have
    // no parent's descriptor); a config or layer by a descriptor of its
    // recorded media type, so no record names a blob as what no parent does.
    let mut unreached = image
        .manifests
        .iter()
        .filter(|d| !reached.digests.contains(&d.sha256))
        .chain(
            image
                .blobs
                .iter()
                .filter(|d| !reached.typed.contains(&(&d.sha256, d.media_type.as_str()))),
        );
    match unreached.next() {
        Some(d) => Err(Box::new(OciTreeError::Unnamed {
            image: who.to_string(),
            blob: d.sha256.clone(),
        })),
        None => Ok(()),
    }
}

/// What a walk reached: digests, and each (digest, media type) a parent's
/// descriptor named.
struct Reached<'a> {
    digests: BTreeSet<&'a Sha256>,
    typed: BTreeSet<(&'a Sha256, &'a str)>,
}

/// An image's descriptors by digest: what it carries, and what it leaves
/// out. One blob may be named by several descriptors (the same bytes under
/// several media types: `{}` is a legacy config and OCI 1.1's empty
/// descriptor), so each digest keeps every record of it.
struct Pools<'a> {
    manifests: BTreeMap<&'a Sha256, Vec<&'a OciDescriptor>>,
    blobs: BTreeMap<&'a Sha256, Vec<&'a OciDescriptor>>,
    left_out: BTreeMap<&'a Sha256, Vec<&'a OciDescriptor>>,
}

fn pool(list: &[OciDescriptor]) -> BTreeMap<&Sha256, Vec<&OciDescriptor>> {
    let mut out: BTreeMap<&Sha256, Vec<&OciDescriptor>> = BTreeMap::new();
    for d in list {
        out.entry(&d.sha256).or_default().push(d);
    }
    out
}

/// Walks down from `todo`, checking each child against its record and
/// adding what it reaches to `reached`.
fn walk<'a>(
    who: &str,
    pools: &Pools<'a>,
    named: &'a BTreeMap<Sha256, Named>,
    mut todo: Vec<&'a Sha256>,
    reached: &mut Reached<'a>,
) -> Result<(), Box<OciTreeError>> {
    while let Some(parent) = todo.pop() {
        let Some(names) = named.get(parent) else {
            // The caller parsed every carried manifest; a parent without
            // its bytes is not carried.
            return Err(Box::new(OciTreeError::Unnamed {
                image: who.to_string(),
                blob: parent.clone(),
            }));
        };
        for c in &names.children {
            let pool = if names.index {
                &pools.manifests
            } else {
                &pools.blobs
            };
            let recorded = match pool.get(&c.sha256) {
                Some(d) => d,
                None if names.index && pools.left_out.contains_key(&c.sha256) => {
                    same(who, parent, c, &pools.left_out[&c.sha256])?;
                    continue;
                }
                None => {
                    return Err(Box::new(OciTreeError::Missing {
                        image: who.to_string(),
                        blob: c.sha256.clone(),
                        media_type: c.media_type.clone(),
                        parent: parent.clone(),
                    }));
                }
            };
            same(who, parent, c, recorded)?;
            reached.typed.insert((&c.sha256, c.media_type.as_str()));
            if reached.digests.insert(&c.sha256) && names.index {
                todo.push(&c.sha256);
            }
        }
    }
    Ok(())
}

/// The descriptor a parent gives and a record of its digest agree on size
/// and type: one of the records, since a blob may be recorded under
/// several media types (never several sizes: the claims see to it).
fn same(
    who: &str,
    parent: &Sha256,
    c: &Child,
    records: &[&OciDescriptor],
) -> Result<(), Box<OciTreeError>> {
    let recorded = records
        .iter()
        .find(|r| r.media_type == c.media_type)
        .or(records.first())
        .copied()
        .ok_or_else(|| {
            Box::new(OciTreeError::Unnamed {
                image: who.to_string(),
                blob: c.sha256.clone(),
            })
        })?;
    let differs = |field, expected: String, actual: String| {
        Box::new(OciTreeError::Differs {
            image: who.to_string(),
            blob: c.sha256.clone(),
            parent: parent.clone(),
            field,
            expected,
            actual,
        })
    };
    if c.size != recorded.size {
        return Err(differs(
            "size",
            c.size.to_string(),
            recorded.size.to_string(),
        ));
    }
    if c.media_type != recorded.media_type {
        return Err(differs(
            "media type",
            c.media_type.clone(),
            recorded.media_type.clone(),
        ));
    }
    Ok(())
}
