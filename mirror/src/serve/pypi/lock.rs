//! `GET /pypi/{env}/pylock.toml`: the lock the resolver wrote, with every
//! file URL pointing at this mirror, so `uv pip install -r URL` installs
//! exactly the resolved set from the environment's own files.
//!
//! Invariant: a lock is served only if every file it names is a file of
//! the environment with the same sha256 — a lock that would send a node
//! anywhere else, or to other bytes, is refused whole (500, naming the
//! file), never served half-rewritten. The lock blob itself is hashed
//! again before it is read.

use axum::response::{IntoResponse, Response};
use http::StatusCode;
use llmgw_shared::{Chain, Sha256, chain, shown};
use thiserror::Error;
use toml::{Table, Value};

use crate::serve::http::paths::quote_path;
use crate::serve::http::respond;
use crate::serve::index::pypi::PyEnv;
use crate::store::Store;

/// Largest lock read: a vLLM lock is tens of KiB.
pub const MAX_LOCK_BYTES: u64 = 16 * 1024 * 1024;

/// Why a held lock cannot be served.
#[derive(Debug, Error)]
pub enum LockError {
    #[error(
        "the lock blob {sha256} of environment {env} cannot be read: run `llmgw mirror verify`"
    )]
    Read {
        env: String,
        sha256: Sha256,
        #[source]
        source: Box<crate::store::StoreError>,
    },
    #[error(
        "the lock blob of environment {env} is {size} bytes; at most {MAX_LOCK_BYTES} are read"
    )]
    TooLarge { env: String, size: u64 },
    #[error(
        "the lock blob of environment {env} hashes to {actual}, not {expected}: the store is \
         damaged; run `llmgw mirror verify` and import the bundle again"
    )]
    Damaged {
        env: String,
        /// Boxed, to keep every result small.
        expected: Box<Sha256>,
        actual: Sha256,
    },
    #[error("the lock of environment {env} is not a TOML lock (pylock.toml, uv.lock)")]
    Parse {
        env: String,
        #[source]
        source: toml::de::Error,
    },
    #[error("the rewritten lock of environment {env} cannot be written as TOML")]
    Write {
        env: String,
        #[source]
        source: toml::ser::Error,
    },
    #[error(
        "the lock of environment {env} names {what} of package \"{}\" that the environment \
         does not hold; this lock cannot be installed from the mirror (re-create the bundle)",
        shown(.package)
    )]
    NotHeld {
        env: String,
        package: String,
        what: String,
    },
    #[error(
        "the lock of environment {env} gives \"{}\" sha256 {}, but the environment holds it \
         as {held}; re-create the bundle",
        shown(.file), shown(.lock)
    )]
    HashDiffers {
        env: String,
        file: String,
        lock: String,
        held: String,
    },
}

/// A lock that cannot be served is the store's fault, not the client's:
/// a 500 whose text is the whole chain (what `uv` shows the node's
/// operator), logged once here.
impl IntoResponse for LockError {
    fn into_response(self) -> Response {
        tracing::error!(error = %Chain(&self), "lock refused");
        respond::text(
            StatusCode::INTERNAL_SERVER_ERROR,
            format!("{}\n", chain(&self)),
        )
    }
}

/// The lock blob, bounded and hashed again.
pub fn read_lock(store: &Store, env: &PyEnv) -> Result<Vec<u8>, LockError> {
    if env.lock.size > MAX_LOCK_BYTES {
        return Err(LockError::TooLarge {
            env: env.name.clone(),
            size: env.lock.size,
        });
    }
    let bytes = store
        .read_small_blob(&env.lock.sha256, MAX_LOCK_BYTES)
        .map_err(|source| LockError::Read {
            env: env.name.clone(),
            sha256: env.lock.sha256.clone(),
            source: Box::new(source),
        })?;
    let actual = Sha256::of(&bytes);
    if actual != env.lock.sha256 {
        return Err(LockError::Damaged {
            env: env.name.clone(),
            expected: Box::new(env.lock.sha256.clone()),
            actual,
        });
    }
    Ok(bytes)
}

/// Points every file of the lock at the environment's files on this
/// mirror, and each package's `index` at the environment's index. A site's
/// own lock lists the wheels of every platform: there the files the
/// environment does not hold (other platforms') are left out, and a
/// package left with none (one whose marker excludes this platform) too.
pub fn rewrite(text: &str, env: &PyEnv, base: &str) -> Result<String, LockError> {
    let site = env.site_lock.is_some();
    let origin = format!(
        "pylock.toml of environment {} as its resolver wrote it",
        env.name
    );
    edit_lock(text, env, base, &origin, |lock, env_url| {
        if let Some(Value::Array(packages)) = lock.get_mut("packages") {
            let mut kept = Vec::new();
            for p in std::mem::take(packages) {
                let Value::Table(mut p) = p else { continue };
                if rewrite_package(&mut p, env, env_url, site)? {
                    kept.push(Value::Table(p));
                }
            }
            *packages = kept;
        }
        Ok(())
    })
}

