//! The checks of a manifest's format 3 parts, `images` and `charts`, run by
//! [`super::Manifest::validate`]: every name by the distribution spec's
//! grammar, every media type a plain token, the top digest among the
//! image's manifests, manifests no larger than a registry allows, one size
//! per sha256 across the whole manifest, and each chart's package among its
//! artifact's blobs.
//!
//! Invariant: what passes names nothing that could become a path and
//! claims nothing that contradicts another claim in the same manifest.
//! Whether the descriptors are *true* (the tree is closed) is read from the
//! carried manifests' bytes at import ([`super::oci_tree::check_tree`]).

use std::collections::BTreeSet;

use super::ManifestError;
use super::claims::Claims;
use super::oci::{HelmChart, OciDescriptor, OciImage};
use super::oci_names::{
    is_media_type, is_platform, is_registry_host, is_repository, is_tag, reserved_prefix,
};
use super::oci_tree::{MAX_OCI_MANIFEST_BYTES, is_manifest};
use crate::names;

/// The media type of a Helm chart's package layer.
pub const HELM_CHART_CONTENT: &str = "application/vnd.cncf.helm.chart.content.v1.tar+gzip";
/// The media type of a Helm chart's config.
pub const HELM_CONFIG: &str = "application/vnd.cncf.helm.config.v1+json";

fn bad(what: String, expected: &'static str, found: &str) -> ManifestError {
    ManifestError::BadValue {
        what,
        expected,
        found: found.to_string(),
    }
}

/// How an image is named in messages: `registry/repository:tag@sha256:…`.
pub fn image_name(image: &OciImage) -> String {
    let mut s = String::new();
    if let Some(r) = &image.registry {
        s.push_str(r);
        s.push('/');
    }
    s.push_str(&image.repository);
    if let Some(t) = &image.tag {
        s.push(':');
        s.push_str(t);
    }
    s.push_str("@sha256:");
    s.push_str(&image.digest);
    s
}

/// Checks every image and chart, claiming their blobs' sizes.
pub(super) fn validate_oci(
    images: &[OciImage],
    charts: &[HelmChart],
    claims: &mut Claims,
) -> Result<(), ManifestError> {
    let mut seen = BTreeSet::new();
    for image in images {
        validate_image(image, false, claims)?;
        let key = (
            &image.registry,
            &image.repository,
            &image.tag,
            &image.digest,
        );
        if !seen.insert(key) {
            return Err(ManifestError::Inconsistent(format!(
                "image {} is listed twice",
                image_name(image)
            )));
        }
    }
    let mut seen = BTreeSet::new();
    for chart in charts {
        validate_chart(chart, claims)?;
        if !seen.insert((&chart.name, &chart.version)) {
            return Err(ManifestError::Inconsistent(format!(
                "chart {} {} is listed twice",
                chart.name, chart.version
            )));
        }
    }
    Ok(())
}

