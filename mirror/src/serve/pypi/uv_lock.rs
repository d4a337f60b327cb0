//! `GET /pypi/{env}/uv.lock`: a site's own `uv.lock`, every file URL and
//! every index pointing at this mirror, so `uv sync --frozen` in the
//! project's folder (its `pyproject.toml` is at `/pypi/{env}/pyproject.toml`)
//! installs from the environment's own files, with the lock's hashes.
//!
//! Invariant: a wheel or sdist is kept only if the environment holds a file
//! of that name with the lock's sha256 (a differing one refuses the whole
//! lock, 500, naming the file); the lock lists every platform's files, and
//! those of other platforms are left out, so uv never picks one it would
//! have to fetch from elsewhere. A package with no file held here is one the
//! bundle found no node of this platform installs; it is kept without files.

use toml::{Table, Value};

use super::lock::{LockError, edit_lock, file_name, point_to_held};
use crate::serve::index::pypi::PyEnv;

/// The lock's text rewritten for `base` (`http://mirror:8080`).
pub fn rewrite(text: &str, env: &PyEnv, base: &str) -> Result<String, LockError> {
    let origin = format!("uv.lock of environment {} as the site locked it", env.name);
    edit_lock(text, env, base, &origin, |lock, env_url| {
        let index = format!("{env_url}/simple");
        if let Some(Value::Array(packages)) = lock.get_mut("package") {
            for p in packages.iter_mut() {
                if let Value::Table(p) = p {
                    rewrite_package(p, env, env_url, &index)?;
                }
            }
        }
        Ok(())
    })
}

fn rewrite_package(
    p: &mut Table,
    env: &PyEnv,
    env_url: &str,
    index: &str,
) -> Result<(), LockError> {
    let package = p
        .get("name")
        .and_then(Value::as_str)
        .unwrap_or("?")
        .to_string();
    point_source(p, index);
    if let Some(Value::Array(deps)) = p.get_mut("dependencies") {
        deps.iter_mut().for_each(|d| point_dep(d, index));
    }
    for key in ["optional-dependencies", "dev-dependencies"] {
        if let Some(Value::Table(groups)) = p.get_mut(key) {
            for (_, deps) in groups.iter_mut() {
                if let Value::Array(deps) = deps {
                    deps.iter_mut().for_each(|d| point_dep(d, index));
                }
            }
        }
    }
    let held = |t: &Table| name_of(t).is_some_and(|n| env.files.contains_key(&n));
    if let Some(Value::Array(wheels)) = p.get_mut("wheels") {
        wheels.retain(|w| matches!(w, Value::Table(t) if held(t)));
        for w in wheels.iter_mut() {
            if let Value::Table(w) = w {
                point_file(w, env, env_url, &package)?;
            }
        }
    }
    if matches!(p.get("sdist"), Some(Value::Table(t)) if !held(t)) {
        p.remove("sdist");
    }
    if let Some(Value::Table(t)) = p.get_mut("sdist") {
        point_file(t, env, env_url, &package)?;
    }
    Ok(())
}

/// `source = { registry = … }` → this environment's index.
fn point_source(t: &mut Table, index: &str) {
    if let Some(Value::Table(source)) = t.get_mut("source")
        && source.contains_key("registry")
    {
        source.insert("registry".into(), Value::String(index.to_string()));
    }
}

/// An edge naming its target's source (where two packages share a name).
fn point_dep(d: &mut Value, index: &str) {
    if let Value::Table(d) = d {
        point_source(d, index);
    }
}

/// uv names a file by its URL, or `filename` for a local registry.
fn name_of(t: &Table) -> Option<String> {
    t.get("filename")
        .and_then(Value::as_str)
        .map(str::to_string)
        .or_else(|| file_name(t))
}

/// One file entry (`wheels[]`, `sdist`) pointed at the held file of its
/// name; uv's `filename` (a local registry's) goes with the old location.
fn point_file(
    file: &mut Table,
    env: &PyEnv,
    env_url: &str,
    package: &str,
) -> Result<(), LockError> {
    let name = name_of(file).unwrap_or_default();
    let lock_sha = file
        .get("hash")
        .and_then(Value::as_str)
        .map(|h| h.strip_prefix("sha256:").unwrap_or(h).to_string());
    file.remove("filename");
    point_to_held(file, env, env_url, package, name, lock_sha.as_deref())
}
