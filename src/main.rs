//! The `llmgw` command: parses its arguments and hands them to the libraries.
//!
//! Each command group has its argument structs and a `run` in
//! `src/cli/<group>.rs`; this file only dispatches, sets up logging, and turns
//! the outcome into an exit code: 0 done, 1 failed (the reason on stderr),
//! 2 usage (clap's own exit code for a bad command line).

mod cli;

use std::process::ExitCode;

use clap::{Parser, Subcommand};
use tracing_subscriber::EnvFilter;

/// llmgw offline: build verified bundles, import them into a mirror, serve them
/// to GPU nodes.
#[derive(Parser, Debug)]
#[command(name = "llmgw", version, about)]
struct Cli {
    #[command(subcommand)]
    command: Command,
}

// Parsed once per run: the size difference between variants costs nothing.
#[allow(clippy::large_enum_variant)]
#[derive(Subcommand, Debug)]
enum Command {
    /// Which builds of an engine exist, and which of them a machine gets.
    #[command(subcommand)]
    Recipe(cli::recipe::RecipeCommand),
    /// Make bundles (and, on the air-gapped side, take them in).
    #[command(subcommand)]
    Bundle(cli::bundle::BundleCommand),
    /// The mirror store: what it holds, gc, remove, verify.
    #[command(subcommand)]
    Mirror(cli::mirror::MirrorCommand),
}

fn main() -> ExitCode {
    let args = Cli::parse();
    init_logging();
    let outcome = match args.command {
        Command::Recipe(cmd) => cli::recipe::run(cmd),
        Command::Bundle(cmd) => cli::bundle::run(cmd),
        Command::Mirror(cmd) => cli::mirror::run(cmd),
    };
    match outcome {
        Ok(()) => ExitCode::SUCCESS,
        Err(e) => {
            eprintln!("llmgw: {e:#}");
            if e.downcast_ref::<cli::UsageError>().is_some() {
                ExitCode::from(2)
            } else {
                ExitCode::FAILURE
            }
        }
    }
}

/// Logs go to stderr, so stdout stays the command's output (JSON a script
/// parses); `RUST_LOG` picks what is logged, `info` when unset.
fn init_logging() {
    let filter = EnvFilter::try_from_default_env().unwrap_or_else(|_| EnvFilter::new("info"));
    tracing_subscriber::fmt()
        .with_env_filter(filter)
        .with_writer(std::io::stderr)
        .with_ansi(std::io::IsTerminal::is_terminal(&std::io::stderr()))
        .init();
}
