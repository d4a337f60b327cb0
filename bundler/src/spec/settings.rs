//! The settings of `bundle create` as layers: the command line's, a spec
//! file's, the environment's, the defaults. [`CreateSettings`] is one
//! layer, the same type for the command line and the file;
//! [`CreateSettings::combine`] lays one over another, key by key, in this
//! one place, and [`super::CreateSpec::resolve`] fills in the defaults and
//! checks every value.
//!
//! Invariant: a key given in a higher layer wins whole: a list on the
//! command line replaces the file's list, it is never merged with it.

use std::path::{Path, PathBuf};

use serde::Deserialize;

use crate::error::{CreateError, TomlSyntax};

/// One layer of `bundle create`'s settings; `None`, an empty list or
/// `false` means "not given here". As a spec file (TOML) it has the same
/// keys as the flags, lists plural; the last four keys are flags only.
#[derive(Debug, Default, Clone, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct CreateSettings {
    /// `--out`: the bundle to write (`.tar`, `.tar.zst`, or a directory).
    pub out: Option<PathBuf>,
    /// `--arch`: node architectures. Each may hold a comma-separated list.
    pub arch: Vec<String>,
    /// `--llmgw VERSION`: llmgw's own release to carry (needs `trust`).
    pub llmgw: Option<String>,
    /// `--llmgw-repo OWNER/NAME`: where llmgw's releases are published.
    pub llmgw_repo: Option<String>,
    /// `--llmgw-api URL`: the GitHub-compatible API of that server.
    pub llmgw_api: Option<String>,
    /// `--trust KEY.pub`: keys llmgw's `SHA256SUMS` must be signed by.
    pub trust: Vec<PathBuf>,
    /// `--engine NAME=VERSION`: engines of the recipe table.
    pub engines: Vec<String>,
    /// `--model ORG/NAME[@REV][:PATTERNS]`: Hub models.
    pub models: Vec<String>,
    /// `--dataset`: Hub datasets, as `models`.
    pub datasets: Vec<String>,
    /// `--kernel ORG/NAME[@vN|@REV][:VARIANT,…]`: Hub kernel repositories.
    pub kernels: Vec<String>,
    /// `--kernels-lock PATH`: a `kernels.lock` (`kernels lock`): each kernel
    /// it pins, at its commit.
    pub kernels_lock: Option<PathBuf>,
    /// `--github-api URL`: where engine releases are asked for.
    pub github_api: Option<String>,
    /// `--hf-endpoint URL`: the Hub (`HF_ENDPOINT` is the layer below).
    pub hf_endpoint: Option<String>,
    /// `--cache DIR`: the download cache; giving it also keeps a tar run's
    /// blobs there.
    pub cache: Option<PathBuf>,
    /// `--jobs N`: downloads at once.
    pub jobs: Option<usize>,
    /// `--zstd-level N`: 1 to 19, for a `.tar.zst`.
    pub zstd_level: Option<i32>,
    /// `--allow-missing`: a missing asset becomes a gap, not a failure.
    pub allow_missing: bool,
    /// `NAME=REQ[,REQ…]`, each a site's own Python environment.
    pub python_envs: Vec<String>,
    /// `--pypi URL`: the simple API packages come from.
    pub pypi: Option<String>,
    /// `NAME=URL`, each overriding an index the recipe names.
    pub indexes: Vec<String>,
    /// `--uv PATH`: the uv that resolves environments.
    pub uv: Option<PathBuf>,
    /// `--manylinux 2_28`: the glibc tag nodes' wheels must fit.
    pub manylinux: Option<String>,
    /// `--github-raw URL`: GitHub's raw file server, for uv's interpreter
    /// list.
    pub github_raw: Option<String>,
    /// `--volume-size`, `--chunk-size`, `--parity`: write volumes.
    pub volume_size: Option<String>,
    /// `--chunk-size`: blobs larger than this are cut into chunks.
    pub chunk_size: Option<String>,
    /// `--parity K`: K parity volumes, so any K lost volumes are rebuilt.
    pub parity: Option<u32>,
    /// `--image REF` or `NAME:TAG=oci-layout:PATH[:REF]`: container images
    /// (Docker references, or local OCI layouts).
    pub images: Vec<String>,
    /// `--chart oci://REGISTRY/REPO:VERSION` or `--chart PATH.tgz`: Helm
    /// charts (a packaged chart's path in a spec file is relative to it).
    pub charts: Vec<String>,
    /// `--insecure-registry HOST:PORT`: registries asked over plain HTTP.
    pub insecure_registries: Vec<String>,
    /// `--registry HOST=URL`: a registry asked at another address.
    pub registries: Vec<String>,
    /// `--engine-image ENGINE=VERSION[:VARIANT]`: the recipe table's images
    /// of an engine version.
    pub engine_images: Vec<String>,
    /// `--driver D`: the site's newest NVIDIA driver, which chooses among
    /// the engine images.
    pub driver: Option<String>,
    /// `--python-interpreter carried|none`: whether the nodes' CPython is
    /// carried or brought by the nodes.
    pub python_interpreter: Option<String>,
    /// `--override ENV=REQ`: requirements laid over the upstream pins.
    pub overrides: Vec<String>,
    /// `--constraint ENV=REQ`: bounds on what the resolver may pick.
    pub constraints: Vec<String>,
    /// `--python 3.11`: the CPython of the `--python-env` environments.
    pub python: Option<String>,
    /// `--no-extras`: leave the engines' runtime extras out (gaps).
    pub no_extras: bool,
    /// `--extras-base HOST=URL`: fetch a host's runtime extras from URL.
    pub extras_bases: Vec<String>,
    /// `--identity github:OWNER/REPO=ISSUER,IDENTITY`: who may sign a
    /// release repository's assets, besides the recipe table's signers;
    /// `pypi:PROJECT=ISSUER,IDENTITY`: who may attest a PyPI project's files.
    pub identities: Vec<String>,
    /// `--trusted-root FILE`: the Sigstore trusted root to verify
    /// publishers' signatures against (else the one the binary embeds).
    pub trusted_root: Option<PathBuf>,
    /// `--allow-unsigned-upstream`: carry an artifact whose policy expects
    /// a signature the publisher did not give (recorded).
    pub allow_unsigned_upstream: bool,
    /// `--spec FILE`: the file layer under this one (flag only).
    #[serde(skip)]
    pub spec: Option<PathBuf>,
    /// `--sign-key`, `--channel`, `--sequence`, `--expires` (flags only).
    #[serde(skip)]
    pub series: crate::series::SeriesSpec,
    /// `--have`, `--base`, `--need` (flags only).
    #[serde(skip)]
    pub delta: crate::delta::DeltaSpec,
    /// Plan, check and report everything, download nothing large, write
    /// no bundle (flag only).
    #[serde(skip)]
    pub dry_run: bool,
    /// `--want want.json`: a mirror's misses to carry (flag only).
    #[serde(skip)]
    pub want: Option<PathBuf>,
    /// `--flashinfer-dsl-pins FILE` (hidden, for tests): pins of FlashInfer
    /// releases the recipe table lacks (flag only; `spec::dsl_pins`).
    #[serde(skip)]
    pub dsl_pins: Option<PathBuf>,
}

