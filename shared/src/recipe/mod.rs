//! The recipe table: which published builds of an engine exist, and which of
//! them may run on a given machine.
//!
//! A port of llmgw's Go table (`internal/agent/provision/recipe.go`). The nodes
//! choose their builds from that table; the bundler reads the same decisions
//! from this one, so a bundle and the nodes that install from it cannot
//! disagree about which files a build is. Behaviour and wording follow the Go
//! file; where this port adds something (checking versions and engines up
//! front, comparing compute capabilities in tenths) the code says why.

mod companions;
mod environments;
mod error;
mod extras;
mod fit;
mod flashinfer_dsl;
mod images;
mod llamacpp;
mod sglang;
mod signers;
mod uv;
mod version;
mod vllm;

#[cfg(test)]
mod environments_tests;
#[cfg(test)]
mod images_tests;
#[cfg(test)]
mod tests;

use std::collections::BTreeMap;

use serde::{Deserialize, Serialize};

/// A node architecture by Go's name (`amd64`, `arm64`) as the machine
/// names it (`uname -m`, Python's `platform.machine()`, wheel tags):
/// `x86_64`, `aarch64`; `None` for any other.
pub fn machine_of(arch: &str) -> Option<&'static str> {
    match arch {
        "amd64" => Some("x86_64"),
        "arm64" => Some("aarch64"),
        _ => None,
    }
}

pub use companions::{
    COMPANIONS, Companion, CompanionIndex, CudaBuilds, FLASHINFER_CUBIN_DIR_NOTE,
    FLASHINFER_DSL_FMHA_SINCE, FLASHINFER_JIT_CACHE_BUILDS, FLASHINFER_WHEEL_INDEX, NodeVariable,
    companions_of, cuda_label_for, cuda_labels, cuda_of_label, node_variables_of, public_version,
};
pub use environments::{Environment, environments, environments_of};
pub use error::{Misfit, RecipeError};
pub use extras::{
    ENGINE_EXTRAS, EngineExtras, ExtraFile, FLASHINFER_DSL_SETTING, OPENAI_ENCODINGS_HOST, Setting,
    SettingKind, extras_of, settings_of, upstream_url,
};
pub use flashinfer_dsl::{
    DslFmhaPins, FLASHINFER_CUBINS_HOST, FLASHINFER_CUBINS_PATH,
    FLASHINFER_CUBINS_REPOSITORY_DEFAULT, FLASHINFER_DSL_FMHA_PINS, dsl_fmha_pins,
    is_dsl_fmha_extra,
};
pub use images::{EngineImage, driver_problem, images, site_images};
pub use signers::{PYPI_SIGNERS, PypiSigner, SIGNERS, Signer, pypi_signers_of, signers_of};
pub use version::{leading_int, valid_version, version_before};
pub use vllm::VLLM_VARIANTS;

/// The uv that installs the Python engines.
pub const UV_VERSION: &str = "0.12.20";

/// The interpreter the Python engines run on. uv fetches it, so the node's
/// own Python — or its absence — does not matter.
const PYTHON_FOR_ENGINES: &str = "3.12";

/// What the table needs to know of a machine to choose its builds.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct Host {
    /// Go's architecture names: "amd64", "arm64".
    pub arch: String,
    /// The NVIDIA driver version ("550.54.15"); `None` (or empty) is a
    /// machine with no NVIDIA GPU.
    pub nvidia_driver: Option<String>,
    /// The lowest compute capability among the machine's NVIDIA GPUs
    /// ("8.6" is 8.6); 0 when unknown, which no build is refused for.
    pub min_compute_capability: f64,
}

impl Host {
    /// A machine of this architecture with no NVIDIA GPU.
    pub fn without_gpu(arch: &str) -> Self {
        Host {
            arch: arch.to_string(),
            nvidia_driver: None,
            min_compute_capability: 0.0,
        }
    }

    /// A machine with NVIDIA GPUs, the oldest of them of compute capability
    /// `min_cc` (0 for unknown), on driver `driver`.
    pub fn nvidia(arch: &str, driver: &str, min_cc: f64) -> Self {
        Host {
            arch: arch.to_string(),
            nvidia_driver: Some(driver.to_string()),
            min_compute_capability: min_cc,
        }
    }

    /// The NVIDIA driver version, or `None` for a machine without an NVIDIA
    /// GPU. An empty string counts as none, as it does in the Go table.
    pub fn driver(&self) -> Option<&str> {
        self.nvidia_driver
            .as_deref()
            .filter(|d| !d.trim().is_empty())
    }
}

