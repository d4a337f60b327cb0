//! Container images and Helm charts from OCI registries (format 3): one
//! module per idea — `reference` (Docker references, normalized as Docker
//! does), `credentials` (the auth file), `auth` (the token dance, and the
//! `Http`'s authorizer), `client` (asking for a manifest), `plan` (an
//! image into the plan), `layout` (an image from a local OCI layout),
//! `chart` (a chart's metadata), `package` (a packaged chart from disk, as
//! helm push would push it), `helm_meta` (Chart.yaml as Helm reads and
//! writes it), `go_text` (Go's text rules Helm's bytes follow), `error`.
//!
//! Invariant: as every source, this only plans: manifests are small and
//! fetched here (bounded, checked against their descriptor or the
//! registry's digest), every config and layer is a planned download the
//! run's verified fetcher checks against its descriptor's digest and size.
//!
//! Why not the `oci-client` crate: it brings its own HTTP stack, auth and
//! retry, while every byte of a run must go through this crate's `http`
//! (credential scoping, limits, redirects, compressed bodies refused) and
//! `fetch` (cache, resume, retries, progress). The registry protocol a
//! pull needs is three GETs and a token request, so it is written here on
//! top of them, with `oci-spec`'s types for the documents.

pub mod auth;
pub mod chart;
pub mod client;
pub mod credentials;
pub use crate::error::oci as error;
pub mod go_text;
pub mod helm_meta;
pub mod layout;
pub mod package;
pub mod plan;
pub mod reference;

use std::sync::Arc;

use llmgw_shared::manifest::is_registry_host;

use crate::cache::Cache;
use crate::error::CreateError;
use crate::http::Http;
use crate::plan::Plan;
use crate::progress::Progress;
use auth::RegistryAuth;
use credentials::Credentials;
use error::OciError;
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
        if package::is_package(given) {
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

/// The run's client with the registries' sessions attached, and the
/// sessions: credentials read from `auth_file` (`$REGISTRY_AUTH_FILE`) or
/// `~/.docker/config.json` under `home`.
pub fn with_sessions(
    http: Http,
    auth_file: Option<&std::path::Path>,
    home: Option<&std::path::Path>,
) -> Result<(Http, Arc<RegistryAuth>), CreateError> {
    let credentials = Credentials::load(auth_file, home)?;
    let auth = Arc::new(RegistryAuth::new(http.client().clone(), credentials));
    Ok((http.with_authorizer(auth.clone()), auth))
}

/// Plans every image and chart of the request into `plan`; `created` is
/// `SOURCE_DATE_EPOCH` (a packaged chart's `created` annotation).
#[allow(clippy::too_many_arguments)]
pub async fn plan_all(
    http: &Http,
    auth: &RegistryAuth,
    cache: &Cache,
    progress: &Progress,
    images: &[ImageSource],
    charts: &[ChartSource],
    insecure: &[String],
    arches: &[String],
    created: Option<u64>,
    plan: &mut Plan,
) -> Result<(), CreateError> {
    let ctx = plan::Ctx {
        http,
        auth,
        cache,
        insecure,
        arches,
    };
    for source in images {
        let image = match source {
            ImageSource::Registry(r) => {
                progress.line(&format!("image {r}: resolving"));
                plan::plan_image(&ctx, r, plan).await?.image
            }
            ImageSource::Layout(l) => {
                progress.line(&format!("image {l}: checking every blob"));
                layout::read::plan_layout(cache, l, arches, plan)?
            }
        };
        let bytes: u64 = image.all_blobs().map(|d| d.size).sum();
        progress.line(&format!(
            "image {source}: sha256:{}, {} manifests and {} blobs, {bytes} bytes; {} left out",
            image.digest,
            image.manifests.len(),
            image.blobs.len(),
            image.left_out.len()
        ));
        plan.images.push(image);
    }
    for c in charts {
        let chart = match c {
            ChartSource::Oci(r) => {
                progress.line(&format!("chart oci://{r}: resolving"));
                let planned = plan::plan_image(&ctx, r, plan).await?;
                chart::of_artifact(http, cache, progress, planned).await?
            }
            ChartSource::Package(path) => {
                let c = package::plan_package(cache, path, created, plan)?;
                progress.line(&format!(
                    "chart {}: {} {}, served as charts/{}:{}",
                    path.display(),
                    llmgw_shared::shown(&c.name),
                    llmgw_shared::shown(&c.version),
                    c.name,
                    c.artifact.tag.as_deref().unwrap_or_default()
                ));
                c
            }
        };
        plan.charts.push(chart);
    }
    Ok(())
}