impl CreateSettings {
    /// This layer over `lower`: each key from this layer when given here,
    /// else from `lower`.
    pub fn combine(self, lower: Self) -> Self {
        fn list<T>(high: Vec<T>, low: Vec<T>) -> Vec<T> {
            if high.is_empty() { low } else { high }
        }
        Self {
            out: self.out.or(lower.out),
            arch: list(self.arch, lower.arch),
            llmgw: self.llmgw.or(lower.llmgw),
            llmgw_repo: self.llmgw_repo.or(lower.llmgw_repo),
            llmgw_api: self.llmgw_api.or(lower.llmgw_api),
            trust: list(self.trust, lower.trust),
            engines: list(self.engines, lower.engines),
            models: list(self.models, lower.models),
            datasets: list(self.datasets, lower.datasets),
            kernels: list(self.kernels, lower.kernels),
            kernels_lock: self.kernels_lock.or(lower.kernels_lock),
            github_api: self.github_api.or(lower.github_api),
            hf_endpoint: self.hf_endpoint.or(lower.hf_endpoint),
            cache: self.cache.or(lower.cache),
            jobs: self.jobs.or(lower.jobs),
            zstd_level: self.zstd_level.or(lower.zstd_level),
            allow_missing: self.allow_missing || lower.allow_missing,
            python_envs: list(self.python_envs, lower.python_envs),
            pypi: self.pypi.or(lower.pypi),
            indexes: list(self.indexes, lower.indexes),
            uv: self.uv.or(lower.uv),
            manylinux: self.manylinux.or(lower.manylinux),
            github_raw: self.github_raw.or(lower.github_raw),
            volume_size: self.volume_size.or(lower.volume_size),
            chunk_size: self.chunk_size.or(lower.chunk_size),
            parity: self.parity.or(lower.parity),
            images: list(self.images, lower.images),
            charts: list(self.charts, lower.charts),
            insecure_registries: list(self.insecure_registries, lower.insecure_registries),
            registries: list(self.registries, lower.registries),
            engine_images: list(self.engine_images, lower.engine_images),
            driver: self.driver.or(lower.driver),
            python_interpreter: self.python_interpreter.or(lower.python_interpreter),
            overrides: list(self.overrides, lower.overrides),
            constraints: list(self.constraints, lower.constraints),
            python: self.python.or(lower.python),
            no_extras: self.no_extras || lower.no_extras,
            extras_bases: list(self.extras_bases, lower.extras_bases),
            identities: list(self.identities, lower.identities),
            trusted_root: self.trusted_root.or(lower.trusted_root),
            allow_unsigned_upstream: self.allow_unsigned_upstream || lower.allow_unsigned_upstream,
            spec: self.spec.or(lower.spec),
            series: self.series,
            delta: self.delta,
            dry_run: self.dry_run || lower.dry_run,
            want: self.want.or(lower.want),
            dsl_pins: self.dsl_pins.or(lower.dsl_pins),
        }
    }

