//! `llmgw mirror remove`: stops serving a bundle (its blobs stay until gc).

use clap::Args;

use crate::cli::help::{self, EXIT_CODES};
use crate::cli::{StoreArg, print};

#[derive(Args, Debug)]
#[command(after_help = help::after(help::REMOVE, EXIT_CODES))]
pub struct RemoveArgs {
    /// The bundle's manifest sha256, or a unique prefix of it.
    pub sha256: String,
    #[command(flatten)]
    pub store: StoreArg,
}

pub fn run_remove(a: RemoveArgs) -> anyhow::Result<()> {
    let location = a.store.location_from_env();
    location.transact(Some("llmgw mirror remove"), |store| {
        let id = llmgw_mirror::remove_bundle(store, &a.sha256)?;
        print(&format!(
            "bundle {id} removed from the mirror; run `llmgw mirror gc` to free its blobs\n"
        ))
    })
}
