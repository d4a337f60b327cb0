//! Companion wheels: a package whose presence in a resolved environment
//! means its engine will, at run time, look for another distribution of
//! the same version and fetch from the internet what it does not find —
//! FlashInfer's kernels (issue #32). The environment's resolve adds the
//! companion pinned to the resolved version, from the default index or,
//! where the publisher keeps it on its own index per CUDA version, from
//! that index at the CUDA version the environment resolved; one that
//! cannot be had is a gap saying why.
//!
//! Invariant: data and pure look-ups only; every rule cites the code of
//! the client that reads the companion, so a reader can check it.

use super::version_before;

/// Where a companion is published.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum CompanionIndex {
    /// On the environment's default index (PyPI), the version equal to the
    /// resolved package's public version.
    Default,
    /// Only on the publisher's own index, one per CUDA version: `base`
    /// followed by `/cu130` (…) and the project's page; the version is the
    /// resolved package's public version with `+cu130` (…) appended.
    PerCuda {
        /// `https://flashinfer.ai/whl`.
        base: &'static str,
        /// The CUDA labels the publisher builds, by version range.
        builds: &'static [CudaBuilds],
    },
}

/// The CUDA labels a publisher builds from version `since` on (until the
/// next entry's `since`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct CudaBuilds {
    /// The first version built so.
    pub since: &'static str,
    /// `cu128`, `cu130`: the local version label and the index's folder.
    pub labels: &'static [&'static str],
}

/// One companion rule: when `of` is resolved at a version from `since`
/// on, `project` at the same version belongs beside it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Companion {
    /// The resolved package it follows (PEP 503 normalized).
    pub of: &'static str,
    /// The companion's project name (PEP 503 normalized).
    pub project: &'static str,
    /// The first version of `of` the companion exists for.
    pub since: &'static str,
    /// Where it is published.
    pub index: CompanionIndex,
    /// What the node does without it: shown in a gap.
    pub without: &'static str,
}

impl Companion {
    /// The requirement that pins it to `version` of [`Companion::of`]
    /// (its public part: FlashInfer's `_build_cubin_requirement` drops a
    /// local `+…` label the same way).
    pub fn requirement(&self, version: &str) -> String {
        format!("{}=={}", self.project, public_version(version))
    }
}

/// `0.5.3` of `0.5.3+cu129`.
pub fn public_version(version: &str) -> &str {
    version.split_once('+').map_or(version, |(p, _)| p)
}

/// The index of FlashInfer's own wheels (`flashinfer/__main__.py`,
/// `_build_cubin_index_url`; the JIT cache is under `/cu129` (…),
/// `_build_jit_cache_index_url`).
pub const FLASHINFER_WHEEL_INDEX: &str = "https://flashinfer.ai/whl";

/// FlashInfer's companions (flashinfer-ai/flashinfer, commit
/// fb28d7242b3506a2348265962041acc1fb56cca4, v0.6.18rc7; the same code in
/// v0.4.0 on).
///
/// `flashinfer/jit/env.py` `_get_cubin_dir`: when the `flashinfer_cubin`
/// module is importable (and `FLASHINFER_CUBIN_DIR` is unset), the cubin
/// directory is `flashinfer_cubin.get_cubin_dir()`, and its `__version__`
/// must equal flashinfer's or the import raises (hence `==`). The loader,
/// `flashinfer/jit/cubin_loader.py` `get_artifact` (`get_cubin` before
/// 0.6), reads `FLASHINFER_CUBIN_DIR / name` first and reaches
/// `FLASHINFER_CUBINS_REPOSITORY` only when that file is missing or its
/// sha256 differs. The wheel is built by `flashinfer-cubin/build_backend.py`
/// running `flashinfer.artifacts.download_artifacts()`, which stores every
/// file `get_subdir_file_list()` names — each pinned directory's
/// `checksums.txt`, its `flashinferMetaInfo.h`, every `*.cubin` and header —
/// so with the wheel installed the TRT-LLM-gen FMHA, GEMM, batched GEMM and
/// DeepGEMM kernels never reach the repository: the loose cubins are not
/// carried. The exception, from 0.6.10 (`flashinfer/attention/cute_dsl/
/// fmha.py`, `_load_from_artifact`): the CuTe DSL FMHA kernels are `.so`
/// files, which `get_available_cubin_files` (it lists `*.cubin` only) never
/// puts in the wheel — the real 0.6.13 wheel holds only the x86_64
/// `checksums.txt` of that directory — so a Blackwell node that uses them
/// fetches them; see [`FLASHINFER_DSL_FMHA_SINCE`].
///
/// PyPI publishes `flashinfer-cubin` from 0.4.0 (0.4.0 … 0.6.13 when this
/// was written, none for 0.7.x: there FlashInfer's own index is the only
/// source, `flashinfer install-cubin-wheel`). `flashinfer-jit-cache` (the
/// ahead-of-time compiled kernels, version `V+cu130`) is published only
/// on FlashInfer's own index, one per CUDA version: see
/// [`FLASHINFER_JIT_CACHE_BUILDS`] for its shape and where that comes from.
pub const COMPANIONS: [Companion; 2] = [
    Companion {
        of: "flashinfer-python",
        project: "flashinfer-cubin",
        since: "0.4.0",
        index: CompanionIndex::Default,
        without: "FlashInfer fetches each kernel cubin at first use from \
                  FLASHINFER_CUBINS_REPOSITORY (NVIDIA's artifact server), which fails offline",
    },
    Companion {
        of: "flashinfer-python",
        project: "flashinfer-jit-cache",
        since: "0.4.0",
        index: CompanionIndex::PerCuda {
            base: FLASHINFER_WHEEL_INDEX,
            builds: &FLASHINFER_JIT_CACHE_BUILDS,
        },
        without: "optional: FlashInfer compiles its JIT kernels on the node at first use \
                  (nvcc, no download)",
    },
];