    /// The signature policy these settings give (`--identity`,
    /// `--trusted-root`, `--allow-unsigned-upstream`).
    pub fn signature_policy(&self) -> Result<crate::attest::SignaturePolicy, CreateError> {
        crate::attest::SignaturePolicy::from_flags(
            &self.identities,
            self.trusted_root.as_deref(),
            self.allow_unsigned_upstream,
        )
    }

    /// The layer a spec file gives, its relative paths made relative to
    /// the file's own folder (so a spec means the same wherever it is run
    /// from).
    pub fn from_file(path: &Path) -> Result<Self, CreateError> {
        let text = std::fs::read_to_string(path).map_err(|e| CreateError::io(path, e))?;
        let file: Self = toml::from_str(&text).map_err(|e| CreateError::SpecFile {
            path: path.to_path_buf(),
            at: e.span().and_then(|s| line_column(&text, s.start)),
            error: TomlSyntax(Box::new(e)),
        })?;
        let base = path.parent().map(Path::to_path_buf).unwrap_or_default();
        let rel = |p: PathBuf| if p.is_absolute() { p } else { base.join(p) };
        Ok(Self {
            out: file.out.map(rel),
            trust: file.trust.into_iter().map(rel).collect(),
            cache: file.cache.map(rel),
            uv: file.uv.map(rel),
            trusted_root: file.trusted_root.map(rel),
            kernels_lock: file.kernels_lock.map(rel),
            images: file
                .images
                .iter()
                .map(|i| super::oci::layout::LayoutSource::rebase(i, &base))
                .collect(),
            // A packaged chart's path (not `oci://…`) is a path too.
            charts: file
                .charts
                .into_iter()
                .map(|c| {
                    if super::oci::is_package(&c) {
                        rel(c.into()).to_string_lossy().into_owned()
                    } else {
                        c
                    }
                })
                .collect(),
            ..file
        })
    }
}

/// Line and column (from 1, the column in characters) of byte `offset` of
/// `text`; none when the offset is not a place in it.
fn line_column(text: &str, offset: usize) -> Option<(usize, usize)> {
    let before = text.get(..offset)?;
    let line_start = before.rfind('\n').map_or(0, |i| i + 1);
    Some((
        before.matches('\n').count() + 1,
        before[line_start..].chars().count() + 1,
    ))
}

/// The environment the defaults come from, passed in so that tests and the
/// CLI say exactly what is read.
#[derive(Debug, Default, Clone)]
pub struct SpecEnv {
    /// `$HF_ENDPOINT`.
    pub hf_endpoint: Option<String>,
    /// `$XDG_CACHE_HOME`.
    pub xdg_cache_home: Option<PathBuf>,
    /// `$HOME`.
    pub home: Option<PathBuf>,
    /// `$REGISTRY_AUTH_FILE`: registry credentials (else
    /// `~/.docker/config.json`).
    pub registry_auth_file: Option<PathBuf>,
}

impl SpecEnv {
    /// Reads the process environment.
    pub fn from_process() -> Self {
        let nonempty = |k: &str| std::env::var_os(k).filter(|v| !v.is_empty());
        Self {
            hf_endpoint: nonempty("HF_ENDPOINT").and_then(|v| v.into_string().ok()),
            xdg_cache_home: nonempty("XDG_CACHE_HOME").map(PathBuf::from),
            home: nonempty("HOME").map(PathBuf::from),
            registry_auth_file: nonempty("REGISTRY_AUTH_FILE").map(PathBuf::from),
        }
    }
}
