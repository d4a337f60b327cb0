//! Container images and Helm charts from OCI registries (format 3), as
//! `spec::oci` reads them from the flags (Docker references, local
//! layouts, packaged charts): one module per idea — `credentials` (the
//! auth file), `auth` (the token dance, and the `Http`'s authorizer),
//! `client` (asking for a manifest), `walk` (an image's manifest tree, from
//! either source), `plan` (an image into the plan),
//! `layout` (an image read from a local OCI layout, every blob checked),
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
pub mod walk;

use std::sync::Arc;

use crate::cache::Cache;
use crate::error::CreateError;
use crate::http::Http;
use crate::plan::Plan;
use crate::progress::Events;
use crate::spec::oci::{ChartSource, ImageSource};
use auth::RegistryAuth;
use credentials::Credentials;

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
    progress: &Events,
    images: &[ImageSource],
    charts: &[ChartSource],
    registries: &crate::spec::oci::registries::Registries,
    arches: &[String],
    created: Option<u64>,
    plan: &mut Plan,
) -> Result<(), CreateError> {
    let ctx = plan::Ctx {
        http,
        auth,
        cache,
        registries,
        arches,
    };
    for source in images {
        let image = match source {
            ImageSource::Registry(r) => {
                progress.message(&format!("image {r}: resolving"));
                plan::plan_image(&ctx, r, plan).await?.image
            }
            ImageSource::Layout(l) => {
                progress.message(&format!("image {l}: checking every blob"));
                layout::plan_layout(cache, l, arches, plan)?
            }
        };
        let bytes: u64 = image.all_blobs().map(|d| d.size).sum();
        progress.message(&format!(
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
                progress.message(&format!("chart oci://{r}: resolving"));
                let planned = plan::plan_image(&ctx, r, plan).await?;
                chart::of_artifact(http, cache, progress, planned).await?
            }
            ChartSource::Package(path) => {
                let c = package::plan_package(cache, path, created, plan)?;
                progress.message(&format!(
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
