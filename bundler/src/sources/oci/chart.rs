//! A Helm chart pulled from a registry: the OCI artifact `helm push` made
//! (config `application/vnd.cncf.helm.config.v1+json`, the packaged chart
//! as its `…chart.content.v1.tar+gzip` layer), planned as any image, and
//! its name, version and appVersion read from the config; the config and
//! the packaged chart fetched now through the verified fetcher, read
//! bounded.
//!
//! Invariant: the chart record names what its own config says, and its
//! version is the tag it was asked by (Helm's `+` written `_`); its
//! packaged chart passes the check a `.tgz` given as a file passes
//! ([`package::read_package`]: no entry outside the chart's folder,
//! bounded, Chart.yaml as Helm reads it), and its Chart.yaml names the
//! chart and version the config names.

use llmgw_shared::manifest::{HELM_CHART_CONTENT, HELM_CONFIG, HelmChart, OciDescriptor};
use serde::Deserialize;

use super::client::Repo;
use super::error::OciError;
use super::package::{self, MAX_PACKAGE_BYTES};
use super::plan::PlannedImage;
use crate::cache::{Cache, Expect};
use crate::error::CreateError;
use crate::fetch::{self, Download};
use crate::http::Http;
use crate::progress::Events;

/// The largest chart config read: Chart.yaml as JSON, kilobytes.
const MAX_CHART_CONFIG: u64 = 1 << 20;

#[derive(Deserialize)]
struct ChartConfig {
    name: String,
    version: String,
    #[serde(rename = "appVersion", default)]
    app_version: Option<String>,
}

fn bad(shown: &str, detail: String) -> CreateError {
    OciError::ChartArtifact {
        chart: shown.to_string(),
        detail,
    }
    .into()
}

/// The chart an artifact holds: see the module docs.
pub async fn of_artifact(
    http: &Http,
    cache: &Cache,
    progress: &Events,
    planned: PlannedImage,
) -> Result<HelmChart, CreateError> {
    let PlannedImage { image, repo, .. } = planned;
    let shown = repo.shown.clone();
    let config = image
        .blobs
        .iter()
        .find(|d| d.media_type == HELM_CONFIG)
        .ok_or_else(|| {
            bad(
                &shown,
                format!("it has no {HELM_CONFIG} config: not a Helm chart"),
            )
        })?;
    let package = image
        .blobs
        .iter()
        .find(|d| d.media_type == HELM_CHART_CONTENT)
        .ok_or_else(|| {
            bad(
                &shown,
                format!("it has no {HELM_CHART_CONTENT} layer: not a Helm chart"),
            )
        })?;
    if config.size > MAX_CHART_CONFIG {
        return Err(bad(
            &shown,
            format!(
                "its config is {} bytes; at most {MAX_CHART_CONFIG} are read",
                config.size
            ),
        ));
    }
    let d = Download {
        label: format!("{shown} chart config"),
        url: repo.blob_url(&config.sha256),
        size: config.size,
        expect: Expect::Sha256(config.sha256.clone()),
        denied_hint: None,
    };
    let fetched = fetch::fetch_one(http, cache, &d, progress).await?;
    let bytes = std::fs::read(&fetched.path).map_err(|e| CreateError::io(&fetched.path, e))?;
    let c: ChartConfig = serde_json::from_slice(&bytes).map_err(|e| {
        bad(
            &shown,
            format!("its config is not Chart.yaml as JSON ({e})"),
        )
    })?;
    let tag = c.version.replace('+', "_");
    if image.tag.as_deref().is_some_and(|t| t != tag) {
        return Err(bad(
            &shown,
            format!(
                "its config says version {:?}, but it was asked for by tag {:?}",
                c.version,
                image.tag.as_deref().unwrap_or_default()
            ),
        ));
    }
    check_package(http, cache, progress, &repo, package, &c).await?;
    Ok(HelmChart {
        name: c.name,
        version: c.version,
        app_version: c.app_version.filter(|a| !a.is_empty()),
        package: package.sha256.clone(),
        artifact: image,
    })
}

/// The packaged chart (the artifact's layer `package`) fetched and checked
/// as a `.tgz` given as a file is, its Chart.yaml naming what the config
/// `c` names.
async fn check_package(
    http: &Http,
    cache: &Cache,
    progress: &Events,
    repo: &Repo,
    package: &OciDescriptor,
    c: &ChartConfig,
) -> Result<(), CreateError> {
    let shown = &repo.shown;
    if package.size > MAX_PACKAGE_BYTES {
        return Err(bad(
            shown,
            format!(
                "its packaged chart is {} bytes; at most {MAX_PACKAGE_BYTES} are read, as Helm reads",
                package.size
            ),
        ));
    }
    let d = Download {
        label: format!("{shown} packaged chart"),
        url: repo.blob_url(&package.sha256),
        size: package.size,
        expect: Expect::Sha256(package.sha256.clone()),
        denied_hint: None,
    };
    let fetched = fetch::fetch_one(http, cache, &d, progress).await?;
    // The fetcher checked the size: at most MAX_PACKAGE_BYTES are read.
    let bytes = std::fs::read(&fetched.path).map_err(|e| CreateError::io(&fetched.path, e))?;
    let meta = package::read_package(&bytes).map_err(|d| {
        bad(
            shown,
            format!("its packaged chart sha256:{}: {d}", package.sha256),
        )
    })?;
    if (meta.name.as_str(), meta.version.as_str()) != (c.name.as_str(), c.version.as_str()) {
        return Err(bad(
            shown,
            format!(
                "its config says {} {}, but its packaged chart's Chart.yaml says {} {}",
                llmgw_shared::shown(&c.name),
                llmgw_shared::shown(&c.version),
                llmgw_shared::shown(&meta.name),
                llmgw_shared::shown(&meta.version)
            ),
        ));
    }
    Ok(())
}