/// One published build of an engine, chosen for one machine.
///
/// Serialised with the snake_case of the Go field names; empty, false and
/// zero fields are left out, so the JSON says only what a build has.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(default)]
pub struct Build {
    /// Names the build: "cpu", "cuda-12.8".
    pub variant: String,
    /// The release files to fetch, unpacked in order into one directory.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub assets: Vec<String>,
    /// Operating system packages the build links against and a minimal
    /// install may not carry, by packaging family ("deb", "rpm"): the same
    /// library is libgomp1 on one and libgomp on the other.
    #[serde(skip_serializing_if = "BTreeMap::is_empty")]
    pub packages: BTreeMap<String, Vec<String>>,
    /// The executable's file name, found anywhere in the unpacked tree.
    #[serde(skip_serializing_if = "String::is_empty")]
    pub binary: String,
    /// Extensions the build is slow without. Missing ones are reported, not
    /// refused: slow is still running.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub cpu_flags: Vec<String>,
    /// When set, the build is a Python environment rather than an archive:
    /// this interpreter version, with `requirements` installed from PyPI by
    /// uv. `binary` is then looked for in the environment's bin.
    #[serde(skip_serializing_if = "String::is_empty")]
    pub python: String,
    #[serde(skip_serializing_if = "Vec::is_empty")]
    /// What uv installs from PyPI into the environment (requirement specifiers).
    pub requirements: Vec<String>,
    /// What `binary` is run with to prove the build works, when --version
    /// is not it.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub version_args: Vec<String>,
    /// The shared library the build computes on GPUs with, loaded at run
    /// time rather than linked ("libggml-cuda.so"). The build must list a
    /// device with it: a llama.cpp whose CUDA backend cannot load runs on
    /// the CPU without complaint.
    #[serde(skip_serializing_if = "String::is_empty")]
    pub gpu_backend: String,
    /// The engine itself as a wheel from a GitHub release rather than from
    /// PyPI, checked against the digest GitHub publishes for it.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub wheel: Option<Wheel>,
    /// A package index besides PyPI, for `index_packages` only: the CUDA
    /// 12.9 torch the wheel was built on. Everything else comes from PyPI.
    #[serde(skip_serializing_if = "String::is_empty")]
    pub extra_index: String,
    #[serde(skip_serializing_if = "Vec::is_empty")]
    /// The packages taken from `extra_index` rather than PyPI.
    pub index_packages: Vec<String>,
    /// On a node with an NVIDIA GPU, the installed environment must compute
    /// something on one before the build counts as installed: a build with
    /// no kernels for the card imports, prints its version, and fails on its
    /// first model.
    #[serde(skip_serializing_if = "is_false")]
    pub gpu_check: bool,
    /// The engine version this build is, when it is not the one asked for:
    /// the newest built for this machine's GPUs. Empty is the one asked for.
    #[serde(skip_serializing_if = "String::is_empty")]
    pub version: String,
    /// Why this build, when it is not the plain one; shown beside it.
    #[serde(skip_serializing_if = "String::is_empty")]
    pub note: String,
    /// Disk space the installation needs before it starts: an engine that
    /// fills the disk halfway leaves the node worse off than one never begun.
    #[serde(skip_serializing_if = "is_zero")]
    pub free_gb: u32,
}

fn is_false(b: &bool) -> bool {
    !*b
}

fn is_zero(n: &u32) -> bool {
    *n == 0
}

/// A package published as a GitHub release asset: the asset of `repo` at
/// `tag` whose name starts with `prefix` and ends with `suffix`.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct Wheel {
    /// The Python project the wheel is of (its normalized name on an index).
    pub project: String,
    /// The GitHub repository that publishes it.
    pub repo: String,
    /// The release tag it is published under.
    pub tag: String,
    /// How the asset's name starts.
    pub prefix: String,
    /// How the asset's name ends (`.whl` and the tags it is built for).
    pub suffix: String,
}

/// The builds that may run on a machine, best first, or why none can.
type CandidatesFn = fn(&str, Option<&str>, &Host) -> Result<Vec<Build>, RecipeError>;

/// Knows how to install one engine.
pub struct Recipe {
    name: &'static str,
    repo: Option<&'static str>,
    pypi: Option<&'static str>,
    candidates: CandidatesFn,
    /// The compute capabilities of the older GPU generations a Python
    /// engine falls back to an older version for, on an architecture.
    older_gpus: fn(&str) -> Vec<f64>,
    /// For a Python engine: the lowest manylinux tag (`2_31`) at which
    /// every wheel of a version's environment exists on an architecture,
    /// which an offline
    /// bundle resolves for unless told otherwise. Not part of the Go
    /// table (the nodes install for their own glibc); each engine's file
    /// says where its figures come from.
    manylinux: fn(&str, &str) -> &'static str,
}

