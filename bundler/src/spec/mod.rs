//! What to put in a bundle: from command-line flags and, optionally, a TOML
//! spec file (`--spec FILE`) that a site keeps in version control, merged
//! as layers ([`settings`]) and then checked into a [`CreateSpec`].
//!
//! Invariant: a [`CreateSpec`] is checked whole: every value has its
//! shape, every URL is http(s), every name is safe.
//!
//! Flags override the file, key by key; a list given on the command line
//! (`--engine`, `--model`, `--dataset`, `--arch`, `--trust`) replaces the
//! file's list rather than adding to it, so what runs is always what one of
//! the two says. Relative paths in the file are relative to the file's own
//! folder, so a spec means the same wherever it is run from.
//!
//! ```toml
//! out = "site.tar.zst"
//! arch = ["amd64", "arm64"]
//! llmgw = "v0.5.0"
//! llmgw_repo = "llmgw/llmgw"
//! llmgw_api = "https://gitea.example.org/api/v1"
//! trust = ["llmgw-release.pub"]
//! engines = ["llamacpp=b6123", "uv=0.12.20"]
//! models = ["acme/tiny@main", "org/m:*.Q4_K_M.gguf,config.json"]
//! datasets = []
//! jobs = 4
//! zstd_level = 3
//! allow_missing = false
//! python_envs = ["tools=transformers,huggingface_hub[cli]"]
//! pypi = "https://pypi.org/simple"
//! indexes = ["pytorch-cu129=https://proxy.example/whl/cu129"]
//! uv = "/usr/local/bin/uv"
//! manylinux = "2_28"
//! github_raw = "https://raw.githubusercontent.com"
//! volume_size = "fat32"   # or dvd5, dvd9, bd25, bd50, or bytes: 4G, 700M
//! chunk_size = "1G"
//! parity = 1
//! images = ["vllm/vllm-openai:v0.34.0", "ghcr.io/acme/app@sha256:…",
//!           "llmgw/llmgw:0.1.0=oci-layout:llmgw-image"]   # a local OCI layout
//! charts = ["oci://ghcr.io/acme/charts/app:1.2.0", "charts/site-0.3.0.tgz"]
//! insecure_registries = ["registry.site.example:5000"]
//! registries = ["docker.io=https://cache.site.example"]   # another address, same digests
//! engine_images = ["vllm=0.34.0", "sglang=0.5.14:cu129"]
//! driver = "575.57.08"             # the site's newest NVIDIA driver
//! python_interpreter = "carried"   # or "none": the nodes bring their own CPython
//! overrides = ["vllm=flashinfer-python==0.7.4"]
//! constraints = ["tools=numpy<2.3"]
//! python = "3.12"                  # the CPython of python_envs
//! ```

mod check;
pub mod dsl_pins;
pub mod engine_images;
pub mod extras;
mod kernels;
pub mod oci;
mod parse;
pub mod python;
mod settings;
#[cfg(test)]
mod tests;

use std::path::PathBuf;

use llmgw_shared::manifest::RepoKind;

pub use parse::{parse_engine, parse_repo};
pub use settings::{CreateSettings, SpecEnv};

use crate::error::CreateError;
use parse::{default_cache, url_flag};

pub const DEFAULT_GITHUB_API: &str = "https://api.github.com";
/// Where uv's `download-metadata.json` is read from, at uv's tag.
pub const DEFAULT_GITHUB_RAW: &str = "https://raw.githubusercontent.com";
pub const DEFAULT_HF_ENDPOINT: &str = "https://huggingface.co";
pub const DEFAULT_LLMGW_REPO: &str = "llmgw/llmgw";
pub const DEFAULT_JOBS: usize = 4;
/// More parallel downloads than this only make each one slower.
pub const MAX_JOBS: usize = 64;

/// llmgw's own release, and the keys its signature must verify with.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct LlmgwSpec {
    pub version: String,
    pub repo: String,
    pub api: String,
    pub trust: Vec<PathBuf>,
}

/// An engine of the recipe table at one version.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct EngineSpec {
    pub name: String,
    pub version: String,
    /// `vllm=0.33.0:cu13`: only this variant's environment (Python engines
    /// only); `None` is every environment the table lists for the version.
    pub variant: Option<String>,
}