fn validate_image(image: &OciImage, chart: bool, claims: &mut Claims) -> Result<(), ManifestError> {
    if let Some(r) = &image.registry
        && !is_registry_host(r)
    {
        return Err(bad(
            format!("registry of image {}", image.repository),
            "a registry host such as docker.io or 127.0.0.1:5000",
            r,
        ));
    }
    if !is_repository(&image.repository) {
        return Err(bad(
            "image repository".into(),
            "a repository path such as library/ubuntu (lower-case, distribution spec grammar)",
            &image.repository,
        ));
    }
    if let Some(prefix) = reserved_prefix(&image.repository, chart) {
        return Err(ManifestError::Reserved {
            what: if chart { "chart" } else { "image" },
            name: image_name(image),
            prefix,
        });
    }
    if let Some(t) = &image.tag
        && !is_tag(t)
    {
        return Err(bad(
            format!("tag of image {}", image.repository),
            "a tag such as v1.2.3 ([A-Za-z0-9_][A-Za-z0-9._-]{0,127})",
            t,
        ));
    }
    let who = image_name(image);
    match image.manifests.iter().find(|d| d.sha256 == image.digest) {
        Some(top) if is_manifest(&top.media_type) => {}
        Some(top) => {
            return Err(ManifestError::Inconsistent(format!(
                "image {who}: its top digest is a {}, not a manifest or an index",
                top.media_type
            )));
        }
        None => {
            return Err(ManifestError::Inconsistent(format!(
                "image {who}: its top digest is not among its manifests"
            )));
        }
    }
    for d in &image.manifests {
        check_descriptor(&who, d)?;
        if !is_manifest(&d.media_type) {
            return Err(ManifestError::Inconsistent(format!(
                "image {who}: {} is listed among manifests but is a {}",
                d.sha256, d.media_type
            )));
        }
        if d.size > MAX_OCI_MANIFEST_BYTES {
            return Err(ManifestError::Inconsistent(format!(
                "image {who}: manifest {} is {} bytes; a manifest may be at most {MAX_OCI_MANIFEST_BYTES}",
                d.sha256, d.size
            )));
        }
    }
    for d in image.blobs.iter().chain(&image.left_out) {
        check_descriptor(&who, d)?;
    }
    for d in image.all_blobs() {
        claims.claim(&d.sha256, d.size, format!("image {who} blob {}", d.sha256))?;
    }
    Ok(())
}

fn check_descriptor(who: &str, d: &OciDescriptor) -> Result<(), ManifestError> {
    if !is_media_type(&d.media_type) {
        return Err(bad(
            format!("media type of {} in image {who}", d.sha256),
            "a media type such as application/vnd.oci.image.layer.v1.tar+gzip",
            &d.media_type,
        ));
    }
    if let Some(p) = &d.platform
        && !is_platform(p)
    {
        return Err(bad(
            format!("platform of {} in image {who}", d.sha256),
            "os/arch[/variant], such as linux/arm64/v8",
            p,
        ));
    }
    Ok(())
}

fn validate_chart(chart: &HelmChart, claims: &mut Claims) -> Result<(), ManifestError> {
    names::check_file_name("chart name", &chart.name)?;
    let chart_char = |c: char| c.is_ascii_alphanumeric() || "._-".contains(c);
    if !chart.name.chars().all(chart_char) {
        return Err(bad(
            "chart name".into(),
            "letters, digits, '.', '_' and '-'",
            &chart.name,
        ));
    }
    let version_char = |c: char| c.is_ascii_alphanumeric() || ".+-".contains(c);
    if chart.version.is_empty() || !chart.version.chars().all(version_char) {
        return Err(bad(
            format!("version of chart {}", chart.name),
            "a SemVer 2 version such as 1.2.3",
            &chart.version,
        ));
    }
    if let Some(app) = &chart.app_version
        && (app.chars().count() > 256 || app.chars().any(char::is_control))
    {
        return Err(bad(
            format!("appVersion of chart {}", chart.name),
            "a short line of text",
            app,
        ));
    }
    validate_image(&chart.artifact, true, claims)?;
    // Helm tags a chart by its version, `+` written as `_`.
    let tag = chart.version.replace('+', "_");
    if chart.artifact.tag.as_deref().is_some_and(|t| t != tag) {
        return Err(ManifestError::Inconsistent(format!(
            "chart {} {}: its artifact is tagged {:?}, not {tag}",
            chart.name, chart.version, chart.artifact.tag
        )));
    }
    let package = chart
        .artifact
        .blobs
        .iter()
        .find(|d| d.sha256 == chart.package);
    match package {
        Some(d) if d.media_type == HELM_CHART_CONTENT => Ok(()),
        _ => Err(ManifestError::Inconsistent(format!(
            "chart {} {}: its package {} is not a {HELM_CHART_CONTENT} blob of its artifact",
            chart.name, chart.version, chart.package
        ))),
    }
}
