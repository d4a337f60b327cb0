//! vLLM: a Python environment, CUDA 13 from PyPI where the driver allows and
//! the same version's CUDA 12.9 wheel from its GitHub release where not.

use super::fit::{
    Candidate, GpuNeeds, MIN_DRIVER_FOR_CUDA12, MIN_DRIVER_FOR_CUDA13, gpu_arch, pick, tenths,
};
use super::{
    Build, Host, PYTHON_FOR_ENGINES, RecipeError, Wheel, compiler_packages, strings, version_before,
};

/// The builds of vLLM a node can be given by choice: CUDA 13 from PyPI, and
/// CUDA 12.9 from the project's GitHub release — the same version, built for
/// drivers CUDA 13 does not run on.
pub const VLLM_VARIANTS: [&str; 2] = ["cu13", "cu129"];

/// Where the CUDA 12.9 build's torch is published. PyPI's torch is built for
/// CUDA 13; the cu129 vLLM wheel needs this one.
const PYTORCH_CU129: &str = "https://download.pytorch.org/whl/cu129";

/// What is taken from PyTorch's index: the builds for one CUDA version,
/// which PyPI does not have.
const PYTORCH_PACKAGES: [&str; 3] = ["torch", "torchvision", "torchaudio"];

/// The first vLLM whose PyPI build is CUDA 13, read from its releases:
/// 0.19.1 publishes "+cu130" beside a CUDA 12 default, 0.20.0 "+cu129"
/// beside a CUDA 13 one.
const VLLM_CUDA13_SINCE: &str = "0.20";

/// The lowest manylinux tag at which every wheel of a vLLM version's
/// environment exists, by the first version it holds for (oldest first).
/// Read from PyPI on 2026-12-05 (issue #29): the tags of vLLM's own x86_64
/// wheels (`pip install --dry-run --report` of `vllm==V` for each
/// manylinux tag) and uv's resolution of `vllm==V` at successive tags:
/// 0.19.1 publishes `vllm-0.19.1-cp38-abi3-manylinux_2_31_x86_64.whl`;
/// 0.20.0 and 0.20.2 only `manylinux_2_35` (0.20.0 resolves first at
/// 2_35); from 0.22.0 (0.21.0 has no x86_64 wheel) vLLM's own wheel is
/// `manylinux_2_28` but `llguidance`'s need 2_31 (0.22.0, 0.25.0, 0.30.0
/// and 0.33.0 resolve first at 2_31). On arm64, `tilelang` has no wheel
/// below manylinux_2_34 (vLLM 0.33.0 for aarch64 resolved first at 2_34 in
/// `bench/online-vllm.sh`'s run of 2026-12-03, README).
const VLLM_MANYLINUX: [(&str, &str); 3] = [("0", "2_31"), ("0.20", "2_35"), ("0.21", "2_31")];
/// arm64's rows where they differ (see [`VLLM_MANYLINUX`]).
const VLLM_MANYLINUX_ARM64: [(&str, &str); 3] = [("0", "2_31"), ("0.20", "2_35"), ("0.21", "2_34")];

/// The manylinux tag a bundle resolves a vLLM version's environments for
/// on `arch` by default (see [`VLLM_MANYLINUX`]).
pub(super) fn manylinux(version: &str, arch: &str) -> &'static str {
    if arch == "arm64" {
        since(&VLLM_MANYLINUX_ARM64, version)
    } else {
        since(&VLLM_MANYLINUX, version)
    }
}

