//! The command tree, as files: `bundle/` and `mirror/` hold one module per
//! subcommand (its clap arguments and its `run`), `recipe.rs` and `docs.rs`
//! the small groups; `bundle/import/volumes.rs` is what `bundle import` and
//! `bundle verify` do with a set of volumes; `progress/` draws the progress
//! events the libraries send. Flags several commands share are declared
//! here once and flattened: [`StoreArg`], [`OutputArg`].

pub mod bundle;
pub mod check_written;
pub mod docs;
pub mod help;
pub mod mirror;
pub mod progress;
pub mod recipe;
pub mod s3;

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

/// The exit code of a failed command: 2 for a wrong command line or
/// request (a [`UsageError`], or a `bundle create` error that is one),
/// 130 when stopped by Ctrl-C, else 1.
pub fn exit_code(e: &anyhow::Error) -> std::process::ExitCode {
    let usage = e.downcast_ref::<UsageError>().is_some()
        || e.downcast_ref::<llmgw_bundler::CreateError>()
            .is_some_and(llmgw_bundler::CreateError::is_usage);
    if usage {
        std::process::ExitCode::from(2)
    } else if e.downcast_ref::<Interrupted>().is_some() {
        std::process::ExitCode::from(130)
    } else {
        std::process::ExitCode::FAILURE
    }
}

/// `--json`, declared once and flattened into every command that can
/// print JSON; a command whose JSON says more words it with
/// `#[command(mut_arg("json", |a| a.help(…)))]`.
#[derive(Args, Debug, Clone, Copy)]
pub struct OutputArg {
    /// Print JSON instead of text.
    #[arg(long)]
    pub json: bool,
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
