//! The PEP 751 lock file (`pylock.toml`) as serde reads it: the one schema
//! behind both readers of it — the lock uv writes for the bundler's own
//! resolve ([`super::lock`]) and a site's own lock
//! ([`super::site_lock::pylock`]).
//!
//! Invariant: every key the PEP makes optional is optional here, so a lock
//! either reads whole or is refused by the parser; what a reader does with
//! a package (keep, refuse, skip by marker) is its own business, not this
//! schema's. Callers bound the text before it gets here.

use std::collections::BTreeMap;

use serde::Deserialize;

/// A whole lock: its format version, the Python it is for, its packages.
#[derive(Deserialize)]
#[serde(rename_all = "kebab-case")]
pub struct PyLock {
    pub lock_version: String,
    #[serde(default)]
    pub requires_python: Option<String>,
    #[serde(default)]
    pub packages: Vec<Package>,
}

impl PyLock {
    /// Whether the lock is of the major version these readers know (1.x):
    /// a later major may change what a key means.
    pub fn is_version_1(&self) -> bool {
        self.lock_version.split('.').next() == Some("1")
    }
}

/// One `[[packages]]` entry: a project at a version and where its files
/// come from.
#[derive(Deserialize)]
#[serde(rename_all = "kebab-case")]
pub struct Package {
    pub name: String,
    /// Optional in PEP 751 for packages from a URL or path.
    #[serde(default)]
    pub version: Option<String>,
    #[serde(default)]
    pub marker: Option<String>,
    #[serde(default)]
    pub index: Option<String>,
    #[serde(default)]
    pub vcs: Option<toml::Value>,
    #[serde(default)]
    pub directory: Option<toml::Value>,
    #[serde(default)]
    pub archive: Option<File>,
    #[serde(default)]
    pub sdist: Option<toml::Value>,
    #[serde(default)]
    pub wheels: Vec<File>,
}

/// A file entry (`wheels[]`, `archive`): where it is and what it hashes to.
#[derive(Deserialize)]
#[serde(rename_all = "kebab-case")]
pub struct File {
    #[serde(default)]
    pub name: Option<String>,
    #[serde(default)]
    pub url: Option<String>,
    #[serde(default)]
    pub path: Option<String>,
    #[serde(default)]
    pub size: Option<u64>,
    #[serde(default)]
    pub upload_time: Option<toml::value::Datetime>,
    #[serde(default)]
    pub hashes: BTreeMap<String, String>,
}
