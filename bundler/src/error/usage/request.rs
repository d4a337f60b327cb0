//! The flags taken together: one that must be given is not, two that do
//! not go together are, a thing is asked for twice, or a flag names what
//! the request does not have.
//!
//! Invariant: each variant says which flags to change and how; the values
//! it names are fields, the lists it offers are printed with `listed`.

use llmgw_shared::shown;
use thiserror::Error;

use super::listed;

/// The flags, taken together, do not make a request.
#[derive(Debug, Error)]
pub enum RequestError {
    /// No `--out` and no `out` in the spec file.
    #[error("--out PATH is required (or `out` in the spec file)")]
    OutRequired,
    /// No `--arch`.
    #[error("--arch is required: the node architectures to carry builds for (amd64, arm64)")]
    ArchRequired,
    /// Nothing asked for at all.
    #[error(
        "nothing to bundle: give --llmgw, --engine, --model, --dataset, --python-env, \
         --image, --chart or --want"
    )]
    NothingToBundle,
    /// No `--cache` and no environment to find the default one from.
    #[error("no cache folder: set --cache DIR (neither XDG_CACHE_HOME nor HOME is set)")]
    NoCacheFolder,
    /// `--llmgw` without a key to check its signature with.
    #[error(
        "--llmgw needs --trust KEY.pub: llmgw's release is only carried when its \
         SHA256SUMS signature verifies with a key you trust"
    )]
    LlmgwWithoutTrust,
    /// `--chunk-size` or `--parity` without volumes for them to shape.
    #[error(
        "--chunk-size and --parity need --volume-size SIZE (volumes are what they \
         shape)"
    )]
    VolumeShapeWithoutSize,
    /// `--python` without a `--python-env` for it to set.
    #[error(
        "--python sets the CPython of the --python-env environments, and there is \
         none; a recipe engine's environment runs the Python its table names"
    )]
    PythonWithoutSiteEnv,
    /// `--no-extras` and `--extras-base` together.
    #[error(
        "--no-extras leaves the runtime extras out, and --extras-base says where to \
         fetch them from; give one of the two"
    )]
    ExtrasBoth,
    /// `--need` with `--have` or `--base`.
    #[error(
        "--need makes a repair bundle of exactly the listed blobs; it does not go \
         with --have or --base"
    )]
    NeedWithDelta,
    /// A `:VARIANT` on an engine carried as release assets.
    #[error(
        "--engine {engine}={version}:{variant}: a variant picks one Python environment (vllm, \
         sglang); {engine} is carried as every build of its release, so give it without \
         :{variant}"
    )]
    EngineVariant {
        /// The engine (`llamacpp`).
        engine: String,
        /// Its version.
        version: String,
        /// The variant given.
        variant: String,
    },
    /// `latest` asked of an engine that is not published as GitHub releases.
    #[error(
        "--engine {engine}=latest: latest is resolved for engines published as GitHub \
         releases (llamacpp, uv); give {engine} a version, e.g. {engine}=0.34.0"
    )]
    LatestNotRelease {
        /// The engine.
        engine: String,
    },
    /// The recipe table has no GitHub release for an engine whose builds
    /// are asked for (the table refuses PyPI engines first: a safety net).
    #[error("{engine} has no GitHub release to bundle builds from")]
    EngineWithoutRelease {
        /// The engine.
        engine: String,
    },
    /// A site lock for a node architecture it cannot be read for.
    #[error("--python-env {env}: a site lock is read for amd64 or arm64 nodes, not {arch}")]
    SiteLockArch {
        /// The environment.
        env: String,
        /// The architecture asked for.
        arch: String,
    },
    /// A site lock with a `--python` that is not a CPython 3.M.
    #[error("--python {python}: a site lock is read for a CPython 3.M")]
    SiteLockPython {
        /// The Python version asked for.
        python: String,
    },
    /// The same repository at the same revision in two values.
    #[error("{flag} {id}@{revision} is asked for twice; give it once with all its globs")]
    RepoTwice {
        /// `--model` or `--dataset`.
        flag: &'static str,
        /// The repository.
        id: String,
        /// The revision.
        revision: String,
    },
    /// Two images that would be served as the same name and tag.
    #[error(
        "--image {first} and --image {second} would both be served as the same name and tag; \
         give one of them another NAME:TAG"
    )]
    ImagesClash {
        /// The later image, as given.
        first: String,
        /// The earlier image it clashes with.
        second: String,
    },
    /// An engine's version and a variant of it both asked for.
    #[error(
        "two Python environments are named {env}; --engine {engine}={version} and a variant \
         of it ask for it twice; give the version once, or only its variants"
    )]
    EngineEnvTwice {
        /// The environment's name.
        env: String,
        /// The engine.
        engine: String,
        /// Its version.
        version: String,
    },
    /// Two `--python-env` with one name.
    #[error("two Python environments are named {env}; give each --python-env its own name")]
    SiteEnvTwice {
        /// The name.
        env: String,
    },
    /// `--override` or `--constraint` names no environment of the bundle.
    #[error(
        "{flag} {env}={requirement}: no Python environment of this bundle is {env:?}; they are \
         {}",
        listed(envs, "none")
    )]
    EditNamesNothing {
        /// `--override` or `--constraint`.
        flag: &'static str,
        /// The environment named.
        env: String,
        /// The requirement given for it.
        requirement: String,
        /// The bundle's environments.
        envs: Vec<String>,
    },
    /// `--index NAME=URL` names an index no environment uses.
    #[error(
        "--index {}: no environment of this bundle uses an index of that name; {}",
        shown(name),
        if used.is_empty() {
            "none uses an extra index (use --pypi for PyPI itself)".to_string()
        } else {
            format!("they use {}", used.join(", "))
        }
    )]
    IndexUnused {
        /// The index named.
        name: String,
        /// The indexes the environments use.
        used: Vec<String>,
    },
}
