//! A site's own lock (`--python-env NAME=PATH`, PATH a `uv.lock` or a PEP
//! 751 `pylock.toml`): the environment is exactly the files that lock names
//! for the node's platform, no resolver run. [`uv_lock`] and [`pylock`] say
//! which packages a node of the platform may install ([`marker`]), [`tags`]
//! which of their wheels fit it, [`verify`] checks each against the lock's
//! sha256 and its index's.
//!
//! Invariant: the lock is untrusted input, read bounded, and carried byte
//! for byte as the environment's lock blob (with, for a `uv.lock`, the
//! project's `pyproject.toml` beside it); a package the platform needs and
//! the bundle cannot carry (no wheel fits, a git or path source, a missing
//! hash) stops the run naming it — nothing is skipped silently. Where no
//! locked wheel fits, the sdist is not carried: building it on a node needs
//! a build backend the lock does not pin, so it could not install offline.

pub mod marker;
pub mod pylock;
pub mod tags;
pub mod uv_lock;
pub mod verify;

use std::collections::BTreeMap;
use std::io::Read;
use std::path::{Path, PathBuf};

use llmgw_shared::manifest::SiteLockFormat;

use super::Ctx;
use super::check::Checked;
use super::request::EnvRequest;
use super::simple::ProjectPage;
use crate::error::{CreateError, FlagError, PythonError, RequestError, SiteLockError};

/// The largest lock read: a lock of hundreds of packages, every platform's
/// wheels listed, is a few MiB.
pub const MAX_SITE_LOCK_BYTES: u64 = 16 << 20;
/// The largest `pyproject.toml` read.
pub const MAX_PYPROJECT_BYTES: u64 = 1 << 20;

/// One package a node of the platform may install, as its lock says.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SitePackage {
    pub name: String,
    pub version: String,
    /// The simple API the lock says it comes from.
    pub index: Option<String>,
    pub wheels: Vec<SiteFile>,
    pub has_sdist: bool,
}

/// A wheel the lock lists, with the sha256 it records (lower-case hex).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SiteFile {
    pub url: String,
    pub filename: String,
    pub size: Option<u64>,
    pub sha256: String,
}

/// A site lock read and checked: what `plan_with` carries.
#[derive(Debug)]
pub struct SiteResolved {
    pub platform: String,
    pub format: SiteLockFormat,
    pub file_name: String,
    /// The lock's bytes, as given.
    pub lock_text: String,
    /// For a `uv.lock`: the project's `pyproject.toml`, as given.
    pub project: Option<String>,
    pub checked: Checked,
}

/// Reads the lock at `path` (and the `pyproject.toml` beside a `uv.lock`),
/// keeps the wheels of the packages a node of `req`'s platform may install,
/// and checks each at its index.
pub async fn resolve(
    ctx: &Ctx<'_>,
    req: &EnvRequest,
    path: &Path,
    pages: &mut BTreeMap<(String, String), Option<ProjectPage>>,
) -> Result<SiteResolved, CreateError> {
    let wrap = |error: Box<SiteLockError>| PythonError::SiteLock {
        env: req.name.clone(),
        error,
    };
    let format = crate::spec::python::lock_format_of(&path.to_string_lossy()).ok_or_else(|| {
        FlagError::SiteLockName {
            path: path.to_path_buf(),
        }
    })?;
    let lock_text = read_text(path, MAX_SITE_LOCK_BYTES).map_err(wrap)?;
    let target = target_of(req)?;
    let packages = match format {
        SiteLockFormat::UvLock => uv_lock::applicable(&lock_text, path, &target),
        SiteLockFormat::Pylock => pylock::applicable(&lock_text, path, &target),
    }
    .map_err(wrap)?;
    let project = match format {
        SiteLockFormat::UvLock => Some(read_pyproject(path).map_err(wrap)?),
        SiteLockFormat::Pylock => None,
    };
    let platform = super::resolve::platform(&req.arch, &req.manylinux);
    let chosen =
        choose_wheels(&packages, path, &target, &req.manylinux, &platform).map_err(wrap)?;
    let checked = verify::verify(ctx, path, &chosen, pages)
        .await
        .map_err(|e| match e {
            verify::Failed::Lock(e) => CreateError::from(wrap(e)),
            verify::Failed::Other(e) => e,
        })?;
    Ok(SiteResolved {
        platform,
        format,
        file_name: path
            .file_name()
            .map(|n| n.to_string_lossy().into_owned())
            .unwrap_or_default(),
        lock_text,
        project,
        checked,
    })
}

