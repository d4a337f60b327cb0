//! `llmgw bundle rehearse`: a GPU node played on the connected side, before
//! the bundle leaves. The bundle is imported into a throwaway store (the
//! same checks as a real import), served by the real mirror on loopback,
//! and asked for everything a node would ask: the lines `mirror env`
//! prints, every Python environment installed (dry run) from its index and
//! its lock, every Hub file listed and HEADed as `huggingface_hub` does,
//! every image's closure and blob, every chart, every release asset.
//!
//! The command line runs the rehearsal inside a private network namespace
//! (`unshare -rn`), where nothing but the namespace's own loopback answers,
//! so a node line that would reach for the internet fails here as it would
//! on the far side; where the machine allows no namespace it says so and
//! rehearses on the host's loopback.
//!
//! Invariant: a rehearsal never writes into a real store (its store is a
//! temporary folder removed at the end), and a bundle whose manifest does
//! not hash to the sha256 given is refused before anything is served, as
//! import refuses it.

mod checks;
mod client;
mod error;
mod report;
mod run;
mod uv;

pub use error::RehearseError;
pub use report::{Check, Report, Verdict};
pub use run::{Isolation, RehearseOptions, rehearse};
