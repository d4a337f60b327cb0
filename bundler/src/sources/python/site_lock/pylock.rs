//! Reading a PEP 751 `pylock.toml` a site gave (`lock-version = "1.0"`):
//! which packages a node of the target platform may install — those whose
//! `marker` may hold there — and every wheel the lock lists for each.
//!
//! Invariant: a package from a VCS, a folder, a local path or a bare
//! archive URL is refused, not skipped; a package that names no index is
//! carried on the lock's hash alone.

use std::path::Path;

use super::marker::Target;
use super::{LockedWheel, SitePackage};
use crate::error::SiteLockError;
use crate::sources::python::pep751::{Package, PyLock};

/// The packages of `text` a node of `t` may install.
pub fn applicable(
    text: &str,
    lock: &Path,
    t: &Target,
) -> Result<Vec<SitePackage>, Box<SiteLockError>> {
    let raw: PyLock = super::parse_lock(text, lock, "PEP 751 pylock.toml")?;
    if !raw.is_version_1() {
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

fn package(p: Package, lock: &Path) -> Result<SitePackage, Box<SiteLockError>> {
    let version = p.version.clone().unwrap_or_default();
    let refuse =
        |kind: &str, advice| super::refused_source(lock, &p.name, kind.to_string(), advice);
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
    let wheels = p.wheels.iter().map(|w| LockedWheel {
        url: w.url.as_ref(),
        filename: w.name.as_ref(),
        hash: w.hashes.get("sha256").map(|h| format!("sha256:{h}")),
        size: w.size,
    });
    let wheels = super::site_files(
        lock,
        &p.name,
        &version,
        wheels,
        "a local wheel file (`path`)",
    )?;
    Ok(SitePackage {
        name: p.name,
        version,
        index: p.index,
        wheels,
        has_sdist: p.sdist.is_some(),
    })
}
