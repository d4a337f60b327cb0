//! The Hub's kernel repositories (`kernels` 0.17.x): which build folders a
//! node loads. Which nodes a bundle's own Python environments describe is
//! the manifest's to say (`manifest::kernel_targets`).
//!
//! Invariant: a bundle carries a kernel's build folders for the nodes it
//! is made for — the torch, CUDA and CPU of the environments it carries, or
//! the folders the operator names — and every choice is made by the same
//! rules the client applies when it loads a kernel.

mod node;
mod variant;

pub use variant::{Arch, Backend, BadVariant, Framework, Target, Variant};

/// `amd64` → `x86_64`, `arm64` → `aarch64`: the recipe's names to the
/// client's (`platform.machine()`).
pub fn platform_of(arch: &str) -> &str {
    crate::recipe::machine_of(arch).unwrap_or(arch)
}
