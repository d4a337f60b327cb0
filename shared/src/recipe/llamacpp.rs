//! llama.cpp: archives from ggml-org/llama.cpp's GitHub releases.
//!
//! On an NVIDIA node, the GPU builds best first: CUDA 13.3 (driver 580,
//! Turing and newer), CUDA 12.8 on x64 (Maxwell to Blackwell; driver 570 for
//! the GPUs it ships as PTX, 525 for those it ships as machine code), and
//! Vulkan, which runs on any card whose driver has Vulkan — the generations
//! CUDA builds no longer cover. Never the CPU build on an NVIDIA node: that
//! is a GPU placement served on the CPU, which is what installing checks for.
//! The CPU build where there is no NVIDIA GPU.
//!
//! The published Linux builds are built on Ubuntu, but nothing about them is
//! Ubuntu's: they need glibc 2.34 and the libstdc++ of GCC 12. So the
//! distribution's name decides nothing here; the build is tried everywhere,
//! and ldd says whether the system can load it.

use super::fit::{Candidate, GpuNeeds, MIN_DRIVER_FOR_CUDA12, MIN_DRIVER_FOR_CUDA13, pick, tenths};
use super::{Build, Host, RecipeError, packages, strings};

/// The GPUs llama.cpp's CUDA 12.8 build carries machine code for. The rest
/// of what it covers — 5.0, 6.1, 7.0, 7.5, 8.0, 9.0 — it carries as PTX,
/// which a driver older than the CUDA it came from cannot compile.
const CUDA12_REAL: [f64; 3] = [8.6, 8.9, 12.0];

/// The driver the CUDA 12.8 build's PTX needs: as new as CUDA 12.8 (NVIDIA's
/// CUDA 12.8 release notes: driver 570.26 or newer). The server images of
/// the same CUDA need it too ([`super::images`]).
pub(super) const MIN_DRIVER_FOR_CUDA12_PTX: u64 = 570;

pub(super) fn candidates(
    version: &str,
    variant: Option<&str>,
    h: &Host,
) -> Result<Vec<Build>, RecipeError> {
    let arch = match h.arch.as_str() {
        "amd64" => "x64",
        "arm64" => "arm64",
        _ => {
            return Err(RecipeError::UnknownArch {
                engine: "llama.cpp".to_string(),
                arch: h.arch.clone(),
                published: &["amd64", "arm64"],
            });
        }
    };
    let base = |variant: &str, assets: Vec<String>| Build {
        variant: variant.to_string(),
        assets,
        // Everything else the build links is in the archive or in any
        // current glibc system; OpenMP's runtime is the one a cloud image
        // lacks, and the server does not start without it.
        packages: packages(&[("deb", &["libgomp1"]), ("rpm", &["libgomp"])]),
        binary: "llama-server".to_string(),
        // The x64 archive carries a backend per CPU generation and loads the
        // best one, down to SSE4.2. Below AVX2 it runs, several times slower.
        cpu_flags: if arch == "x64" {
            strings(&["avx2"])
        } else {
            Vec::new()
        },
        ..Build::default()
    };
    if h.driver().is_none() {
        return pick(
            "llama.cpp",
            variant,
            vec![Candidate {
                build: base(
                    "cpu",
                    vec![format!("llama-{version}-bin-ubuntu-{arch}.tar.gz")],
                ),
                needs: GpuNeeds::default(),
                what: "llama.cpp".to_string(),
            }],
            h,
        );
    }
    let cuda = |cv: &str| {
        let name = format!("bin-ubuntu-cuda-{cv}-{arch}.tar.gz");
        // The release carries the CUDA runtime beside the build, so the node
        // needs a driver and nothing else — no toolkit.
        Build {
            gpu_backend: "libggml-cuda.so".to_string(),
            ..base(
                &format!("cuda-{cv}"),
                vec![
                    format!("llama-{version}-{name}"),
                    format!("cudart-llama-{version}-{name}"),
                ],
            )
        }
    };
    let vulkan = Build {
        gpu_backend: "libggml-vulkan.so".to_string(),
        packages: packages(&[
            ("deb", &["libgomp1", "libvulkan1"]),
            ("rpm", &["libgomp", "vulkan-loader"]),
        ]),
        ..base(
            "vulkan",
            vec![format!("llama-{version}-bin-ubuntu-vulkan-{arch}.tar.gz")],
        )
    };
    let cc = tenths(h.min_compute_capability);
    let cuda12_driver = if CUDA12_REAL.iter().any(|real| tenths(*real) == cc) {
        MIN_DRIVER_FOR_CUDA12
    } else {
        MIN_DRIVER_FOR_CUDA12_PTX
    };
    let mut cands = vec![Candidate {
        build: cuda("13.3"),
        needs: GpuNeeds::new(MIN_DRIVER_FOR_CUDA13, 7.5),
        what: "llama.cpp built for CUDA 13.3".to_string(),
    }];
    if arch == "x64" {
        cands.push(Candidate {
            build: cuda("12.8"),
            needs: GpuNeeds::new(cuda12_driver, 5.0),
            what: "llama.cpp built for CUDA 12.8".to_string(),
        });
    }
    cands.push(Candidate {
        build: vulkan,
        needs: GpuNeeds::default(),
        what: "llama.cpp built for Vulkan".to_string(),
    });
    pick("llama.cpp", variant, cands, h)
}
