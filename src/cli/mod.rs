//! One module per command group: its clap argument structs and its `run`.

pub mod bundle;
pub mod create;
pub mod docs;
pub mod have;
pub mod help;
pub mod import;
pub mod mirror;
pub mod recipe;
pub mod serve;
pub mod sign;
pub mod signed;
pub mod store;
pub mod volumes;

use std::io::{ErrorKind, Write};
use std::path::PathBuf;

use anyhow::Context;
use clap::Args;

/// Writes a command's output to stdout. A reader that went away (`| head`)
/// is not a failure of the command.
pub fn print(out: &str) -> anyhow::Result<()> {
    let mut stdout = std::io::stdout().lock();
    match stdout
        .write_all(out.as_bytes())
        .and_then(|()| stdout.flush())
    {
        Err(e) if e.kind() == ErrorKind::BrokenPipe => Ok(()),
        other => other.context("writing to stdout"),
    }
}

/// A wrong command line or request: `main` exits 2 for it, as clap does for
/// a bad flag, where any other error exits 1.
#[derive(Debug)]
pub struct UsageError(pub String);

impl std::fmt::Display for UsageError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(&self.0)
    }
}

impl std::error::Error for UsageError {}

/// Stopped by Ctrl-C: `main` exits 130, as a shell does for SIGINT.
#[derive(Debug)]
pub struct Interrupted(pub String);

impl std::fmt::Display for Interrupted {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(&self.0)
    }
}

impl std::error::Error for Interrupted {}

/// An error as one line: library errors already name their cause in their
/// message, so printing the chain of sources too would repeat it.
pub fn flat(e: impl std::fmt::Display) -> anyhow::Error {
    anyhow::anyhow!("{e}")
}

/// `--store DIR`, declared once and flattened into every command that
/// works on a store, so that each says the same about it.
#[derive(Args, Debug, Clone)]
pub struct StoreArg {
    /// The mirror store: the folder `bundle import` adds bundles to and `mirror serve`
    /// serves (made by the first `bundle import` or `bundle trust add`).
    #[arg(id = "store", long = "store", env = "LLMGW_STORE", value_name = "DIR")]
    pub path: PathBuf,
}
