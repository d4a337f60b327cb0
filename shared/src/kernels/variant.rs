//! The names of a Hub kernel's build folders (`build/<variant>/`) and which
//! node loads which, as the `kernels` library (0.17.x, `variants.py`)
//! decides it: a `torch29-cxx11-cu129-x86_64-linux` folder is loaded by a
//! Linux x86_64 node with torch 2.9 built for CUDA 12.x (x ≥ 9); a noarch
//! `torch-cpu` folder by any node whose backend is the CPU.
//!
//! Invariant: [`Target::accepts`] says yes exactly where the client's
//! `_check_variants` would, so a bundle carries the folders a node will ask
//! for and no other; a name that does not parse is refused by name (the
//! client would skip it with a warning, which offline is a silent gap).

use std::fmt;

/// A build folder's name the client would not load: no variant.
#[derive(Debug, thiserror::Error)]
#[error(
    "{} is no kernel build variant: expected a folder name such as \
     torch29-cxx11-cu129-x86_64-linux, torch-stable-abi210-cpu-aarch64-linux or torch-cpu",
    crate::shown(.0)
)]
pub struct BadVariant(pub String);

/// A build variant, parsed from its folder name.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Variant {
    /// The folder name as the repository spells it.
    pub name: String,
    /// What the build was made against.
    pub framework: Framework,
    /// `None` for a noarch build (`torch-cpu`, `torch-universal`).
    pub arch: Option<Arch>,
    /// A noarch build's backend name (`cpu`, `cuda`, `universal`, …).
    pub noarch_backend: Option<String>,
}

/// What a build was compiled against.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Framework {
    /// `torchXY[-cxx11|-cxx98]`: exactly torch X.Y, with that C++ ABI if named.
    Torch {
        /// torch's (major, minor).
        version: (u32, u32),
        /// `Some(true)` for `-cxx11`, `Some(false)` for `-cxx98`.
        cxx11: Option<bool>,
    },
    /// `torch-stable-abiXY`: torch's stable ABI, loaded by torch X.Y or newer.
    TorchStableAbi {
        /// The oldest torch (major, minor) that loads it.
        version: (u32, u32),
    },
    /// `tvm-ffiXY`: Apache TVM FFI X.Y.
    TvmFfi {
        /// tvm-ffi's (major, minor).
        version: (u32, u32),
    },
    /// `torch-<backend>`: pure Python, any torch.
    TorchNoarch,
}

/// The machine part of an arch build: `cu129-x86_64-linux`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Arch {
    /// The compute backend, with its version where it has one.
    pub backend: Backend,
    /// `x86_64`, `aarch64`.
    pub platform: String,
    /// `linux`, `darwin`, `windows`.
    pub os: String,
}

/// A compute backend, as a variant names it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Backend {
    /// `cpu`.
    Cpu,
    /// `cuXY`: CUDA X.Y.
    Cuda(u32, u32),
    /// `rocmXY`.
    Rocm(u32, u32),
    /// `xpuXYZW`.
    Xpu(u32, u32),
    /// `cannXY`.
    Cann(u32, u32),
    /// `metal`.
    Metal,
    /// `neuron`.
    Neuron,
}

impl fmt::Display for Backend {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Backend::Cpu => write!(f, "cpu"),
            Backend::Cuda(a, b) => write!(f, "cu{a}{b}"),
            Backend::Rocm(a, b) => write!(f, "rocm{a}{b}"),
            Backend::Xpu(a, b) => write!(f, "xpu{a}{b}"),
            Backend::Cann(a, b) => write!(f, "cann{a}{b}"),
            Backend::Metal => write!(f, "metal"),
            Backend::Neuron => write!(f, "neuron"),
        }
    }
}

/// A node as the client sees it: its CPU, its torch and its backend.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Target {
    /// `x86_64`, `aarch64`.
    pub platform: String,
    /// torch's major and minor version; `None` where torch is not installed.
    pub torch: Option<(u32, u32)>,
    /// The backend torch was built for (CPU where it has none).
    pub backend: Backend,
}

