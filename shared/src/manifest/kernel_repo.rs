//! What a manifest says of kernel repositories: that each carries only the
//! build folders it names, each a variant the client parses; and which
//! nodes its Python environments describe, for choosing those folders.
//!
//! Invariant: a kernel repository of a valid manifest lists no file under
//! `build/` outside the folders it names, so the mirror never lists a
//! folder a node would pick and not find.

use super::{HfRepo, ManifestError, PythonEnv, RepoKind};
use crate::kernels::{Backend, Target, Variant};

/// A kernel repository as a manifest records it: of kind kernel exactly
/// when it says which build folders it carries, each folder's name a
/// variant the client parses, and every file under `build/` inside one of
/// them (so the mirror never lists a folder a node would pick and not find).
pub fn check_kernel_repo(repo: &HfRepo) -> Result<(), ManifestError> {
    let kernel = match (&repo.kernel, repo.kind) {
        (None, RepoKind::Kernel) | (Some(_), RepoKind::Model | RepoKind::Dataset) => {
            return Err(ManifestError::Inconsistent(format!(
                "repository {} is of kind {} but {} which build folders it carries",
                repo.id,
                repo.kind.singular(),
                if repo.kernel.is_some() {
                    "says"
                } else {
                    "does not say"
                }
            )));
        }
        (None, _) => return Ok(()),
        (Some(k), _) => k,
    };
    for name in &kernel.variants {
        Variant::parse(name)
            .map_err(|e| ManifestError::Inconsistent(format!("kernel {}: {e}", repo.id)))?;
    }
    for f in &repo.files {
        let Some(rest) = f.path.strip_prefix("build/") else {
            continue;
        };
        let folder = rest.split('/').next().unwrap_or_default();
        if !kernel.variants.iter().any(|v| v == folder) || !rest.contains('/') {
            return Err(ManifestError::Inconsistent(format!(
                "kernel {} carries {} outside the build folders it names ({})",
                repo.id,
                crate::shown(&f.path),
                kernel.variants.join(", ")
            )));
        }
    }
    Ok(())
}

/// The node each environment describes: its CPU, the torch it resolved
/// and the backend that torch is built for — from the wheel's local
/// version (`+cu129`, `+cpu`, as PyTorch's own indexes name builds), else
/// from the CUDA runtime the environment resolved with it (PyPI's torch
/// depends on `nvidia-cuda-runtime-cu12==12.8.*` or, for CUDA 13,
/// `nvidia-cuda-runtime==13.0.*`), else the CPU. An environment without
/// torch describes no kernel user and is skipped.
pub fn kernel_targets(envs: &[PythonEnv]) -> Vec<Target> {
    let mut targets: Vec<Target> = Vec::new();
    for env in envs {
        let Some(torch) = env.files.iter().find(|f| f.project == "torch") else {
            continue;
        };
        let (public, local) = match torch.version.split_once('+') {
            Some((p, l)) => (p, Some(l)),
            None => (torch.version.as_str(), None),
        };
        let mut numbers = public.split('.').map(str::parse::<u32>);
        let (Some(Ok(major)), Some(Ok(minor))) = (numbers.next(), numbers.next()) else {
            continue;
        };
        let backend = local
            .and_then(backend_named)
            .or_else(|| cuda_runtime(env))
            .unwrap_or(Backend::Cpu);
        let target = Target {
            platform: crate::kernels::platform_of(&env.arch).to_string(),
            torch: Some((major, minor)),
            backend,
        };
        if !targets.contains(&target) {
            targets.push(target);
        }
    }
    targets
}

/// The CUDA version of the runtime an environment resolved, if any.
fn cuda_runtime(env: &PythonEnv) -> Option<Backend> {
    let f = env.files.iter().find(|f| {
        f.project == "nvidia-cuda-runtime" || f.project.starts_with("nvidia-cuda-runtime-cu")
    })?;
    let mut numbers = f.version.split('.').map(str::parse::<u32>);
    match (numbers.next(), numbers.next()) {
        (Some(Ok(major)), Some(Ok(minor))) => Some(Backend::Cuda(major, minor)),
        _ => None,
    }
}

/// A local version label: `cu129` → CUDA 12.9, `cpu` → the CPU.
fn backend_named(s: &str) -> Option<Backend> {
    if s == "cpu" {
        return Some(Backend::Cpu);
    }
    let digits = s.strip_prefix("cu").filter(|d| d.len() == 3)?;
    Some(Backend::Cuda(
        digits[..2].parse().ok()?,
        digits[2..].parse().ok()?,
    ))
}

#[cfg(test)]
#[path = "kernel_repo_tests.rs"]
mod tests;
