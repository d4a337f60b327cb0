//! `llmgw bundle …`: making bundles and taking them in. Each subcommand has
//! its own module; this enum is where the next one is added.

use clap::Subcommand;

use super::help;

pub mod create;
pub mod import;
pub mod inspect;
mod namespace;
pub mod rehearse;
pub mod sbom;
pub mod sign;
pub mod trust;
pub mod verify;

// Parsed once per run: the size difference between variants costs nothing.
#[allow(clippy::large_enum_variant)]
#[derive(Subcommand, Debug)]
pub enum BundleCommand {
    /// Fetch every build and model file the nodes need, verify each against
    /// its publisher, and write one reproducible bundle.
    Create(create::CreateArgs),
    /// Sign a bundle made earlier with your minisign key (its manifest needs a sequence).
    Sign(sign::SignArgs),
    /// Check a bundle completely (manifest hash, signature, every blob), then
    /// add it to the store all at once.
    Import(import::ImportArgs),
    /// Run every check of import without a store; writes nothing.
    Verify(verify::VerifyArgs),
    /// Play a node against a bundle before it leaves: import it into a throwaway store, serve
    /// it on a private loopback, and do what a node does.
    Rehearse(rehearse::RehearseArgs),
    /// Show what a bundle's manifest claims, UNVERIFIED.
    Inspect(inspect::InspectArgs),
    /// Print the CycloneDX 1.6 SBOM a bundle carries (checked against its manifest).
    Sbom(sbom::SbomArgs),
    /// The minisign keys a store trusts for llmgw releases or for bundles.
    #[command(subcommand, after_help = help::after(help::TRUST, help::EXIT_CODES))]
    Trust(trust::TrustCommand),
}

pub fn run(cmd: BundleCommand) -> anyhow::Result<()> {
    match cmd {
        BundleCommand::Create(args) => create::run(args),
        BundleCommand::Sign(a) => sign::run(a),
        BundleCommand::Import(a) => import::run_import(a),
        BundleCommand::Verify(a) => verify::run_verify(a),
        BundleCommand::Inspect(a) => inspect::run_inspect(a),
        BundleCommand::Rehearse(a) => rehearse::run(a),
        BundleCommand::Sbom(a) => sbom::run_sbom(a),
        BundleCommand::Trust(c) => trust::run_trust(c),
    }
}

/// A result as `--json` prints it: its status first, then the result's own
/// fields, then the summary of the bundle it is about.
#[derive(serde::Serialize)]
pub(crate) struct Printed<'a, R: serde::Serialize> {
    pub status: &'static str,
    #[serde(flatten)]
    pub result: &'a R,
    pub bundle: llmgw_mirror::Summary,
}
