//! Whether a build fits a machine's NVIDIA side, and choosing among builds.
//!
//! What builds need of the NVIDIA side of a machine, read from what each
//! project publishes and how it was built:
//!
//! - CUDA 13 needs driver 580; CUDA 12 builds run on driver 525 and newer, by
//!   CUDA's minor version compatibility — except code shipped only as PTX,
//!   which the driver compiles and so needs a driver as new as the CUDA it
//!   was compiled with.
//! - Which GPUs a build has kernels for is the build's own list, not what its
//!   CUDA supports.

use super::{Build, Host, Misfit, RecipeError, leading_int};

pub(super) const MIN_DRIVER_FOR_CUDA13: u64 = 580;
pub(super) const MIN_DRIVER_FOR_CUDA12: u64 = 525;

/// A compute capability in tenths: 8.6 is 86.
///
/// The Go table compares capabilities as floats, including by equality
/// (`slices.Contains(llamaCUDA12Real, cc)`). That only works while every
/// value is the very literal the table holds: a capability read as "8.6"
/// and one computed from major 8 and minor 6 (8.0 + 0.6) need not be the
/// same double — a capability kept as f32 somewhere on its way, widened
/// back, is 8.600000381469727 — and then 8.6 would not be "in" the list, or
/// 8.7 would compare below itself. Capabilities are major.minor with one decimal digit, so
/// rounding to tenths makes every comparison exact. NaN becomes 0, which the
/// table treats as unknown.
pub(super) fn tenths(cc: f64) -> i64 {
    (cc * 10.0).round() as i64
}

/// What one build needs of a machine's GPUs and driver; zero is no need.
#[derive(Debug, Clone, Copy, Default)]
pub(super) struct GpuNeeds {
    pub driver: u64,
    pub cc: f64,
}

impl GpuNeeds {
    pub(super) fn new(driver: u64, cc: f64) -> Self {
        GpuNeeds { driver, cc }
    }

    /// Why `h` cannot run the build called `what`, or `Ok`. An unknown
    /// driver version or capability refuses nothing: the installer still
    /// checks the build computes on the GPU.
    pub(super) fn fits(&self, what: &str, h: &Host) -> Result<(), Misfit> {
        let driver = h.driver().unwrap_or("");
        let major = leading_int(driver);
        if self.driver > 0 && major > 0 && major < self.driver {
            return Err(Misfit::Driver {
                what: what.to_string(),
                need: self.driver,
                have: driver.to_string(),
            });
        }
        let (need, have) = (tenths(self.cc), tenths(h.min_compute_capability));
        if need > 0 && have > 0 && have < need {
            return Err(Misfit::Capability {
                what: what.to_string(),
                need: self.cc,
                have: h.min_compute_capability,
            });
        }
        Ok(())
    }
}

/// A build, what it needs, and what to call it when saying why not.
pub(super) struct Candidate {
    pub build: Build,
    pub needs: GpuNeeds,
    pub what: String,
}

/// Keeps the candidates a machine can run, in order, and those a variant
/// chosen for the node names; with none left, says why each went.
pub(super) fn pick(
    engine: &str,
    variant: Option<&str>,
    cands: Vec<Candidate>,
    h: &Host,
) -> Result<Vec<Build>, RecipeError> {
    let names: Vec<String> = cands.iter().map(|c| c.build.variant.clone()).collect();
    let mut out = Vec::new();
    let mut why = Vec::new();
    for c in cands {
        if variant.is_some_and(|v| v != c.build.variant) {
            continue;
        }
        match c.needs.fits(&c.what, h) {
            Ok(()) => out.push(c.build),
            Err(e) => why.push(e),
        }
    }
    if !out.is_empty() {
        return Ok(out);
    }
    if let (true, Some(v)) = (why.is_empty(), variant) {
        return Err(RecipeError::UnknownVariant {
            what: engine.to_string(),
            variant: v.to_string(),
            available: names,
        });
    }
    Err(RecipeError::NoBuildHere {
        what: engine.to_string(),
        reasons: why,
    })
}

/// Whether a Python GPU engine is published for this machine's architecture
/// and whether the machine has an NVIDIA GPU at all — without one, the
/// engine is [`RecipeError::NotHere`], not a failure.
pub(super) fn gpu_arch(engine: &str, h: &Host) -> Result<(), RecipeError> {
    if !matches!(h.arch.as_str(), "amd64" | "arm64") {
        return Err(RecipeError::UnknownArch {
            engine: engine.to_string(),
            arch: h.arch.clone(),
            published: &["amd64", "arm64"],
        });
    }
    if h.driver().is_none() {
        return Err(RecipeError::NotHere {
            reason: format!(
                "{engine} runs on NVIDIA GPUs and this node has none; it serves llama.cpp models"
            ),
        });
    }
    Ok(())
}
