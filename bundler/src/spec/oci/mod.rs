//! What the operator asks for from OCI registries: `--image` (a Docker
//! reference, or a local OCI layout) and `--chart` (`oci://…`, or a
//! packaged chart on disk), and `--insecure-registry` and `--registry`
//! (`registries`); read here, before any network, and planned by
//! `sources::oci`.
//!
//! Invariant: every value passed the OCI grammar (`reference`, `layout`)
//! before it is kept, so nothing from the command line reaches a URL or
//! the manifest unchecked.

pub mod layout;
pub mod reference;
pub mod registries;

use llmgw_shared::manifest::is_registry_host;

use crate::error::oci::OciError;
use layout::LayoutSource;
use reference::Reference;

/// An image asked for: in a registry, or in a local OCI layout.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum ImageSource {
    /// `[REGISTRY/]REPOSITORY[:TAG][@sha256:DIGEST]`.
    Registry(Reference),
    /// `NAME:TAG=oci-layout:PATH[:REF]`.
    Layout(LayoutSource),
}

impl ImageSource {
    /// Reads an `--image` value.
    pub fn parse(given: &str) -> Result<Self, OciError> {
        if LayoutSource::is_layout(given) {
            Ok(Self::Layout(LayoutSource::parse(given)?))
        } else {
            Ok(Self::Registry(Reference::parse(given)?))
        }
    }

    /// The repository and tag a node pulls it by, and the registry when
    /// there is one: two sources served under one name are refused.
    pub fn served_as(&self) -> (Option<&str>, &str, Option<&str>) {
        match self {
            Self::Registry(r) => (Some(&r.registry), &r.repository, r.tag.as_deref()),
            Self::Layout(l) => (None, &l.name, Some(&l.tag)),
        }
    }
}

impl std::fmt::Display for ImageSource {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Self::Registry(r) => r.fmt(f),
            Self::Layout(l) => l.fmt(f),
        }
    }
}

/// A chart asked for: in a registry, or packaged on disk.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum ChartSource {
    /// `oci://REGISTRY/REPOSITORY:VERSION`.
    Oci(Reference),
    /// `PATH.tgz`: a packaged chart (`helm package`'s output).
    Package(std::path::PathBuf),
}

impl ChartSource {
    /// Reads a `--chart` value: `oci://…`, or a file's path.
    pub fn parse(given: &str) -> Result<Self, OciError> {
        if is_package(given) {
            return Ok(Self::Package(given.into()));
        }
        Ok(Self::Oci(Reference::parse_chart(given)?))
    }
}

/// Checks a `--insecure-registry` value: `HOST[:PORT]`.
pub fn parse_insecure(given: &str) -> Result<String, OciError> {
    if is_registry_host(given) {
        Ok(given.to_string())
    } else {
        Err(OciError::InsecureFlag {
            given: given.to_string(),
        })
    }
}

/// Whether a `--chart` value names a file (no `scheme://`).
pub fn is_package(given: &str) -> bool {
    !given.contains("://")
}
