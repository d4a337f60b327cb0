//! What a request was, as the metrics and the access log name it.
//!
//! Invariant: every answer carries exactly one [`Route`], chosen by the
//! handler that wrote it (or by the entry handler for the probes and the
//! refusals before any route), and the label text of each route is written
//! here only. A JSON answer served again from the cache keeps the route
//! that built it.

use std::fmt;

use axum::response::{IntoResponse, Response};
use prometheus_client::encoding::{EncodeLabelValue, LabelValueEncoder};

/// A route's result: what it was and the response.
pub type Routed = (Route, Response);

/// A route's answer, or its refusal turned into the response its
/// protocol's clients read.
pub fn routed<E: IntoResponse>(route: Route, answer: Result<Response, E>) -> Routed {
    (route, answer.unwrap_or_else(IntoResponse::into_response))
}

/// Each kind of request the mirror tells apart in its metrics and log.
#[derive(Debug, Clone, Copy, Hash, PartialEq, Eq)]
pub enum Route {
    Healthz,
    Readyz,
    Metrics,
    /// A path refused before any route looked at it (too long).
    BadRequest,
    /// The bearer token is missing or wrong.
    Unauthorized,
    /// The store has not been read yet.
    NotReady,
    /// No route takes this path.
    NotFound,
    Index,
    AgentHarnesses,
    GithubGraphql,
    GithubReleases,
    GithubLatest,
    GithubRelease,
    GithubAsset,
    GithubDownload,
    HubInfo,
    HubRevision,
    HubTree,
    HubRefs,
    HubPathsInfo,
    HubResolve,
    HubManifests,
    /// A Xet token and this server's content address.
    HubXetToken,
    /// An organization's overview (`trustedKernelPublisher`), for the
    /// `kernels` client's publisher check.
    HubOrgOverview,
    PypiSimple,
    PypiMetadata,
    PypiFile,
    PypiLock,
    PypiRedirect,
    /// A `/pypi/` request no index route answers (404, 405, 406).
    Pypi,
    UvPythonDownloads,
    /// The front page, `GET /`.
    Front,
    /// A file list behind it, `GET /-/…`.
    FrontList,
    /// The miss log as a want-list, `GET /-/misses`.
    Misses,
    /// What a node sets to use this mirror, `GET /-/env`.
    Env,
    /// A held bundle's SBOM, `GET /-/bundles/<sha>/sbom.cdx.json`.
    BundleSbom,
    /// A held bundle's publisher evidence, `GET /-/bundles/<sha>/evidence/<name>`.
    BundleEvidence,
    /// A runtime extra, `GET /extras/<host>/<path>`.
    Extras,
    /// How to rebuild a file from xorbs, `GET /-/xet/v{1,2}/reconstructions/<hash>`.
    XetReconstruction,
    /// A xorb's bytes, `GET /-/xet/xorbs/<file>/<xorb>`.
    XetXorb,
    /// A `/-/xet/` request refused (no route, a method, a bad hash).
    Xet,
    OciBase,
    OciCatalog,
    OciTags,
    OciManifest,
    OciBlob,
    OciReferrers,
    /// A `/v2/` request refused (unknown name, bad grammar, a push).
    Oci,
    ChartsIndex,
    ChartsPackage,
    /// A `/charts/` request no chart answers.
    Charts,
}

impl Route {
    /// The last route declared: `Route::LAST as usize + 1` routes, numbered
    /// from 0 in their order.
    pub const LAST: Route = Route::Charts;

    /// Whether a 404 of this route is a miss worth carrying next time: a
    /// name in a family the mirror serves (a repo, revision or file; a
    /// release or asset; a Python project or file; an image name, tag or
    /// blob; a chart), not a path no route
    /// takes, a refusal, or a page.
    pub const fn counts_misses(self) -> bool {
        matches!(
            self,
            Route::GithubReleases
                | Route::GithubLatest
                | Route::GithubRelease
                | Route::GithubAsset
                | Route::GithubDownload
                | Route::HubInfo
                | Route::HubRevision
                | Route::HubTree
                | Route::HubRefs
                | Route::HubPathsInfo
                | Route::HubResolve
                | Route::HubManifests
                | Route::PypiSimple
                | Route::PypiMetadata
                | Route::PypiFile
                | Route::PypiLock
                | Route::Pypi
                | Route::UvPythonDownloads
                | Route::Extras
                | Route::OciTags
                | Route::OciManifest
                | Route::OciBlob
                | Route::OciReferrers
                | Route::Oci
                | Route::ChartsPackage
                | Route::Charts
        )
    }

    /// The label in `route="…"` and in the access log.
    pub const fn label(self) -> &'static str {
        match self {
            Route::Healthz => "healthz",
            Route::Readyz => "readyz",
            Route::Metrics => "metrics",
            Route::BadRequest => "bad_request",
            Route::Unauthorized => "unauthorized",
            Route::NotReady => "not_ready",
            Route::NotFound => "not_found",
            Route::Index => "index",
            Route::AgentHarnesses => "agent_harnesses",
            Route::GithubGraphql => "github_graphql",
            Route::GithubReleases => "github_releases",
            Route::GithubLatest => "github_latest",
            Route::GithubRelease => "github_release",
            Route::GithubAsset => "github_asset",
            Route::GithubDownload => "github_download",
            Route::HubInfo => "hub_info",
            Route::HubRevision => "hub_revision",
            Route::HubTree => "hub_tree",
            Route::HubRefs => "hub_refs",
            Route::HubPathsInfo => "hub_paths_info",
            Route::HubResolve => "hub_resolve",
            Route::HubManifests => "hub_manifests",
            Route::HubXetToken => "hub_xet_token",
            Route::HubOrgOverview => "hub_org_overview",
            Route::PypiSimple => "pypi_simple",
            Route::PypiMetadata => "pypi_metadata",
            Route::PypiFile => "pypi_file",
            Route::PypiLock => "pypi_lock",
            Route::PypiRedirect => "pypi_redirect",
            Route::Pypi => "pypi",
            Route::UvPythonDownloads => "uv_python_downloads",
            Route::Front => "front",
            Route::FrontList => "front_list",
            Route::Misses => "misses",
            Route::Env => "env",
            Route::BundleSbom => "bundle_sbom",
            Route::BundleEvidence => "bundle_evidence",
            Route::Extras => "extras",
            Route::XetReconstruction => "xet_reconstruction",
            Route::XetXorb => "xet_xorb",
            Route::Xet => "xet",
            Route::OciBase => "oci_base",
            Route::OciCatalog => "oci_catalog",
            Route::OciTags => "oci_tags",
            Route::OciManifest => "oci_manifest",
            Route::OciBlob => "oci_blob",
            Route::OciReferrers => "oci_referrers",
            Route::Oci => "oci",
            Route::ChartsIndex => "charts_index",
            Route::ChartsPackage => "charts_package",
            Route::Charts => "charts",
        }
    }
}

impl fmt::Display for Route {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.label())
    }
}

impl EncodeLabelValue for Route {
    fn encode(&self, encoder: &mut LabelValueEncoder) -> Result<(), fmt::Error> {
        fmt::Write::write_str(encoder, self.label())
    }
}