/// The marker view of the environment's platform: its arch and `--python`.
fn target_of(req: &EnvRequest) -> Result<marker::Target, CreateError> {
    let machine = match llmgw_shared::recipe::machine_of(&req.arch) {
        Some(machine) => machine,
        None => {
            return Err(RequestError::SiteLockArch {
                env: req.name.clone(),
                arch: req.arch.clone(),
            }
            .into());
        }
    };
    let minor = req
        .python
        .strip_prefix("3.")
        .and_then(|m| m.parse().ok())
        .ok_or_else(|| RequestError::SiteLockPython {
            python: req.python.clone(),
        })?;
    Ok(marker::Target { minor, machine })
}

/// For each package, the wheels that fit the platform; a package with none
/// is refused, naming what the lock has.
fn choose_wheels(
    packages: &[SitePackage],
    lock: &Path,
    t: &marker::Target,
    manylinux: &str,
    platform: &str,
) -> Result<Vec<SitePackage>, Box<SiteLockError>> {
    let glibc = manylinux
        .split_once('_')
        .and_then(|(a, b)| Some((a.parse().ok()?, b.parse().ok()?)))
        .unwrap_or((2, 28));
    let p = tags::Platform {
        machine: t.machine,
        minor: t.minor,
        glibc,
    };
    let mut out = Vec::new();
    for pkg in packages {
        let wheels: Vec<SiteFile> = pkg
            .wheels
            .iter()
            .filter(|w| tags::fits(&w.filename, &p) == Some(true))
            .cloned()
            .collect();
        if wheels.is_empty() {
            let have: Vec<&str> = pkg.wheels.iter().map(|w| w.filename.as_str()).collect();
            return Err(Box::new(SiteLockError::NoWheel {
                lock: lock.to_path_buf(),
                package: pkg.name.clone(),
                version: pkg.version.clone(),
                platform: format!("CPython 3.{} on {platform}", t.minor),
                have: if have.is_empty() {
                    "no wheel".into()
                } else {
                    have.join(", ")
                },
                has_sdist: pkg.has_sdist,
            }));
        }
        out.push(SitePackage {
            wheels,
            ..pkg.clone()
        });
    }
    Ok(out)
}

/// Reads a file whole, refusing one over `max` bytes or not UTF-8.
fn read_text(path: &Path, max: u64) -> Result<String, Box<SiteLockError>> {
    let read = |error| {
        Box::new(SiteLockError::Read {
            lock: path.to_path_buf(),
            error,
        })
    };
    let f = std::fs::File::open(path).map_err(read)?;
    let mut bytes = Vec::new();
    f.take(max + 1).read_to_end(&mut bytes).map_err(read)?;
    if bytes.len() as u64 > max {
        return Err(Box::new(SiteLockError::TooLarge {
            lock: path.to_path_buf(),
            max,
        }));
    }
    String::from_utf8(bytes).map_err(|_| {
        Box::new(SiteLockError::NotText {
            lock: path.to_path_buf(),
        })
    })
}

/// `text` read as a lock of `format` (its TOML shape `T`), or the refusal
/// naming the lock and the parser's words.
fn parse_lock<T: serde::de::DeserializeOwned>(
    text: &str,
    lock: &Path,
    format: &'static str,
) -> Result<T, Box<SiteLockError>> {
    toml::from_str(text).map_err(|error| {
        Box::new(SiteLockError::Parse {
            lock: lock.to_path_buf(),
            format,
            error,
        })
    })
}

/// Refuses a lock whose `requires-python` leaves out the CPython the
/// bundle is for.
fn check_python(
    requires: Option<&String>,
    lock: &Path,
    t: &marker::Target,
) -> Result<(), Box<SiteLockError>> {
    match requires {
        Some(r) if !marker::python_may_satisfy(r, t.minor) => {
            Err(Box::new(SiteLockError::Python {
                lock: lock.to_path_buf(),
                requires: r.clone(),
                python: format!("3.{}", t.minor),
            }))
        }
        _ => Ok(()),
    }
}