/// A Hugging Face repository, a revision and the globs choosing its files.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct RepoSpec {
    pub kind: RepoKind,
    pub id: String,
    /// For a kernel asked without one, empty: its newest `vN` branch,
    /// found when it is planned.
    pub revision: String,
    /// Empty means every file.
    pub patterns: Vec<String>,
    /// A kernel's build folders named by hand (`:VARIANT,…`); empty: the
    /// folders `nodes` load.
    pub variants: Vec<String>,
    /// The nodes a kernel's folders are chosen for (a want-list's misses);
    /// empty: those the bundle's own Python environments describe.
    pub nodes: Vec<llmgw_shared::kernels::Target>,
}

/// Everything one run of `bundle create` is to do, checked.
#[derive(Debug, Clone)]
pub struct CreateSpec {
    /// The bundle to write: a `.tar`, a `.tar.zst` or a directory (or the
    /// name volumes are numbered after).
    pub out: PathBuf,
    /// Node architectures to carry builds for, checked against the recipe
    /// table.
    pub arches: Vec<String>,
    /// llmgw's own release to carry, with the keys its `SHA256SUMS` must
    /// verify against.
    pub llmgw: Option<LlmgwSpec>,
    /// Engine releases to carry, each an engine of the recipe table at a
    /// version.
    pub engines: Vec<EngineSpec>,
    /// Hub models and datasets to carry, each at a revision.
    pub repos: Vec<RepoSpec>,
    /// The GitHub-style API engine releases are asked of, without a
    /// trailing `/`.
    pub github_api: String,
    /// The Hugging Face Hub, without a trailing `/`.
    pub hf_endpoint: String,
    /// The download cache folder.
    pub cache: PathBuf,
    /// Whether the cache was asked for (`--cache` or the spec's `cache`):
    /// then a `.tar` or `.tar.zst` run keeps every blob it downloads there
    /// too, at the cost of writing it twice; else only what costs nothing.
    pub keep_in_cache: bool,
    /// Downloads at once (at least 1).
    pub jobs: usize,
    /// The zstd level of a `.tar.zst`.
    pub zstd_level: i32,
    /// An asset missing from its release is recorded as a gap in the
    /// manifest instead of failing the run.
    pub allow_missing: bool,
    /// Signing and the series: key, channel, sequence, expiry.
    pub series: crate::series::SeriesSpec,
    /// What the site holds or lacks: a delta or a repair bundle.
    pub delta: crate::delta::DeltaSpec,
    /// Site environments (`--python-env`).
    pub python_envs: Vec<python::SiteEnv>,
    /// The simple API's base (`--pypi`).
    pub pypi: String,
    /// `--index NAME=URL`.
    pub indexes: Vec<(String, String)>,
    /// `--uv PATH`.
    pub uv: Option<PathBuf>,
    /// `--manylinux`: the manylinux tag every environment is resolved for
    /// (`2_31`); `None` takes each environment's default (the recipe
    /// table's figure for an engine version, else 2_28).
    pub manylinux: Option<String>,
    /// `--python-interpreter`: whether the nodes' CPython is carried.
    pub python_interpreter: python::InterpreterChoice,
    /// `--override ENV=REQ`.
    pub overrides: Vec<python::EnvEdit>,
    /// `--constraint ENV=REQ`.
    pub constraints: Vec<python::EnvEdit>,
    /// `--python`: the CPython of the site environments; `None` is 3.12.
    pub site_python: Option<String>,
    /// GitHub's raw file server (`--github-raw`), for uv's interpreter list.
    pub github_raw: String,
    /// Plan and report only: nothing large is downloaded, no bundle written.
    pub dry_run: bool,
    /// `--volume-size`: volumes instead of one bundle.
    pub volumes: Option<crate::volumes::VolumeSpec>,
    /// `--image`: container images, from registries (normalized as Docker
    /// does) or local OCI layouts.
    pub images: Vec<oci::ImageSource>,
    /// `--chart`: Helm charts.
    pub charts: Vec<oci::ChartSource>,
    /// `--insecure-registry` and `--registry`: where each registry is asked.
    pub registries: oci::registries::Registries,
    /// `--engine-image`: the recipe table's images chosen (their references
    /// are in `images` too), and the arches some have none for.
    pub engine_images: engine_images::EngineImages,
    /// `--driver`: the site's newest NVIDIA driver.
    pub driver: Option<String>,
    /// `$REGISTRY_AUTH_FILE`, when set.
    pub registry_auth_file: Option<PathBuf>,
    /// `$HOME`, for `~/.docker/config.json`.
    pub home: Option<PathBuf>,
    /// `--want`: a mirror's misses, read and sorted.
    pub wants: Option<crate::want::Wants>,
    /// `--no-extras`, `--extras-base`: the engines' runtime extras.
    pub extras: extras::ExtrasChoice,
    /// `--identity`, `--trusted-root`, `--allow-unsigned-upstream`: who
    /// may sign what, and what a missing signature does.
    pub signatures: crate::attest::SignaturePolicy,
}

