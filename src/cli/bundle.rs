//! `llmgw bundle …`: making bundles and taking them in. Each subcommand has
//! its own module; this enum is where the next one is added.

use clap::Subcommand;

#[derive(Subcommand, Debug)]
pub enum BundleCommand {
    /// Fetch every build and model file the nodes need, verify each against
    /// its publisher, and write one reproducible bundle.
    Create(super::create::CreateArgs),
}

pub fn run(cmd: BundleCommand) -> anyhow::Result<()> {
    match cmd {
        BundleCommand::Create(args) => super::create::run(args),
    }
}