/// Whether `package`'s `marker` (none: always) may hold on `t`, or the
/// refusal of a marker that cannot be read.
fn may_hold(
    marker: Option<&String>,
    t: &marker::Target,
    lock: &Path,
    package: &str,
) -> Result<bool, Box<SiteLockError>> {
    let Some(m) = marker else { return Ok(true) };
    marker::may_hold(m, t).map_err(|detail| {
        Box::new(SiteLockError::Marker {
            lock: lock.to_path_buf(),
            package: package.to_string(),
            marker: m.clone(),
            detail,
        })
    })
}

/// The `pyproject.toml` beside a `uv.lock`.
fn read_pyproject(lock: &Path) -> Result<String, Box<SiteLockError>> {
    let project: PathBuf = lock.with_file_name("pyproject.toml");
    match std::fs::metadata(&project) {
        Err(error) => Err(Box::new(SiteLockError::NoPyproject {
            lock: lock.to_path_buf(),
            project,
            error,
        })),
        Ok(_) => read_text(&project, MAX_PYPROJECT_BYTES),
    }
}

/// A wheel as a lock records it, in either format, before it is checked.
struct LockedWheel<'a> {
    url: Option<&'a String>,
    /// The lock's own name for the file, where it gives one.
    filename: Option<&'a String>,
    /// `sha256:<hex>`, uv.lock's form (a pylock's `hashes` table is put in
    /// it), for [`sha256_of`].
    hash: Option<String>,
    size: Option<u64>,
}

/// The refusal of `package` for coming from where a bundle cannot carry it
/// (`kind`), and what to do instead.
fn refused_source(
    lock: &Path,
    package: &str,
    kind: String,
    advice: &'static str,
) -> Box<SiteLockError> {
    Box::new(SiteLockError::Source {
        lock: lock.to_path_buf(),
        package: package.to_string(),
        kind,
        advice,
    })
}

/// The wheels of one package as the bundle checks them: each fetched over
/// HTTP (a wheel without a URL is refused as `no_url`: the node's mirror
/// could not have it), named by the lock's name else its URL's last segment,
/// with the lock's sha256.
fn site_files<'a>(
    lock: &Path,
    package: &str,
    version: &str,
    wheels: impl Iterator<Item = LockedWheel<'a>>,
    no_url: &str,
) -> Result<Vec<SiteFile>, Box<SiteLockError>> {
    let mut out = Vec::new();
    for w in wheels {
        let Some(url) = w.url else {
            return Err(refused_source(
                lock,
                package,
                no_url.to_string(),
                "lock against an index that serves its files over HTTP",
            ));
        };
        let filename = match w.filename.cloned().or_else(|| file_name(url)) {
            Some(f) => f,
            None => {
                return Err(Box::new(SiteLockError::NoFileName {
                    lock: lock.to_path_buf(),
                    package: package.to_string(),
                    version: version.to_string(),
                    file: url.clone(),
                }));
            }
        };
        let sha256 = sha256_of(w.hash.as_deref(), lock, package, version, &filename)?;
        out.push(SiteFile {
            url: url.clone(),
            filename,
            size: w.size,
            sha256,
        });
    }
    Ok(out)
}

/// The last path segment of a URL, percent-decoded, without query or
/// fragment.
pub fn file_name(url: &str) -> Option<String> {
    super::lock::file_name_of(url)
}

/// The lock's `sha256:<hex>` for a file, as lower-case hex; a missing or
/// malformed one refused.
pub fn sha256_of(
    hash: Option<&str>,
    lock: &Path,
    package: &str,
    version: &str,
    file: &str,
) -> Result<String, Box<SiteLockError>> {
    let refuse = |problem: String| {
        Box::new(SiteLockError::Hash {
            lock: lock.to_path_buf(),
            package: package.to_string(),
            version: version.to_string(),
            file: file.to_string(),
            problem,
        })
    };
    let Some(h) = hash else {
        return Err(refuse("no sha256".into()));
    };
    let Some(hex) = h.strip_prefix("sha256:") else {
        return Err(refuse(format!(
            "the hash \"{}\", not a sha256",
            llmgw_shared::shown(h)
        )));
    };
    if hex.len() != 64 || !hex.bytes().all(|b| b.is_ascii_hexdigit()) {
        return Err(refuse(format!(
            "the sha256 \"{}\", which is not 64 hex digits",
            llmgw_shared::shown(hex)
        )));
    }
    Ok(hex.to_ascii_lowercase())
}

#[cfg(test)]
mod tests;
