//! Format 2: a site's own lock (`bundle create --python-env NAME=PATH` where
//! PATH is a `uv.lock` or a PEP 751 `pylock.toml`): the environment's files
//! are the ones that lock names for the node's platform, and the lock
//! itself, byte for byte, is the environment's `lock` blob.
//!
//! Invariant: optional and absent for an environment a resolver made here,
//! so a manifest without it reads as before. Every blob it names (the
//! project's `pyproject.toml`) is a blob of the bundle, checked at import
//! like any other.

use serde::{Deserialize, Serialize};

use super::artifacts::BlobRef;

/// Which lock a site gave, and what a node needs beside it.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct SiteLock {
    /// The lock's format: the environment's `lock` blob is this file.
    pub format: SiteLockFormat,
    /// The lock's file name as given (`uv.lock`, `pylock.toml`,
    /// `pylock.dev.toml`), which the mirror serves it under.
    pub file_name: String,
    /// For a `uv.lock`: the project's `pyproject.toml` from the lock's
    /// folder, which `uv sync --frozen` reads beside it.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub project: Option<BlobRef>,
}

/// The two lock formats a site may give.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub enum SiteLockFormat {
    /// uv's own `uv.lock` (a project's universal lock).
    #[serde(rename = "uv.lock")]
    UvLock,
    /// A PEP 751 `pylock.toml`.
    #[serde(rename = "pylock.toml")]
    Pylock,
}
