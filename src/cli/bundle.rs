//! `llmgw bundle …`: making bundles and taking them in. Each subcommand has
//! its own module; this enum is where the next one is added.

use clap::Subcommand;

use super::help;

// Parsed once per run: the size difference between variants costs nothing.
#[allow(clippy::large_enum_variant)]
#[derive(Subcommand, Debug)]
pub enum BundleCommand {
    /// Fetch every build and model file the nodes need, verify each against
    /// its publisher, and write one reproducible bundle.
    Create(super::create::CreateArgs),
    /// Sign a bundle made earlier with your minisign key (its manifest needs a sequence).
    Sign(super::sign::SignArgs),
    /// Check a bundle completely (manifest hash, signature, every blob), then
    /// add it to the store all at once.
    Import(super::import::ImportArgs),
    /// Run every check of import without a store; writes nothing.
    Verify(super::import::VerifyArgs),
    /// Show what a bundle's manifest claims, UNVERIFIED.
    Inspect(super::import::InspectArgs),
    /// The minisign keys a store trusts for llmgw releases or for bundles.
    #[command(subcommand, after_help = help::after(help::TRUST, help::EXIT_CODES))]
    Trust(super::import::TrustCommand),
}

pub fn run(cmd: BundleCommand) -> anyhow::Result<()> {
    match cmd {
        BundleCommand::Create(args) => super::create::run(args),
        BundleCommand::Sign(a) => super::sign::run(a),
        BundleCommand::Import(a) => super::import::run_import(a),
        BundleCommand::Verify(a) => super::import::run_verify(a),
        BundleCommand::Inspect(a) => super::import::run_inspect(a),
        BundleCommand::Trust(c) => super::import::run_trust(c),
    }
}