impl std::fmt::Debug for Recipe {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Recipe")
            .field("name", &self.name)
            .field("repo", &self.repo)
            .field("pypi", &self.pypi)
            .finish_non_exhaustive()
    }
}

impl Recipe {
    /// The engine's name in the table: "llamacpp", "vllm".
    pub fn name(&self) -> &'static str {
        self.name
    }

    /// The GitHub repository ("owner/name") whose releases carry the
    /// builds; `None` for an engine installed from PyPI.
    pub fn repo(&self) -> Option<&'static str> {
        self.repo
    }

    /// The PyPI project an engine installed from PyPI is published as.
    pub fn pypi(&self) -> Option<&'static str> {
        self.pypi
    }

    /// The builds of `version` that may run on `host`, best first, or why
    /// none can. The installer takes the first that installs and is seen to
    /// work, so a build this table is wrong about costs a download, not a
    /// node. `variant` is a build chosen for the node; `None` (or empty)
    /// leaves the choice to the machine.
    pub fn candidates(
        &self,
        version: &str,
        variant: Option<&str>,
        host: &Host,
    ) -> Result<Vec<Build>, RecipeError> {
        self.check_version(version)?;
        let variant = variant.filter(|v| !v.is_empty());
        (self.candidates)(version, variant, host)
    }

    fn check_version(&self, version: &str) -> Result<(), RecipeError> {
        if valid_version(version) {
            Ok(())
        } else {
            Err(RecipeError::InvalidVersion {
                engine: self.name.to_string(),
                version: version.to_string(),
            })
        }
    }
}

/// The engines this table can install, sorted by name.
///
/// vLLM and SGLang are Python environments of several gigabytes, installed
/// from PyPI by uv, which is itself installed like llama.cpp: a GitHub
/// release checked against its published checksum.
pub static RECIPES: [Recipe; 4] = [
    Recipe {
        name: "llamacpp",
        repo: Some("ggml-org/llama.cpp"),
        pypi: None,
        candidates: llamacpp::candidates,
        older_gpus: environments::no_older_gpus,
        manylinux: environments::no_manylinux,
    },
    Recipe {
        name: "sglang",
        repo: None,
        pypi: Some("sglang"),
        candidates: sglang::candidates,
        older_gpus: environments::no_older_gpus,
        manylinux: sglang::manylinux,
    },
    Recipe {
        name: "uv",
        repo: Some("astral-sh/uv"),
        pypi: None,
        candidates: uv::candidates,
        older_gpus: environments::no_older_gpus,
        manylinux: environments::no_manylinux,
    },
    Recipe {
        name: "vllm",
        repo: None,
        pypi: Some("vllm"),
        candidates: vllm::candidates,
        older_gpus: vllm::older_gpus,
        manylinux: vllm::manylinux,
    },
];

/// The recipe of an engine, or an error listing the engines there are.
pub fn recipe(engine: &str) -> Result<&'static Recipe, RecipeError> {
    RECIPES
        .iter()
        .find(|r| r.name == engine)
        .ok_or_else(|| RecipeError::UnknownEngine {
            engine: engine.to_string(),
            known: RECIPES.iter().map(|r| r.name.to_string()).collect(),
        })
}

/// The builds of an engine version that may run on `host`, best first; see
/// [`Recipe::candidates`].
pub fn candidates(
    engine: &str,
    version: &str,
    variant: Option<&str>,
    host: &Host,
) -> Result<Vec<Build>, RecipeError> {
    recipe(engine)?.candidates(version, variant, host)
}

/// Every build of an engine version published for an architecture: what an
/// offline bundle carries, for nodes it has not seen.
///
/// Read from the same table the nodes choose from, asked as a machine with no
/// GPU and as one with any NVIDIA GPU and the newest driver, so a bundle and
/// the nodes that install from it cannot disagree about which files a build
/// is. Archive engines only: a Python engine's builds are environments, see
/// [`environments`].
pub fn builds(engine: &str, version: &str, arch: &str) -> Result<Vec<Build>, RecipeError> {
    let r = recipe(engine)?;
    if r.repo.is_none() {
        return Err(RecipeError::FromPyPI {
            engine: engine.to_string(),
            archive_engines: RECIPES
                .iter()
                .filter(|r| r.repo.is_some())
                .map(|r| r.name.to_string())
                .collect(),
        });
    }
    r.check_version(version)?;
    let hosts = [
        Host::without_gpu(arch),
        // Any card and the newest driver: every GPU build is a candidate.
        Host::nvidia(arch, "9999", 0.0),
    ];
    r.builds_for_hosts(engine, version, arch, &hosts, |b| b.variant.clone())
}

