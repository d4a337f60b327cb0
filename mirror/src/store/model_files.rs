//! The store's rule for model files that can run code when loaded
//! (`llmgw mirror policy model-files …`, kept in `STORE/state/policy.json`
//! as `model_files`): the setting only; import applies it
//! (`crate::import::model_files`).
//!
//! Invariant: a store without the field allows every file, as every store
//! did before the setting existed.

use serde::{Deserialize, Serialize};

/// Which model files import accepts.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum ModelFiles {
    /// Every file (the default).
    #[default]
    Allow,
    /// No file that loads with pickle: by extension (`.bin`, `.pt`,
    /// `.pth`, `.pkl`, `.pickle`, `.ckpt`, `.joblib`) or by content (a
    /// pickle of any protocol at its start, also under gzip, bzip2, xz or
    /// zstd; a zip or tar member that is one; a `.npy` object array).
    NoPickle,
    /// Only files the Hub scanned and found safe.
    ScannedClean,
}

impl ModelFiles {
    /// The word the command line and `mirror policy` use.
    pub fn word(self) -> &'static str {
        match self {
            ModelFiles::Allow => "allow",
            ModelFiles::NoPickle => "no-pickle",
            ModelFiles::ScannedClean => "scanned-clean",
        }
    }

    /// Whether this is the default (left out of `policy.json`).
    pub fn is_allow(&self) -> bool {
        *self == ModelFiles::Allow
    }
}
