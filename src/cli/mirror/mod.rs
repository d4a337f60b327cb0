//! `llmgw mirror …`: the mirror store. Each subcommand's arguments live in
//! its own module; this enum is where the next one is added.

use clap::Subcommand;

pub mod env;
pub mod export;
pub mod gc;
pub mod have;
pub mod list;
pub mod misses;
pub mod policy;
pub mod push;
pub mod remove;
pub mod serve;
pub mod verify;

#[derive(Subcommand, Debug)]
pub enum MirrorCommand {
    /// The bundles the store holds.
    List(list::ListArgs),
    /// Write a held bundle again (same manifest, signature and sequence) for the next enclave.
    Export(export::ExportArgs),
    /// Copy held images, charts and model profiles into a registry the site runs (Harbor, zot).
    Push(push::PushArgs),
    /// Delete blobs no held bundle names (and stale staging).
    Gc(gc::GcArgs),
    /// Forget a bundle; its blobs go at the next gc.
    Remove(remove::RemoveArgs),
    /// Re-hash every blob and check every manifest; names each damaged file.
    Verify(verify::VerifyStoreArgs),
    /// Show or set what import demands of bundles: require-signature, enforce-expiry.
    Policy(policy::PolicyArgs),
    /// Write what the store holds (have.json) for `bundle create --have`.
    Have(have::HaveArgs),
    /// What nodes asked the mirror for and it did not hold (a want-list).
    Misses(misses::MissesArgs),
    /// The variables and files a node sets to use the mirror at --url, for what the store holds.
    Env(env::EnvArgs),
    // Boxed: its flags are many, and the other commands' values stay small.
    /// Serve the store to nodes over GitHub-release, Hugging Face Hub and package-index HTTP.
    Serve(Box<serve::ServeArgs>),
}

pub fn run(cmd: MirrorCommand) -> anyhow::Result<()> {
    match cmd {
        MirrorCommand::List(a) => list::run_list(a),
        MirrorCommand::Export(a) => export::run_export(a),
        MirrorCommand::Push(a) => push::run_push(a),
        MirrorCommand::Gc(a) => gc::run_gc(a),
        MirrorCommand::Remove(a) => remove::run_remove(a),
        MirrorCommand::Verify(a) => verify::run_verify(a),
        MirrorCommand::Policy(a) => policy::run_policy(a),
        MirrorCommand::Have(a) => have::run_have(a),
        MirrorCommand::Misses(a) => misses::run_misses(a),
        MirrorCommand::Env(a) => env::run_env(a),
        MirrorCommand::Serve(a) => serve::run(*a),
    }
}
