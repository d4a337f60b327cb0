//! Format 2: what the operator chose of a Python environment beyond what
//! its resolver and publishers said — where the nodes' interpreter comes
//! from, and the requirements laid over the upstream pins (`--override`,
//! `--constraint` of `bundle create`).
//!
//! Invariant: each is optional and absent when not chosen, so a manifest
//! without them reads as before: the interpreter carried, the pins as
//! published.

use serde::{Deserialize, Serialize};

/// Where the nodes' CPython comes from, when not from the bundle.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum NodeInterpreter {
    /// Nothing is carried: each node brings its own CPython of the
    /// environment's `python` version (`bundle create --python-interpreter
    /// none`).
    None,
}

impl NodeInterpreter {
    /// What a node must have, in words for listings.
    pub fn describe(&self, python: &str) -> String {
        match self {
            NodeInterpreter::None => {
                format!("none carried: the nodes bring their own CPython {python}")
            }
        }
    }
}