/// The figure of the last row whose version `version` is not before.
pub(super) fn since(rows: &[(&str, &'static str)], version: &str) -> &'static str {
    rows.iter()
        .rev()
        .find(|(from, _)| !version_before(version, from))
        .map_or("", |(_, tag)| tag)
}

/// The oldest GPU a vLLM version's builds have kernels for, from its release
/// pipeline: on x86, 7.0 (Volta) up to 0.19.1 and 7.5 from 0.20.0, CUDA 12.9
/// build included; on arm64, built for Grace machines, 8.7 before 0.20 and
/// 8.0 since.
fn min_compute(version: &str, arch: &str) -> f64 {
    let old = version_before(version, VLLM_CUDA13_SINCE);
    match (arch == "arm64", old) {
        (true, true) => 8.7,
        (true, false) => 8.0,
        (false, true) => 7.0,
        (false, false) => 7.5,
    }
}

/// The newest vLLM built for GPUs of a compute capability and newer, on an
/// architecture, for GPUs older than every build of the version asked for:
/// a V100 gets 0.19.1, where 0.20 and later have nothing for it.
struct NewestFor {
    arch: &'static str,
    /// The oldest GPU it covers.
    from: f64,
    version: &'static str,
}

const NEWEST_FOR: [NewestFor; 1] = [NewestFor {
    arch: "amd64",
    from: 7.0,
    version: "0.19.1",
}];

/// The compute capabilities of the GPUs older than a current vLLM's builds
/// that an older vLLM is still built for, on an architecture: what a bundle
/// asks the table as, so it carries the fallback environment too.
pub(super) fn older_gpus(arch: &str) -> Vec<f64> {
    NEWEST_FOR
        .iter()
        .filter(|n| n.arch == arch)
        .map(|n| n.from)
        .collect()
}

/// The vLLM builds for a machine.
///
/// The version asked for, in the build the machine runs: CUDA 13 where the
/// driver allows, the same version's CUDA 12.9 build where it does not. One
/// version across the cluster wherever the GPUs allow it, because the flags
/// llmgw builds are checked against it. Where they do not — GPUs older than
/// every build of that version — the newest version built for them, said so
/// beside the installation: vLLM on a V100 at all, rather than not.
pub(super) fn candidates(
    version: &str,
    variant: Option<&str>,
    h: &Host,
) -> Result<Vec<Build>, RecipeError> {
    gpu_arch("vLLM", h)?;
    let cc = h.min_compute_capability;
    let (mut v, mut note) = (version.to_string(), String::new());
    if tenths(cc) > 0 && tenths(cc) < tenths(min_compute(version, &h.arch)) {
        let older = NEWEST_FOR
            .iter()
            .filter(|n| n.arch == h.arch && tenths(cc) >= tenths(n.from))
            .map(|n| n.version)
            .next_back();
        let Some(older) = older else {
            return Err(RecipeError::NoBuildForGpu {
                engine: "vLLM".to_string(),
                cc,
                arch: h.arch.clone(),
            });
        };
        note = format!(
            "vLLM {older}, the newest built for compute capability {cc:.1}, instead of {version}"
        );
        v = older.to_string();
    }
    let pypi = |variant: &str| Build {
        variant: variant.to_string(),
        python: PYTHON_FOR_ENGINES.to_string(),
        requirements: vec![format!("vllm=={v}")],
        binary: "vllm".to_string(),
        packages: compiler_packages(),
        free_gb: 25,
        gpu_check: true,
        note: note.clone(),
        version: if v != version {
            v.clone()
        } else {
            String::new()
        },
        ..Build::default()
    };
    let min_cc = min_compute(&v, &h.arch);
    if version_before(&v, VLLM_CUDA13_SINCE) {
        // PyPI's own build is CUDA 12, and is the one there is; asked for
        // cu129, this is it.
        let variant = variant.map(|x| if x == "cu129" { "cu12" } else { x });
        let what = format!("vLLM {v}");
        return pick(
            &what,
            variant,
            vec![Candidate {
                build: pypi("cu12"),
                needs: GpuNeeds::new(MIN_DRIVER_FOR_CUDA12, min_cc),
                what: what.clone(),
            }],
            h,
        );
    }
    let wheel_arch = if h.arch == "arm64" {
        "aarch64"
    } else {
        "x86_64"
    };
    let cu129 = Build {
        requirements: Vec::new(),
        // Found in the release's assets rather than named: the manylinux tag
        // in the file's name changes between versions (2_28, 2_31, 2_34).
        wheel: Some(Wheel {
            project: "vllm".to_string(),
            repo: "vllm-project/vllm".to_string(),
            tag: format!("v{v}"),
            prefix: format!("vllm-{v}+cu129-"),
            suffix: format!("_{wheel_arch}.whl"),
        }),
        extra_index: PYTORCH_CU129.to_string(),
        index_packages: strings(&PYTORCH_PACKAGES),
        ..pypi("cu129")
    };
    pick(
        &format!("vLLM {v}"),
        variant,
        vec![
            Candidate {
                build: pypi("cu13"),
                needs: GpuNeeds::new(MIN_DRIVER_FOR_CUDA13, min_cc),
                what: format!("vLLM {v} built for CUDA 13"),
            },
            Candidate {
                build: cu129,
                needs: GpuNeeds::new(MIN_DRIVER_FOR_CUDA12, min_cc),
                what: format!("vLLM {v} built for CUDA 12.9"),
            },
        ],
        h,
    )
}