/// The CUDA versions FlashInfer builds `flashinfer-jit-cache` for, by
/// release: the `cuda` matrix of the job that builds it
/// (`.github/workflows/release-flashinfer-jit-cache-wheel.yml` at v0.4.0,
/// the `build-flashinfer-jit-cache` job of `.github/workflows/release.yml`
/// from v0.4.1: 12.8, 12.9 and 13.0 through v0.6.18rc4; 13.4 added by
/// v0.6.18rc6), each for `x86_64` and `aarch64`. The job sets
/// `FLASHINFER_LOCAL_VERSION=cu{major}{minor}`, so the wheel is
/// `flashinfer_jit_cache-{V}+cu130-cp39-abi3-manylinux_2_28_{arch}.whl`
/// (`flashinfer-jit-cache/build_backend.py`: the `cp39`/`abi3` tags,
/// `manylinux_2_28`). The release job then runs
/// `scripts/update_whl_index.py`, which writes the PEP 503 page
/// `{FLASHINFER_WHEEL_INDEX}/cu130/flashinfer-jit-cache/index.html` into
/// the `flashinfer-ai/whl` repository that `flashinfer.ai/whl` serves, one
/// link a wheel: `https://github.com/flashinfer-ai/flashinfer/releases/
/// download/v{V}/{file}#sha256={hex}` (the sha256 of the file built). A
/// version range counts its release candidates with it (`0.6.18rc1` is
/// 0.6.18 here): a label a candidate lacks is found missing on the index,
/// a gap.
pub const FLASHINFER_JIT_CACHE_BUILDS: [CudaBuilds; 2] = [
    CudaBuilds {
        since: "0.4.0",
        labels: &["cu128", "cu129", "cu130"],
    },
    CudaBuilds {
        since: "0.6.18",
        labels: &["cu128", "cu129", "cu130", "cu134"],
    },
];

/// The CUDA labels `builds` lists for `version` (none before the first).
pub fn cuda_labels(builds: &[CudaBuilds], version: &str) -> &'static [&'static str] {
    builds
        .iter()
        .rev()
        .find(|b| !version_before(version, b.since))
        .map_or(&[], |b| b.labels)
}

/// `(12, 8)` of `cu128`, `(13, 0)` of `cu130`, `(11, 8)` of `cu118`.
pub fn cuda_of_label(label: &str) -> Option<(u64, u64)> {
    let digits = label.strip_prefix("cu")?;
    if digits.len() < 2 || !digits.bytes().all(|b| b.is_ascii_digit()) {
        return None;
    }
    let (major, minor) = digits.split_at(digits.len() - 1);
    Some((major.parse().ok()?, minor.parse().ok()?))
}

