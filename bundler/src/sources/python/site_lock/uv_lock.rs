//! Reading a project's `uv.lock` (uv's own format, `version = 1`; the shape
//! of uv's `crates/uv-resolver/src/lock/`): which packages a node of the
//! target platform may install, found by walking the dependency graph from
//! the project as `uv sync` does, each edge followed where its marker may
//! hold.
//!
//! Invariant: every extra and dependency group is followed (the node may
//! ask for any), so a package the node could install is never left out;
//! a package that comes from anywhere but an index (git, a path, a folder,
//! a direct URL, a workspace member elsewhere) is refused, not skipped.

use std::collections::BTreeMap;
use std::path::Path;

use serde::Deserialize;

use super::marker::Target;
use super::{LockedWheel, SitePackage};
use crate::error::SiteLockError;

#[derive(Deserialize)]
#[serde(rename_all = "kebab-case")]
struct Raw {
    version: toml::Value,
    #[serde(default)]
    requires_python: Option<String>,
    #[serde(default, rename = "package")]
    packages: Vec<RawPackage>,
}

#[derive(Deserialize)]
#[serde(rename_all = "kebab-case")]
struct RawPackage {
    name: String,
    #[serde(default)]
    version: Option<String>,
    #[serde(default)]
    source: BTreeMap<String, toml::Value>,
    #[serde(default)]
    dependencies: Vec<RawDep>,
    #[serde(default)]
    optional_dependencies: BTreeMap<String, Vec<RawDep>>,
    #[serde(default)]
    dev_dependencies: BTreeMap<String, Vec<RawDep>>,
    #[serde(default)]
    sdist: Option<toml::Value>,
    #[serde(default)]
    wheels: Vec<RawWheel>,
}

#[derive(Deserialize)]
struct RawDep {
    name: String,
    #[serde(default)]
    version: Option<String>,
    #[serde(default)]
    marker: Option<String>,
}

#[derive(Deserialize)]
struct RawWheel {
    #[serde(default)]
    url: Option<String>,
    #[serde(default)]
    filename: Option<String>,
    #[serde(default)]
    hash: Option<String>,
    #[serde(default)]
    size: Option<u64>,
}

/// The packages of `text` a node of `t` may install, with their index and
/// every wheel the lock lists; the project itself is not one of them.
pub fn applicable(
    text: &str,
    lock: &Path,
    t: &Target,
) -> Result<Vec<SitePackage>, Box<SiteLockError>> {
    let raw: Raw = super::parse_lock(text, lock, "uv.lock")?;
    if raw.version.as_integer() != Some(1) {
        return Err(Box::new(SiteLockError::Version {
            lock: lock.to_path_buf(),
            what: "uv.lock version",
            found: raw.version.to_string(),
            reads: "version 1",
        }));
    }
    super::check_python(raw.requires_python.as_ref(), lock, t)?;
    let roots = roots(&raw.packages, lock)?;
    let reached = walk(&raw.packages, roots, lock, t)?;
    let mut out = Vec::new();
    for i in reached {
        let p = &raw.packages[i];
        if is_project(p) {
            continue;
        }
        out.push(package(p, lock)?);
    }
    Ok(out)
}

/// The project's own package(s): source `virtual` or `editable` at `.`.
fn is_project(p: &RawPackage) -> bool {
    ["virtual", "editable"]
        .iter()
        .any(|k| p.source.get(*k).and_then(toml::Value::as_str) == Some("."))
}

fn roots(packages: &[RawPackage], lock: &Path) -> Result<Vec<usize>, Box<SiteLockError>> {
    let roots: Vec<usize> = (0..packages.len())
        .filter(|i| is_project(&packages[*i]))
        .collect();
    if roots.is_empty() {
        return Err(Box::new(SiteLockError::NoProject {
            lock: lock.to_path_buf(),
        }));
    }
    Ok(roots)
}

/// Every package reachable from `roots` over edges whose marker may hold
/// on `t`: dependencies, every extra's and every group's.
fn walk(
    packages: &[RawPackage],
    roots: Vec<usize>,
    lock: &Path,
    t: &Target,
) -> Result<Vec<usize>, Box<SiteLockError>> {
    let mut by_name: BTreeMap<String, Vec<usize>> = BTreeMap::new();
    for (i, p) in packages.iter().enumerate() {
        by_name.entry(p.name.clone()).or_default().push(i);
    }
    let mut seen = vec![false; packages.len()];
    let mut stack = roots;
    let mut out = Vec::new();
    while let Some(i) = stack.pop() {
        if std::mem::replace(&mut seen[i], true) {
            continue;
        }
        out.push(i);
        let p = &packages[i];
        let edges = p
            .dependencies
            .iter()
            .chain(p.optional_dependencies.values().flatten())
            .chain(p.dev_dependencies.values().flatten());
        for d in edges {
            if !super::may_hold(d.marker.as_ref(), t, lock, &p.name)? {
                continue;
            }
            // An edge names a version (and source) only where the lock
            // holds several packages of that name (uv's forks).
            for &j in by_name.get(&d.name).into_iter().flatten() {
                if d.version.is_none() || packages[j].version == d.version {
                    stack.push(j);
                }
            }
        }
    }
    out.sort_unstable();
    Ok(out)
}

/// A package from an index, with its wheels; anything else refused.
fn package(p: &RawPackage, lock: &Path) -> Result<SitePackage, Box<SiteLockError>> {
    let version = p.version.clone().unwrap_or_default();
    let refuse = |kind: String, advice| super::refused_source(lock, &p.name, kind, advice);
    let index = match p.source.get("registry").and_then(toml::Value::as_str) {
        Some(u) if u.starts_with("https://") || u.starts_with("http://") => u.to_string(),
        Some(folder) => {
            return Err(refuse(
                format!(
                    "the local folder of wheels \"{}\"",
                    llmgw_shared::shown(folder)
                ),
                "publish its wheels to an index and lock again",
            ));
        }
        None => {
            let kind = p
                .source
                .keys()
                .next()
                .cloned()
                .unwrap_or("no source".into());
            let advice = match kind.as_str() {
                "git" => "publish a wheel of it to an index and lock that version instead",
                "editable" | "virtual" | "path" | "directory" => {
                    "only a single project's lock is carried: build its other local packages \
                     into wheels on an index and lock again"
                }
                _ => "publish it to an index and lock again",
            };
            return Err(refuse(
                format!("a `{}` source", llmgw_shared::shown(&kind)),
                advice,
            ));
        }
    };
    let wheels = p.wheels.iter().map(|w| LockedWheel {
        url: w.url.as_ref(),
        filename: w.filename.as_ref(),
        hash: w.hash.clone(),
        size: w.size,
    });
    let wheels = super::site_files(lock, &p.name, &version, wheels, "a wheel without a URL")?;
    Ok(SitePackage {
        name: p.name.clone(),
        version,
        index: Some(index),
        wheels,
        has_sdist: p.sdist.is_some(),
    })
}
