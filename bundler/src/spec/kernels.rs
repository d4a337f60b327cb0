//! `--kernel ORG/NAME[@vN|@REV][:VARIANT,…]` and `--kernels-lock PATH`: the
//! Hub kernel repositories a bundle carries, as [`RepoSpec`]s of kind
//! kernel.
//!
//! Invariant: a build folder named here parses as a variant the client
//! loads (so none escapes `build/`), and a lock file is read bounded and
//! every name in it checked before anything is asked of the Hub.

use std::io::Read;
use std::path::Path;

use llmgw_shared::kernels::Variant;
use llmgw_shared::manifest::RepoKind;
use llmgw_shared::{check_ref_name, check_repo_id, is_sha1_hex};
use serde::Deserialize;

use super::RepoSpec;
use crate::error::{CreateError, KernelError};

/// A `kernels.lock` larger than this is refused unread (one entry is
/// about 150 bytes; a project locks a handful of kernels).
const MAX_LOCK: u64 = 1 << 20;

/// Adds the kernels asked for, by flag and by lock file, to `repos`.
pub(super) fn add(
    flags: &[String],
    lock: Option<&Path>,
    repos: &mut Vec<RepoSpec>,
) -> Result<(), CreateError> {
    for text in flags {
        repos.push(parse_kernel(text)?);
    }
    if let Some(lock) = lock {
        for mut spec in read_lock(lock)? {
            // Folders named for the kernel by flag are the folders wherever
            // it is carried, at the lock's commit too.
            if let Some(named) = repos
                .iter()
                .find(|r| r.kind == spec.kind && r.id == spec.id)
            {
                spec.variants = named.variants.clone();
            }
            if !repos.contains(&spec) {
                repos.push(spec);
            }
        }
    }
    Ok(())
}

/// `ORG/NAME[@REV][:VARIANT,…]`; without `@REV`, the revision is left
/// empty: the newest `vN` branch, found when the kernel is planned.
pub fn parse_kernel(text: &str) -> Result<RepoSpec, CreateError> {
    let arg = |error| KernelError::Arg {
        text: text.to_string(),
        error,
    };
    let (left, folders) = match text.split_once(':') {
        Some((l, v)) => (l, Some(v)),
        None => (text, None),
    };
    let (id, revision) = left.split_once('@').unwrap_or((left, ""));
    check_repo_id("kernel repository id", id).map_err(arg)?;
    if !revision.is_empty() || left.contains('@') {
        check_ref_name("kernel revision", revision).map_err(arg)?;
    }
    let mut variants = Vec::new();
    for v in folders.into_iter().flat_map(|v| v.split(',')) {
        let v = v.trim();
        Variant::parse(v).map_err(|error| KernelError::BadVariantArg {
            text: text.to_string(),
            error,
        })?;
        if !variants.iter().any(|have| have == v) {
            variants.push(v.to_string());
        }
    }
    Ok(RepoSpec {
        kind: RepoKind::Kernel,
        id: id.to_string(),
        revision: revision.to_string(),
        patterns: Vec::new(),
        variants,
        nodes: Vec::new(),
    })
}

/// One entry of a `kernels.lock` (kernels 0.17, `KernelLocks::to_json`).
#[derive(Deserialize)]
struct LockEntry {
    dependency: Dependency,
    lock: Locked,
}

#[derive(Deserialize)]
struct Dependency {
    #[serde(rename = "repo-id")]
    repo_id: String,
}

#[derive(Deserialize)]
struct Locked {
    commit: String,
}

/// Each kernel a `kernels.lock` pins, at its commit; its build folders
/// those a `--kernel` of the same repository names, else those the
/// bundle's environments load.
fn read_lock(lock: &Path) -> Result<Vec<RepoSpec>, CreateError> {
    let read_err = |error| KernelError::LockRead {
        lock: lock.to_path_buf(),
        error,
    };
    let file = std::fs::File::open(lock).map_err(read_err)?;
    let mut bytes = Vec::new();
    file.take(MAX_LOCK + 1)
        .read_to_end(&mut bytes)
        .map_err(read_err)?;
    if bytes.len() as u64 > MAX_LOCK {
        return Err(KernelError::LockTooLarge {
            lock: lock.to_path_buf(),
            max: MAX_LOCK,
        }
        .into());
    }
    let entries: Vec<LockEntry> =
        serde_json::from_slice(&bytes).map_err(|error| KernelError::LockParse {
            lock: lock.to_path_buf(),
            error,
        })?;
    let mut specs = Vec::new();
    for (index, e) in entries.into_iter().enumerate() {
        let entry = |what, found: &str, expected| KernelError::LockEntry {
            lock: lock.to_path_buf(),
            index,
            what,
            found: found.to_string(),
            expected,
        };
        let id = e.dependency.repo_id;
        if check_repo_id("kernel repository id", &id).is_err() {
            return Err(entry("repository", &id, "ORG/NAME").into());
        }
        let commit = e.lock.commit;
        if !is_sha1_hex(&commit) {
            return Err(entry("commit", &commit, "40 lower-case hex digits").into());
        }
        specs.push(RepoSpec {
            kind: RepoKind::Kernel,
            id,
            revision: commit,
            patterns: Vec::new(),
            variants: Vec::new(),
            nodes: Vec::new(),
        });
    }
    Ok(specs)
}

#[cfg(test)]
#[path = "kernels_tests.rs"]
mod tests;