/// The label of `labels` a node with CUDA `cuda` installs, as FlashInfer
/// picks it (`flashinfer/__main__.py` `_resolve_jit_cache_cuda_version`):
/// the newest of the same major version not newer than `cuda`; `None`
/// when there is none (CUDA 12.6 before any 12.8 build).
pub fn cuda_label_for(labels: &[&'static str], cuda: (u64, u64)) -> Option<&'static str> {
    labels
        .iter()
        .filter_map(|l| cuda_of_label(l).map(|c| (c, *l)))
        .filter(|(c, _)| c.0 == cuda.0 && *c <= cuda)
        .max()
        .map(|(_, l)| l)
}

/// The first FlashInfer whose CuTe DSL FMHA kernels (`.so`) are fetched
/// from its artifact repository even with `flashinfer-cubin` installed.
pub const FLASHINFER_DSL_FMHA_SINCE: &str = "0.6.10";

/// The first FlashInfer that reads `FLASHINFER_NO_DOWNLOAD`
/// (`cubin_loader.py` `get_artifact`, commit e0f3729b4, v0.6.8).
pub const FLASHINFER_NO_DOWNLOAD_SINCE: &str = "0.6.8";

/// The companions of `project` (normalized) at `version`.
pub fn companions_of(project: &str, version: &str) -> Vec<Companion> {
    COMPANIONS
        .iter()
        .filter(|c| c.of == project && !version_before(version, c.since))
        .copied()
        .collect()
}

/// A variable a node sets for a held companion, and who reads it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct NodeVariable {
    /// The environment variable.
    pub name: &'static str,
    /// Its value.
    pub value: &'static str,
    /// Which client reads it, and where (for people).
    pub read_by: &'static str,
}

/// The variables a node installing an environment that holds `project`
/// (normalized) at `version` sets: for `flashinfer-cubin`, from 0.6.8,
/// `FLASHINFER_NO_DOWNLOAD=1`, so a kernel the wheel lacks fails at once
/// naming the file instead of retrying NVIDIA's server four times with
/// back-off. (`FLASHINFER_CUBIN_DIR` must stay unset: it overrides the
/// installed wheel, `env.py` `_get_cubin_dir`; [`FLASHINFER_CUBIN_DIR_NOTE`].)
/// Not when `dsl_held` (the mirror holds CuTe DSL FMHA kernels) and the
/// version fetches them ([`FLASHINFER_DSL_FMHA_SINCE`]): those `.so` files
/// are never in the wheel, `get_artifact` fetches them from
/// `FLASHINFER_CUBINS_REPOSITORY`, and `FLASHINFER_NO_DOWNLOAD` would
/// refuse that; the node points the repository at the mirror instead.
pub fn node_variables_of(project: &str, version: &str, dsl_held: bool) -> Vec<NodeVariable> {
    let fetches_dsl = dsl_held && !version_before(version, FLASHINFER_DSL_FMHA_SINCE);
    if project == "flashinfer-cubin"
        && !version_before(version, FLASHINFER_NO_DOWNLOAD_SINCE)
        && !fetches_dsl
    {
        return vec![NodeVariable {
            name: "FLASHINFER_NO_DOWNLOAD",
            value: "1",
            read_by: "flashinfer: jit/cubin_loader.py get_artifact (a kernel missing from \
                      flashinfer-cubin fails at once, naming it)",
        }];
    }
    Vec::new()
}

/// What `mirror env` says of an environment holding `flashinfer-cubin`.
pub const FLASHINFER_CUBIN_DIR_NOTE: &str = "flashinfer-cubin held: leave FLASHINFER_CUBIN_DIR \
     unset (it overrides the installed wheel: flashinfer/jit/env.py _get_cubin_dir)";

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn flashinfer_brings_its_cubin_wheel_pinned_and_its_jit_cache_per_cuda() {
        let c = companions_of("flashinfer-python", "0.5.3");
        assert_eq!(c.len(), 2);
        assert_eq!(c[0].requirement("0.5.3"), "flashinfer-cubin==0.5.3");
        assert_eq!(c[0].requirement("0.5.3+cu129"), "flashinfer-cubin==0.5.3");
        let CompanionIndex::PerCuda { base, builds } = c[1].index else {
            panic!("{:?}", c[1]);
        };
        assert_eq!(base, "https://flashinfer.ai/whl");
        assert_eq!(cuda_labels(builds, "0.5.3"), ["cu128", "cu129", "cu130"]);
        assert_eq!(cuda_labels(builds, "0.6.18rc6").len(), 4);
        assert!(cuda_labels(builds, "0.3.1").is_empty());
        assert!(companions_of("flashinfer-python", "0.3.1").is_empty());
        assert!(companions_of("torch", "2.11.0").is_empty());
        assert!(node_variables_of("flashinfer-cubin", "0.5.3", false).is_empty());
        assert_eq!(
            node_variables_of("flashinfer-cubin", "0.6.13", false)[0].name,
            "FLASHINFER_NO_DOWNLOAD"
        );
        // With the DSL kernels held, the loader must be let to fetch them.
        assert!(node_variables_of("flashinfer-cubin", "0.6.13", true).is_empty());
        assert_eq!(
            node_variables_of("flashinfer-cubin", "0.6.9", true).len(),
            1
        );
        assert!(node_variables_of("flashinfer-python", "0.6.13", false).is_empty());
    }

    /// FlashInfer's own choice: the newest build of the same major CUDA
    /// version not newer than the node's.
    #[test]
    fn the_jit_cache_label_is_the_newest_of_the_same_major_not_newer() {
        let labels = cuda_labels(&FLASHINFER_JIT_CACHE_BUILDS, "0.6.18");
        assert_eq!(cuda_label_for(labels, (12, 8)), Some("cu128"));
        assert_eq!(cuda_label_for(labels, (12, 9)), Some("cu129"));
        assert_eq!(cuda_label_for(labels, (13, 2)), Some("cu130"));
        assert_eq!(cuda_label_for(labels, (13, 4)), Some("cu134"));
        assert_eq!(cuda_label_for(labels, (12, 6)), None);
        assert_eq!(cuda_label_for(labels, (11, 8)), None);
        assert_eq!(cuda_of_label("cu118"), Some((11, 8)));
        assert_eq!(cuda_of_label("cpu"), None);
        assert_eq!(cuda_of_label("cu1x8"), None);
    }
}