impl Recipe {
    /// Every build the table gives any of `hosts` for `version`, in the
    /// order found, each `key` once; or, when none, why (each distinct
    /// reason once: hosts often give the same one, such as an architecture
    /// the engine is not published for).
    fn builds_for_hosts<K: PartialEq>(
        &self,
        engine: &str,
        version: &str,
        arch: &str,
        hosts: &[Host],
        key: impl Fn(&Build) -> K,
    ) -> Result<Vec<Build>, RecipeError> {
        let mut out: Vec<Build> = Vec::new();
        let mut reasons: Vec<RecipeError> = Vec::new();
        for h in hosts {
            match (self.candidates)(version, None, h) {
                Ok(bs) => {
                    for b in bs {
                        if !out.iter().any(|o| key(o) == key(&b)) {
                            out.push(b);
                        }
                    }
                }
                Err(e) => {
                    let said = e.to_string();
                    if !reasons.iter().any(|r| r.to_string() == said) {
                        reasons.push(e);
                    }
                }
            }
        }
        if out.is_empty() {
            return Err(RecipeError::NoBuild {
                engine: engine.to_string(),
                version: version.to_string(),
                arch: arch.to_string(),
                reasons,
            });
        }
        Ok(out)
    }
}

/// The engines a node can be asked to install: every recipe but uv, which is
/// a tool for the others. Sorted.
pub fn installable() -> Vec<&'static str> {
    RECIPES
        .iter()
        .map(|r| r.name)
        .filter(|n| *n != "uv")
        .collect()
}

/// The architectures the table publishes builds for, by Go's names.
pub const ARCHES: [&str; 2] = ["amd64", "arm64"];

/// Go's name for an architecture known by another (`x86_64`, `aarch64`,
/// as `uname -m` prints them), for a hint; `None` for a name that is Go's
/// already or no architecture the table knows.
pub fn go_arch_name(name: &str) -> Option<&'static str> {
    match name.to_ascii_lowercase().as_str() {
        "x86_64" | "x86-64" | "x64" | "amd" | "intel64" => Some("amd64"),
        "aarch64" | "arm" | "armv8" | "arm64v8" => Some("arm64"),
        _ => None,
    }
}

/// Why `arch` is not one of [`ARCHES`], with the name to use instead
/// when it is another spelling of one; `None` when it is one. The caller
/// names `arch` (`--arch x86_64: …`).
pub fn arch_problem(arch: &str) -> Option<String> {
    if ARCHES.contains(&arch) {
        return None;
    }
    Some(match go_arch_name(arch) {
        Some(go) => format!("that is {go} here (Go's name for it); use {go}"),
        None => format!(
            "not an architecture the recipe table has builds for; use {}",
            ARCHES.join(" or ")
        ),
    })
}

/// Packages by packaging family, from a literal table.
fn packages(by_family: &[(&str, &[&str])]) -> BTreeMap<String, Vec<String>> {
    by_family
        .iter()
        .map(|(family, names)| {
            (
                family.to_string(),
                names.iter().map(|n| n.to_string()).collect(),
            )
        })
        .collect()
}

/// Python engines need a C compiler at run time: Triton builds a small
/// launcher for its kernels the first time a model loads, and without gcc
/// that load fails long after the installation looked finished.
fn compiler_packages() -> BTreeMap<String, Vec<String>> {
    packages(&[("deb", &["gcc"]), ("rpm", &["gcc"])])
}

/// The OS packages a Python environment that installs a recipe engine
/// needs, whoever chose it: `--python-env tools=vllm==0.33.0` runs vLLM
/// just as the recipe's environment does, so its nodes need what the
/// recipe's need. `project` is a requirement's distribution name (any
/// spelling PEP 503 normalizes alike); `None` when it is no recipe
/// engine's.
pub fn engine_os_packages(project: &str) -> Option<BTreeMap<String, Vec<String>>> {
    let norm = |s: &str| s.to_ascii_lowercase().replace(['_', '.'], "-");
    RECIPES
        .iter()
        .filter_map(|r| r.pypi)
        .any(|p| norm(p) == norm(project))
        .then(compiler_packages)
}

fn strings(items: &[&str]) -> Vec<String> {
    items.iter().map(|s| s.to_string()).collect()
}
