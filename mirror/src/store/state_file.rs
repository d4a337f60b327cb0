//! The store's state files (`STORE/state/`), named for their errors: each
//! records something different, so a damaged one costs something
//! different and is mended differently, and its error says which.
//!
//! Invariant: every refusal of a state file names the file, what is wrong
//! with it, what it records and what the operator can do; a parser's own
//! words are the error's `#[source]`, never pasted into its text.

use llmgw_shared::shown;
use thiserror::Error;

/// Which state file.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum StateFile {
    /// `imports.json`: the order bundles were imported in.
    ImportOrder,
    /// `series.json`: the highest sequence accepted in each signed series.
    Series,
    /// `policy.json`: what the store requires of a bundle.
    Policy,
    /// `store-id`: the store's name in its have-lists.
    StoreId,
}

impl StateFile {
    /// What the file records, and what to do when it is damaged.
    pub fn remedy(self) -> &'static str {
        match self {
            StateFile::ImportOrder => {
                "it records the order bundles were imported in: restore it from a backup, or \
                 delete it to fall back to the order of the manifests' file times"
            }
            StateFile::Series => {
                "it records the highest sequence accepted in each signed series, which keeps an \
                 older bundle from rolling nodes back: restore it from a backup; deleting it \
                 forgets those sequences, so an older signed bundle would be accepted again"
            }
            StateFile::Policy => {
                "it records what this store requires of a bundle: restore it from a backup, or \
                 delete it and set the policy again with `llmgw mirror policy`"
            }
            StateFile::StoreId => {
                "it names this store in the have-lists it writes: restore it from a backup, or \
                 delete it and a new id is made (have-lists written before name the old one)"
            }
        }
    }
}

/// What is wrong with a state file that was read (serde_json's own words,
/// where there are any, are the error's source).
#[derive(Debug, Clone, PartialEq, Eq, Error)]
pub enum StateFault {
    /// It does not parse as JSON, or not as this file's fields.
    #[error("it is not the JSON this llmgw writes")]
    NotJson,
    /// Another llmgw's format.
    #[error("it is format {found}, and this llmgw knows format {known}")]
    Format {
        /// The format the file says it is.
        found: u32,
        /// The one this llmgw reads and writes.
        known: u32,
    },
    /// Not a store id.
    #[error("expected 32 lower-case hex digits, found {}", shown(found))]
    NotAnId {
        /// What the file holds, as read (escaped when printed).
        found: String,
    },
}