impl fmt::Display for Target {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self.torch {
            Some((a, b)) => write!(f, "torch {a}.{b}, {} on {}", self.backend, self.platform),
            None => write!(f, "no torch, {} on {}", self.backend, self.platform),
        }
    }
}

impl Variant {
    /// Parses a build folder's name as the client does (`parse_variant`),
    /// refusing what it would skip.
    pub fn parse(name: &str) -> Result<Variant, BadVariant> {
        parse(name).ok_or_else(|| BadVariant(name.to_string()))
    }
}

fn parse(name: &str) -> Option<Variant> {
    let parts: Vec<&str> = name.split('-').collect();
    let arch_variant = |framework, rest: &[&str]| {
        Some(Variant {
            name: name.to_string(),
            framework,
            arch: Some(arch(rest)?),
            noarch_backend: None,
        })
    };
    match parts.as_slice() {
        ["torch", "stable", abi, rest @ ..] => {
            let version = two_numbers(abi.strip_prefix("abi")?, Split::MajorOneDigit)?;
            arch_variant(Framework::TorchStableAbi { version }, rest)
        }
        ["torch", backend @ ..] if !backend.is_empty() && backend.iter().all(|b| is_word(b)) => {
            Some(Variant {
                name: name.to_string(),
                framework: Framework::TorchNoarch,
                arch: None,
                noarch_backend: Some(backend.join("-")),
            })
        }
        ["tvm", ffi, rest @ ..] => {
            let version = two_numbers(ffi.strip_prefix("ffi")?, Split::MajorOneDigit)?;
            arch_variant(Framework::TvmFfi { version }, rest)
        }
        [torch, abi @ ("cxx11" | "cxx98"), rest @ ..] => {
            let version = two_numbers(torch.strip_prefix("torch")?, Split::MajorOneDigit)?;
            let cxx11 = Some(*abi == "cxx11");
            arch_variant(Framework::Torch { version, cxx11 }, rest)
        }
        [torch, rest @ ..] => {
            let version = two_numbers(torch.strip_prefix("torch")?, Split::MajorOneDigit)?;
            arch_variant(
                Framework::Torch {
                    version,
                    cxx11: None,
                },
                rest,
            )
        }
        [] => None,
    }
}

/// `cu129-x86_64-linux`: a backend, a CPU and an OS, each non-empty.
fn arch(parts: &[&str]) -> Option<Arch> {
    let [backend, platform, os] = parts else {
        return None;
    };
    if !is_word(platform) || !is_word(os) {
        return None;
    }
    Some(Arch {
        backend: backend_of(backend)?,
        platform: platform.to_string(),
        os: os.to_string(),
    })
}

/// Letters, digits and `_`, at least one: a part of a variant name.
fn is_word(s: &str) -> bool {
    !s.is_empty() && s.bytes().all(|b| b.is_ascii_alphanumeric() || b == b'_')
}

/// A backend as a variant (or the client's user agent) names it.
pub(super) fn backend_of(s: &str) -> Option<Backend> {
    let versioned = |prefix: &str| two_numbers(s.strip_prefix(prefix)?, Split::MinorOneDigit);
    Some(match s {
        "cpu" => Backend::Cpu,
        "metal" => Backend::Metal,
        "neuron" => Backend::Neuron,
        _ if s.starts_with("rocm") => {
            let (a, b) = versioned("rocm")?;
            Backend::Rocm(a, b)
        }
        _ if s.starts_with("xpu") => {
            let (a, b) = versioned("xpu")?;
            Backend::Xpu(a, b)
        }
        _ if s.starts_with("cann") => {
            let (a, b) = versioned("cann")?;
            Backend::Cann(a, b)
        }
        _ if s.starts_with("cu") => {
            let (a, b) = versioned("cu")?;
            Backend::Cuda(a, b)
        }
        _ => return None,
    })
}

