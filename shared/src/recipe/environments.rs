//! Every Python environment of an engine version a node of one architecture
//! may be given: what an offline bundle carries for vLLM and SGLang.
//!
//! Read from the same table the nodes choose from, so a bundle cannot carry
//! a different set than the nodes ask for: the table is asked as a machine
//! with the newest driver and an unknown GPU (every variant of the version
//! fits it), then as each older GPU generation the engine falls back for (a
//! V100 is given vLLM 0.19.1, not 0.20). What comes back is kept whole — the
//! [`Build`] says which interpreter, requirements, wheel, index and OS
//! packages the environment is — and one environment is one (version,
//! variant): the same build reached twice is listed once.

use serde::{Deserialize, Serialize};

use super::{Build, Host, RECIPES, RecipeError, recipe};

/// One Python environment a node may be given.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Environment {
    /// `{engine}-{version}-{variant}-{arch}`: the environment's name in a
    /// bundle and on the mirror (`/pypi/{name}/simple/`).
    pub name: String,
    /// The engine the environment installs (`vllm`, `sglang`).
    pub engine: String,
    /// The engine version the environment installs: the one asked for, or
    /// the older one a GPU generation falls back to (`build.note` says so).
    pub version: String,
    /// "cu13", "cu129", "cu12".
    pub variant: String,
    /// Go's architecture name: "amd64", "arm64".
    pub arch: String,
    /// The lowest manylinux tag (`2_31`, glibc 2.31) at which every
    /// wheel of the environment exists: what a bundle resolves it for
    /// unless `--manylinux` says else.
    pub manylinux: String,
    /// Everything the table says of the build, unchanged.
    pub build: Build,
}

/// The driver no build asks more of: every GPU build is a candidate for it.
const NEWEST_DRIVER: &str = "9999";

/// Every Python environment of `engine` `version` for nodes of `arch`, the
/// plain builds of that version first (in the table's order), then those
/// for older GPUs; or why there is none.
pub fn environments(
    engine: &str,
    version: &str,
    arch: &str,
) -> Result<Vec<Environment>, RecipeError> {
    let r = recipe(engine)?;
    if r.pypi.is_none() {
        return Err(RecipeError::NotPython {
            engine: engine.to_string(),
            python_engines: RECIPES
                .iter()
                .filter(|r| r.pypi.is_some())
                .map(|r| r.name.to_string())
                .collect(),
        });
    }
    r.check_version(version)?;
    // Compute capability 0 is unknown, which no build is refused for.
    let mut hosts = vec![Host::nvidia(arch, NEWEST_DRIVER, 0.0)];
    hosts.extend(
        (r.older_gpus)(arch)
            .into_iter()
            .map(|cc| Host::nvidia(arch, NEWEST_DRIVER, cc)),
    );
    // The build's own version when it falls back, else the one asked for.
    let version_of = |b: &Build| {
        if b.version.is_empty() {
            version.to_string()
        } else {
            b.version.clone()
        }
    };
    let builds = r.builds_for_hosts(engine, version, arch, &hosts, |b| {
        (version_of(b), b.variant.clone())
    })?;
    Ok(builds
        .into_iter()
        .map(|b| {
            let v = version_of(&b);
            let manylinux = (r.manylinux)(&v, arch).to_string();
            Environment {
                name: format!("{engine}-{v}-{}-{arch}", b.variant),
                engine: engine.to_string(),
                version: v,
                variant: b.variant.clone(),
                arch: arch.to_string(),
                manylinux,
                build: b,
            }
        })
        .collect())
}

/// The environments of `engine` `version` for `arch` an operator chose by
/// variant (`--engine vllm=0.33.0:cu13`): only `variant`'s build of the
/// version asked for, none of the fallbacks for older GPUs; `None` is
/// every environment, as [`environments`]. A variant the version has no
/// build of is refused, naming the ones it has.
pub fn environments_of(
    engine: &str,
    version: &str,
    variant: Option<&str>,
    arch: &str,
) -> Result<Vec<Environment>, RecipeError> {
    let all = environments(engine, version, arch)?;
    let Some(variant) = variant.filter(|v| !v.is_empty()) else {
        return Ok(all);
    };
    let (chosen, others): (Vec<Environment>, Vec<Environment>) = all
        .into_iter()
        .partition(|e| e.version == version && e.variant == variant);
    if chosen.is_empty() {
        return Err(RecipeError::UnknownVariant {
            what: format!("{engine} {version} for {arch}"),
            variant: variant.to_string(),
            available: others
                .iter()
                .filter(|e| e.version == version)
                .map(|e| e.variant.clone())
                .collect(),
        });
    }
    Ok(chosen)
}

/// For engines that are no Python environment: no manylinux figure.
pub(super) fn no_manylinux(_version: &str, _arch: &str) -> &'static str {
    ""
}

/// For engines that fall back for no older GPU.
pub(super) fn no_older_gpus(_arch: &str) -> Vec<f64> {
    Vec::new()
}