/// A held lock (either format) as a node is given it: read as TOML,
/// `edit`ed with the environment's URL on this mirror (`{base}/pypi/{env}`),
/// and written again under a comment saying so, and whose lock it is
/// (`origin`).
pub(super) fn edit_lock(
    text: &str,
    env: &PyEnv,
    base: &str,
    origin: &str,
    edit: impl FnOnce(&mut Table, &str) -> Result<(), LockError>,
) -> Result<String, LockError> {
    let mut lock: Table = toml::from_str(text).map_err(|source| LockError::Parse {
        env: env.name.clone(),
        source,
    })?;
    let env_url = format!("{base}/pypi/{}", quote_path(&env.name));
    edit(&mut lock, &env_url)?;
    let body = toml::to_string(&lock).map_err(|source| LockError::Write {
        env: env.name.clone(),
        source,
    })?;
    Ok(format!(
        "# {origin}, every file URL pointing at this mirror (llmgw mirror serve)\n{body}"
    ))
}

/// One package of a pylock: whether it is kept (`false` only for a site
/// lock's package with no file held here).
fn rewrite_package(
    p: &mut Table,
    env: &PyEnv,
    env_url: &str,
    site: bool,
) -> Result<bool, LockError> {
    let package = p
        .get("name")
        .and_then(Value::as_str)
        .unwrap_or("?")
        .to_string();
    for kind in ["vcs", "directory"] {
        if p.contains_key(kind) {
            return Err(LockError::NotHeld {
                env: env.name.clone(),
                package,
                what: format!("a {kind} source"),
            });
        }
    }
    if p.contains_key("index") {
        p.insert("index".into(), Value::String(format!("{env_url}/simple")));
    }
    let held = |t: &Table| file_name(t).is_some_and(|n| env.files.contains_key(&n));
    let mut files = 0;
    if let Some(Value::Array(wheels)) = p.get_mut("wheels") {
        if site {
            wheels.retain(|w| matches!(w, Value::Table(t) if held(t)));
        }
        for w in wheels.iter_mut() {
            if let Value::Table(w) = w {
                point_at_mirror(w, env, env_url, &package)?;
                files += 1;
            }
        }
    }
    for single in ["sdist", "archive"] {
        if site && matches!(p.get(single), Some(Value::Table(t)) if !held(t)) {
            p.remove(single);
        }
        if let Some(Value::Table(t)) = p.get_mut(single) {
            point_at_mirror(t, env, env_url, &package)?;
            files += 1;
        }
    }
    if site && files == 0 {
        return Ok(false);
    }
    if site
        && p.get("wheels")
            .is_some_and(|w| matches!(w, Value::Array(a) if a.is_empty()))
    {
        p.remove("wheels");
    }
    Ok(true)
}

/// A file entry's name: its `name`, else the last segment of its `url` or
/// `path`, percent-decoded.
pub fn file_name(file: &Table) -> Option<String> {
    let from_url = file
        .get("url")
        .and_then(Value::as_str)
        .map(|u| u.split(['#', '?']).next().unwrap_or(u))
        .and_then(|u| u.rsplit('/').next())
        .and_then(|n| percent_encoding::percent_decode_str(n).decode_utf8().ok())
        .map(|n| n.into_owned());
    // uv writes a wheel it was handed as a file (vLLM's cu129 wheel from
    // its GitHub release) as `archive = { path = "/build/machine/…" }`.
    let from_path = file
        .get("path")
        .and_then(Value::as_str)
        .and_then(|p| p.rsplit('/').next())
        .map(str::to_string);
    file.get("name")
        .and_then(Value::as_str)
        .map(str::to_string)
        .or(from_url)
        .or(from_path)
}

/// One file entry (`wheels[]`, `sdist`, `archive`): found by its `name`,
/// else the last segment of its `url`; its sha256 must be the held one.
fn point_at_mirror(
    file: &mut Table,
    env: &PyEnv,
    env_url: &str,
    package: &str,
) -> Result<(), LockError> {
    let Some(name) = file_name(file) else {
        return Err(LockError::NotHeld {
            env: env.name.clone(),
            package: package.to_string(),
            what: "a file with neither name, URL nor path".into(),
        });
    };
    let lock_sha = file
        .get("hashes")
        .and_then(Value::as_table)
        .and_then(|h| h.get("sha256"))
        .and_then(Value::as_str)
        .map(str::to_string);
    point_to_held(file, env, env_url, package, name, lock_sha.as_deref())
}

/// Points a lock's file entry (either format) at the environment's file
/// `name`: the lock's sha256 (`lock_sha`, where it gives one) must be the
/// held file's, else the whole lock is refused, and the entry's `url`
/// becomes this mirror's (a `path` to the resolver's disk dropped).
pub(super) fn point_to_held(
    file: &mut Table,
    env: &PyEnv,
    env_url: &str,
    package: &str,
    name: String,
    lock_sha: Option<&str>,
) -> Result<(), LockError> {
    let Some(held) = env.files.get(&name) else {
        return Err(LockError::NotHeld {
            env: env.name.clone(),
            package: package.to_string(),
            what: format!("file \"{}\"", shown(&name)),
        });
    };
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
    file.insert(
        "url".into(),
        Value::String(format!("{env_url}/files/{}", quote_path(&held.filename))),
    );
    Ok(())
}
