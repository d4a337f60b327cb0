//! `llmgw mirror list`: the bundles a store holds, and the ones it cannot
//! read. Each bundle's lines come from its summary file in the store's
//! state (`llmgw_mirror::held_summaries`); only a manifest without one is
//! read in full.

use anyhow::Context;
use clap::Args;
use llmgw_mirror::Summary;
use llmgw_shared::Chain;

use crate::cli::help;
use crate::cli::{OutputArg, StoreArg, print};

#[derive(Args, Debug)]
#[command(after_help = help::after(help::LIST, help::LIST_EXIT_CODES))]
pub struct ListArgs {
    #[command(flatten)]
    pub store: StoreArg,
    #[command(flatten)]
    pub output: OutputArg,
}

pub fn run_list(a: ListArgs) -> anyhow::Result<()> {
    let bundles = a
        .store
        .location_from_env()
        .transact(None, |store| {
            anyhow::Ok(llmgw_mirror::held_summaries(store)?)
        })
        .with_context(|| format!("reading the store {}", a.store.path.display()))?;
    let mut summaries: Vec<Summary> = Vec::new();
    let mut damaged: Vec<String> = Vec::new();
    for (id, s) in bundles.iter() {
        match s {
            Ok(s) => summaries.push(s.clone()),
            Err(e) => damaged.push(format!("DAMAGED bundle {id}: {}", Chain(e))),
        }
    }
    if a.output.json {
        print(&format!("{}\n", serde_json::to_value(&summaries)?))?;
    } else if summaries.is_empty() && damaged.is_empty() {
        print(&format!(
            "the store {} holds no bundles\n",
            a.store.path.display()
        ))?;
    } else {
        let mut out = String::new();
        for s in &summaries {
            out.push_str(&s.to_text());
        }
        let held = llmgw_shared::plural(summaries.len(), "bundle", "bundles");
        out.push_str(&format!("{held} held\n"));
        print(&out)?;
    }
    if damaged.is_empty() {
        return Ok(());
    }
    // The readable bundles were listed; the damaged ones are named here
    // (and the exit code says something is wrong).
    eprintln!("{}", damaged.join("\n"));
    anyhow::bail!(
        "{} of the {} in {} cannot be read and {} not served; import each again to \
         repair it (`llmgw mirror verify` checks the rest)",
        damaged.len(),
        llmgw_shared::plural(bundles.len(), "bundle", "bundles"),
        a.store.path.display(),
        llmgw_shared::noun(damaged.len(), "is", "are")
    )
}
