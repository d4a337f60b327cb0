//! `llmgw mirror …`: the mirror store. Each subcommand's arguments live in
//! its own module; this enum is where the next one is added.

use clap::Subcommand;

#[derive(Subcommand, Debug)]
pub enum MirrorCommand {
    /// The bundles the store holds.
    List(super::store::ListArgs),
    /// Delete blobs no held bundle names (and stale staging).
    Gc(super::store::GcArgs),
    /// Forget a bundle; its blobs go at the next gc.
    Remove(super::store::RemoveArgs),
    /// Re-hash every blob and check every manifest; names each damaged file.
    Verify(super::store::VerifyStoreArgs),
    /// Show or set what import demands of bundles: require-signature, enforce-expiry.
    Policy(super::signed::PolicyArgs),
    /// Write what the store holds (have.json) for `bundle create --have`.
    Have(super::have::HaveArgs),
    /// Serve the store to nodes over GitHub-release, Hugging Face Hub and package-index HTTP.
    Serve(super::serve::ServeArgs),
}

pub fn run(cmd: MirrorCommand) -> anyhow::Result<()> {
    match cmd {
        MirrorCommand::List(a) => super::store::run_list(a),
        MirrorCommand::Gc(a) => super::store::run_gc(a),
        MirrorCommand::Remove(a) => super::store::run_remove(a),
        MirrorCommand::Verify(a) => super::store::run_verify(a),
        MirrorCommand::Policy(a) => super::signed::run_policy(a),
        MirrorCommand::Have(a) => super::have::run_have(a),
        MirrorCommand::Serve(a) => super::serve::run(a),
    }
}
