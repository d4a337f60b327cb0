//! The `llmgw` command: parses its arguments and hands them to the libraries.
//!
//! Each command group has its argument structs and a `run` in
//! `src/cli/<group>.rs`; this file only dispatches, sets up logging, and turns
//! the outcome into an exit code: 0 done, 1 failed (the reason on stderr),
//! 2 usage (clap's own exit code for a bad command line), 130 stopped by
//! Ctrl-C.

mod cli;

use std::io::Write;
use std::process::ExitCode;

use clap::{CommandFactory, Parser, Subcommand};
use cli::help;
use tracing_subscriber::EnvFilter;

/// llmgw offline: build verified bundles, import them into a mirror, serve them
/// to GPU nodes.
#[derive(Parser, Debug)]
#[command(
    name = "llmgw",
    version,
    about,
    after_help = help::after(help::TOP, help::TOP_EXIT_CODES)
)]
pub struct Cli {
    #[command(subcommand)]
    command: Command,
}

// Parsed once per run: the size difference between variants costs nothing.
#[allow(clippy::large_enum_variant)]
#[derive(Subcommand, Debug)]
enum Command {
    /// Which builds of an engine exist, and which of them a machine gets.
    #[command(
        subcommand,
        after_help = help::after(help::RECIPE, help::RECIPE_EXIT_CODES)
    )]
    Recipe(cli::recipe::RecipeCommand),
    /// Make bundles (connected side); check them and take them in (air-gapped side).
    #[command(subcommand, after_help = help::after(help::BUNDLE, help::TOP_EXIT_CODES))]
    Bundle(cli::bundle::BundleCommand),
    /// The mirror: serve the store to nodes; list, verify, gc, remove what it holds.
    #[command(subcommand, after_help = help::after(help::MIRROR, help::TOP_EXIT_CODES))]
    Mirror(cli::mirror::MirrorCommand),
    /// Print a shell completion script: bash, zsh or fish.
    #[command(after_help = help::after(help::COMPLETIONS, help::EXIT_CODES))]
    Completions(cli::docs::CompletionsArgs),
    /// Print llmgw's man page, or write one page per command to a folder.
    #[command(after_help = help::after(help::MANPAGE, help::EXIT_CODES))]
    Manpage(cli::docs::ManpageArgs),
}

fn main() -> ExitCode {
    let args = Cli::parse();
    // A rehearsal's mirror logs every request it plays: its report is
    // the output, so its log says only what went wrong unless asked.
    let rehearsal = matches!(
        &args.command,
        Command::Bundle(cli::bundle::BundleCommand::Rehearse(_))
    );
    init_logging(if rehearsal { "warn" } else { "info" });
    let outcome = match args.command {
        Command::Recipe(cmd) => cli::recipe::run(cmd),
        Command::Bundle(cmd) => cli::bundle::run(cmd),
        Command::Mirror(cmd) => cli::mirror::run(cmd),
        Command::Completions(a) => cli::docs::completions(a, Cli::command()),
        Command::Manpage(a) => cli::docs::manpage(a, Cli::command()),
    };
    match outcome {
        Ok(()) => ExitCode::SUCCESS,
        Err(e) => {
            // The one place an error is printed: each layer once.
            // Never glued to a progress line left on the terminal.
            let mut err = cli::progress::stderr_clean();
            let _ = writeln!(err, "llmgw: {}", llmgw_shared::Chain(e.as_ref()));
            cli::exit_code(&e)
        }
    }
}

/// Logs go to stderr, so stdout stays the command's output (JSON a script
/// parses); `RUST_LOG` picks what is logged, `default` when unset.
fn init_logging(default: &str) {
    let filter = EnvFilter::try_from_default_env().unwrap_or_else(|_| EnvFilter::new(default));
    tracing_subscriber::fmt()
        .with_env_filter(filter)
        .with_writer(cli::progress::stderr_clean)
        .with_ansi(std::io::IsTerminal::is_terminal(&std::io::stderr()))
        .init();
}

#[cfg(test)]
mod tests {
    use clap::CommandFactory;

    use super::Cli;

    /// Every flag and argument of every command says what it is, and every
    /// command has examples under its --help.
    #[test]
    fn every_flag_is_described_and_every_command_has_examples() {
        let mut root = Cli::command();
        root.build();
        root.clone().debug_assert();
        let mut stack = vec![(String::from("llmgw"), root)];
        let mut seen = 0;
        while let Some((name, cmd)) = stack.pop() {
            seen += 1;
            for arg in cmd.get_arguments() {
                let id = arg.get_id().as_str();
                if id == "help" || id == "version" {
                    continue;
                }
                assert!(
                    arg.get_help()
                        .is_some_and(|h| !h.to_string().trim().is_empty()),
                    "{name}: {id} has no help"
                );
            }
            // clap's own `help` subcommands excepted.
            if !name.split(' ').any(|w| w == "help") {
                let after = cmd
                    .get_after_help()
                    .map(|h| h.to_string())
                    .unwrap_or_default();
                assert!(after.starts_with("Examples:\n  "), "{name}: no examples");
                assert!(after.contains("Exit codes"), "{name}: no exit codes");
            }
            for sub in cmd.get_subcommands() {
                stack.push((format!("{name} {}", sub.get_name()), sub.clone()));
            }
        }
        assert!(seen >= 24, "{seen} commands");
    }
}
