//! SGLang: a Python environment from PyPI, CUDA 13 from 0.5 on.

use super::fit::{
    Candidate, GpuNeeds, MIN_DRIVER_FOR_CUDA12, MIN_DRIVER_FOR_CUDA13, gpu_arch, pick,
};
use super::{
    Build, Host, PYTHON_FOR_ENGINES, RecipeError, compiler_packages, strings, version_before,
};

/// The lowest manylinux tag at which every wheel of an SGLang version's
/// environment exists, by the first version it holds for. Read from PyPI
/// on 2026-12-05 (issue #29): up to 0.5.10 SGLang is a pure wheel
/// (`sglang-0.5.10-py3-none-any.whl`) and `sglang==0.5.10` resolves at
/// 2_28; from 0.5.11 it publishes `cp312-cp312-manylinux_2_34` wheels only
/// (0.5.11, 0.5.12 … 0.5.23; x86_64 and aarch64 alike), and 0.5.23
/// resolves first at 2_34.
const SGLANG_MANYLINUX: [(&str, &str); 2] = [("0", "2_28"), ("0.5.11", "2_34")];

/// The manylinux tag a bundle resolves an SGLang version's environment
/// for by default (see [`SGLANG_MANYLINUX`]).
pub(super) fn manylinux(version: &str, _arch: &str) -> &'static str {
    super::vllm::since(&SGLANG_MANYLINUX, version)
}

/// The first SGLang built for CUDA 13.
const SGLANG_CUDA13_SINCE: &str = "0.5";

pub(super) fn candidates(
    version: &str,
    variant: Option<&str>,
    h: &Host,
) -> Result<Vec<Build>, RecipeError> {
    gpu_arch("SGLang", h)?;
    let mut b = Build {
        variant: "cu13".to_string(),
        python: PYTHON_FOR_ENGINES.to_string(),
        requirements: vec![format!("sglang=={version}")],
        // SGLang is launched as a module, so what the agent is given is the
        // environment's interpreter, and the proof is importing it.
        binary: "python".to_string(),
        version_args: strings(&["-c", "import sglang; print('sglang', sglang.__version__)"]),
        packages: compiler_packages(),
        free_gb: 25,
        gpu_check: true,
        ..Build::default()
    };
    let mut needs = GpuNeeds::new(MIN_DRIVER_FOR_CUDA13, 7.5);
    if version_before(version, SGLANG_CUDA13_SINCE) {
        b.variant = "cu12".to_string();
        needs = GpuNeeds::new(MIN_DRIVER_FOR_CUDA12, 7.0);
    }
    let what = format!("SGLang {version}");
    pick(
        &what,
        variant,
        vec![Candidate {
            build: b,
            needs,
            what: what.clone(),
        }],
        h,
    )
}
