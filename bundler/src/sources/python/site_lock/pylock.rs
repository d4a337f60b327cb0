//! Reading a PEP 751 `pylock.toml` a site gave (`lock-version = "1.0"`):
//! which packages a node of the target platform may install — those whose
//! `marker` may hold there — and every wheel the lock lists for each.
//!
//! Invariant: a package from a VCS, a folder, a local path or a bare
//! archive URL is refused, not skipped; a package that names no index is
//! carried on the lock's hash alone.

use std::path::Path;

use serde::Deserialize;

use super::marker::Target;
use super::{SiteFile, SitePackage, file_name};
use crate::error::SiteLockError;

#[derive(Deserialize)]
#[serde(rename_all = "kebab-case")]
struct Raw {
    lock_version: String,
    #[serde(default)]
    requires_python: Option<String>,
    #[serde(default)]
    packages: Vec<RawPackage>,
}

#[derive(Deserialize)]
#[serde(rename_all = "kebab-case")]
struct RawPackage {
    name: String,
    #[serde(default)]
    version: Option<String>,
    #[serde(default)]
    marker: Option<String>,
    #[serde(default)]
    index: Option<String>,
    #[serde(default)]
    vcs: Option<toml::Value>,
    #[serde(default)]
    directory: Option<toml::Value>,
    #[serde(default)]
    archive: Option<toml::Value>,
    #[serde(default)]
    sdist: Option<toml::Value>,
    #[serde(default)]
    wheels: Vec<RawFile>,
}

#[derive(Deserialize)]
struct RawFile {
    #[serde(default)]
    name: Option<String>,
    #[serde(default)]
    url: Option<String>,
    #[serde(default)]
    size: Option<u64>,
    #[serde(default)]
    hashes: std::collections::BTreeMap<String, String>,
}

/// The packages of `text` a node of `t` may install.
pub fn applicable(
    text: &str,
    lock: &Path,
    t: &Target,
) -> Result<Vec<SitePackage>, Box<SiteLockError>> {
    let raw: Raw = super::parse_lock(text, lock, "PEP 751 pylock.toml")?;
    if raw.lock_version.split('.').next() != Some("1") {
        return Err(Box::new(SiteLockError::Version {
            lock: lock.to_path_buf(),
            what: "lock-version",
            found: raw.lock_version,
            reads: "1.x",
        }));
    }
    super::check_python(raw.requires_python.as_ref(), lock, t)?;
    let mut out = Vec::new();
    for p in raw.packages {
        if !super::may_hold(p.marker.as_ref(), t, lock, &p.name)? {
            continue;
        }
        out.push(package(p, lock)?);
    }
    Ok(out)
}

fn package(p: RawPackage, lock: &Path) -> Result<SitePackage, Box<SiteLockError>> {
    let version = p.version.clone().unwrap_or_default();
    let refuse = |kind: &str, advice| {
        Box::new(SiteLockError::Source {
            lock: lock.to_path_buf(),
            package: p.name.clone(),
            kind: kind.to_string(),
            advice,
        })
    };
    if p.vcs.is_some() {
        return Err(refuse(
            "a VCS checkout (`vcs`)",
            "publish a wheel of it to an index and lock that version instead",
        ));
    }
    if p.directory.is_some() {
        return Err(refuse(
            "a source folder (`directory`)",
            "build it into a wheel on an index and lock again",
        ));
    }
    if p.archive.is_some() {
        return Err(refuse(
            "a bare archive (`archive`)",
            "publish it to an index and lock again",
        ));
    }
    let mut wheels = Vec::new();
    for w in &p.wheels {
        let Some(url) = &w.url else {
            return Err(refuse(
                "a local wheel file (`path`)",
                "lock against an index that serves its files over HTTP",
            ));
        };
        let filename = match w.name.clone().or_else(|| file_name(url)) {
            Some(f) => f,
            None => {
                return Err(Box::new(SiteLockError::NoFileName {
                    lock: lock.to_path_buf(),
                    package: p.name.clone(),
                    version: version.clone(),
                    file: url.clone(),
                }));
            }
        };
        let sha = w.hashes.get("sha256").map(|h| format!("sha256:{h}"));
        let sha256 = super::sha256_of(sha.as_deref(), lock, &p.name, &version, &filename)?;
        wheels.push(SiteFile {
            url: url.clone(),
            filename,
            size: w.size,
            sha256,
        });
    }
    Ok(SitePackage {
        name: p.name,
        version,
        index: p.index,
        wheels,
        has_sdist: p.sdist.is_some(),
    })
}
