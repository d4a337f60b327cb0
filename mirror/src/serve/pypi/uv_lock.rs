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

use llmgw_shared::shown;
use toml::{Table, Value};

use super::lock::{LockError, file_name};
use crate::serve::index::pypi::PyEnv;
use crate::serve::paths::quote_path;

/// The lock's text rewritten for `base` (`http://mirror:8080`).
pub fn rewrite(text: &str, env: &PyEnv, base: &str) -> Result<String, LockError> {
    let mut lock: Table = toml::from_str(text).map_err(|source| LockError::Parse {
        env: env.name.clone(),
        source,
    })?;
    let env_url = format!("{base}/pypi/{}", quote_path(&env.name));
    let index = format!("{env_url}/simple");
    if let Some(Value::Array(packages)) = lock.get_mut("package") {
        for p in packages.iter_mut() {
            if let Value::Table(p) = p {
                rewrite_package(p, env, &env_url, &index)?;
            }
        }
    }
    let body = toml::to_string(&lock).map_err(|source| LockError::Write {
        env: env.name.clone(),
        source,
    })?;
    Ok(format!(
        "# uv.lock of environment {} as the site locked it, every file URL pointing at this \
         mirror (llmgw mirror serve)\n{body}",
        env.name
    ))
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
    for key in ["dependencies"] {
        if let Some(Value::Array(deps)) = p.get_mut(key) {
            deps.iter_mut().for_each(|d| point_dep(d, index));
        }
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

fn point_file(
    file: &mut Table,
    env: &PyEnv,
    env_url: &str,
    package: &str,
) -> Result<(), LockError> {
    let name = name_of(file).unwrap_or_default();
    let Some(held) = env.files.get(&name) else {
        return Err(LockError::NotHeld {
            env: env.name.clone(),
            package: package.to_string(),
            what: format!("file \"{}\"", shown(&name)),
        });
    };
    let lock_sha = file
        .get("hash")
        .and_then(Value::as_str)
        .map(|h| h.strip_prefix("sha256:").unwrap_or(h));
    if let Some(sha) = lock_sha
        && !sha.eq_ignore_ascii_case(&held.blob.sha256)
    {
        return Err(LockError::HashDiffers {
            env: env.name.clone(),
            file: name,
            lock: sha.to_string(),
            held: held.blob.sha256.to_string(),
        });
    }
    file.remove("path");
    file.remove("filename");
    file.insert(
        "url".into(),
        Value::String(format!("{env_url}/files/{}", quote_path(&held.filename))),
    );
    Ok(())
}