/// How the client's regexes split a version's digits.
#[derive(Clone, Copy)]
enum Split {
    /// `torch(\d)(\d+)`: one digit of major (`torch210` is 2.10).
    MajorOneDigit,
    /// `cu(\d+)(\d+)`: one digit of minor (`cu129` is 12.9, `cu130` 13.0).
    MinorOneDigit,
}

/// The digits of `s` as (major, minor), split as the client splits them.
fn two_numbers(s: &str, split: Split) -> Option<(u32, u32)> {
    if s.len() < 2 || !s.bytes().all(|b| b.is_ascii_digit()) {
        return None;
    }
    let at = match split {
        Split::MajorOneDigit => 1,
        Split::MinorOneDigit => s.len() - 1,
    };
    Some((s[..at].parse().ok()?, s[at..].parse().ok()?))
}

impl Target {
    /// Whether a node like this loads `v`; if not, why (the client's own
    /// reasons, in its words).
    pub fn accepts(&self, v: &Variant) -> Result<(), String> {
        let Some(arch) = &v.arch else {
            let name = v.noarch_backend.as_deref().unwrap_or_default();
            let mine = noarch_name(self.backend);
            return if name == mine || name == "universal" {
                Ok(())
            } else {
                Err(format!(
                    "backend ({name}) does not match system backend ({mine}) and is not universal"
                ))
            };
        };
        if arch.platform != self.platform {
            return Err(format!(
                "CPU ({}) does not match system CPU ({})",
                arch.platform, self.platform
            ));
        }
        if arch.os != "linux" {
            return Err(format!("OS ({}) does not match system OS (linux)", arch.os));
        }
        match v.framework {
            Framework::Torch { version, cxx11 } => {
                if Some(version) != self.torch {
                    return Err(format!(
                        "Torch version ({}.{}) does not match environment Torch version ({})",
                        version.0,
                        version.1,
                        shown_torch(self.torch)
                    ));
                }
                // torch's Linux wheels are built with the C++11 ABI since 2.7.
                if cxx11 == Some(false) {
                    return Err(
                        "Torch CXX11 ABI (False) does not match environment Torch CXX11 ABI (True)"
                            .to_string(),
                    );
                }
            }
            Framework::TorchStableAbi { version } => {
                if self.torch.is_none_or(|t| version > t) {
                    return Err(format!(
                        "Torch stable ABI version ({}.{}) is too new for environment Torch version ({})",
                        version.0,
                        version.1,
                        shown_torch(self.torch)
                    ));
                }
            }
            Framework::TvmFfi { .. } => {
                return Err("tvm-ffi builds are not loaded by torch environments".to_string());
            }
            Framework::TorchNoarch => {}
        }
        match (self.backend, arch.backend) {
            (Backend::Cuda(sm, sn), Backend::Cuda(m, n)) if m != sm || n > sn => Err(format!(
                "CUDA version ({m}.{n}) is not compatible with system CUDA version ({sm}.{sn})"
            )),
            (Backend::Cuda(..), Backend::Cuda(..)) => Ok(()),
            (mine, theirs) if mine.to_string() != theirs.to_string() => Err(format!(
                "backend ({theirs}) does not match selected backend ({mine})"
            )),
            _ => Ok(()),
        }
    }
}

/// The backend's name as a noarch folder spells it.
fn noarch_name(b: Backend) -> &'static str {
    match b {
        Backend::Cpu => "cpu",
        Backend::Cuda(..) => "cuda",
        Backend::Rocm(..) => "rocm",
        Backend::Xpu(..) => "xpu",
        Backend::Cann(..) => "npu",
        Backend::Metal => "metal",
        Backend::Neuron => "neuron",
    }
}

fn shown_torch(t: Option<(u32, u32)>) -> String {
    t.map_or("None".to_string(), |(a, b)| format!("{a}.{b}"))
}

#[cfg(test)]
#[path = "variant_tests.rs"]
mod tests;