impl CreateSpec {
    /// Merges the flags over the spec file (when one is given) over the
    /// defaults, and checks every value.
    pub fn resolve(flags: CreateSettings, env: &SpecEnv) -> Result<Self, CreateError> {
        // The one place the layers meet: flags over the file; the
        // environment and the defaults below, key by key.
        let file = match &flags.spec {
            Some(path) => CreateSettings::from_file(path)?,
            None => CreateSettings::default(),
        };
        let s = flags.combine(file);
        let signatures = s.signature_policy()?;

        let out = check::out(s.out.clone())?;
        let arches = check::arches(s.arch.clone())?;
        let oci = check::oci_request(&s, &arches)?;
        let github_api = url_flag(
            "--github-api",
            s.github_api
                .unwrap_or_else(|| DEFAULT_GITHUB_API.to_string()),
        )?;
        let hf_endpoint = url_flag(
            "--hf-endpoint",
            s.hf_endpoint
                .or(env.hf_endpoint.clone())
                .unwrap_or_else(|| DEFAULT_HF_ENDPOINT.to_string()),
        )?;
        let llmgw = check::llmgw(s.llmgw, s.llmgw_repo, s.llmgw_api, s.trust, &github_api)?;
        let engines = check::engines(s.engines)?;
        let mut repos = check::repos(s.models, s.datasets)?;
        kernels::add(&s.kernels, s.kernels_lock.as_deref(), &mut repos)?;
        let python_envs = check::site_envs(&s.python_envs)?;
        let pypi = url_flag(
            "--pypi",
            s.pypi.unwrap_or_else(|| python::DEFAULT_PYPI.to_string()),
        )?;
        let indexes = check::indexes(s.indexes)?;
        let github_raw = url_flag(
            "--github-raw",
            s.github_raw
                .unwrap_or_else(|| DEFAULT_GITHUB_RAW.to_string()),
        )?;
        let manylinux = check::manylinux(s.manylinux)?;
        let python = check::python_choices(&s.python_interpreter, &s.overrides, &s.constraints)?;
        let site_python = check::site_python(s.python.as_deref(), &python_envs)?;
        let wants = check::wants(s.want.as_deref())?;
        check::something_asked(&[
            llmgw.is_none(),
            wants.is_none(),
            engines.is_empty(),
            repos.is_empty(),
            python_envs.is_empty(),
            oci.images.is_empty(),
            oci.charts.is_empty(),
        ])?;
        let keep_in_cache = s.cache.is_some();
        let cache = s.cache.map_or_else(|| default_cache(env), Ok)?;
        let zstd_level = check::zstd_level(s.zstd_level)?;
        let volumes = check::volumes(&out, s.volume_size, s.chunk_size, s.parity)?;
        let jobs = check::jobs(s.jobs)?;
        Ok(Self {
            out,
            arches,
            llmgw,
            engines,
            repos,
            github_api,
            hf_endpoint,
            cache,
            keep_in_cache,
            jobs,
            zstd_level,
            allow_missing: s.allow_missing,
            series: s.series,
            delta: s.delta,
            python_envs,
            pypi,
            indexes,
            uv: s.uv,
            manylinux,
            python_interpreter: python.0,
            overrides: python.1,
            constraints: python.2,
            site_python,
            github_raw,
            dry_run: s.dry_run,
            volumes,
            images: oci.images,
            charts: oci.charts,
            registries: oci.registries,
            engine_images: oci.engine_images,
            driver: oci.driver,
            registry_auth_file: env.registry_auth_file.clone(),
            home: env.home.clone(),
            wants,
            extras: extras::ExtrasChoice {
                dsl_pins: dsl_pins::PinTable::read(s.dsl_pins.as_deref())?,
                ..extras::ExtrasChoice::parse(s.no_extras, &s.extras_bases)?
            },
            signatures,
        })
    }
}
