//! `llmgw mirror misses`: what nodes asked the mirror for and it did not
//! hold, as a want-list for the connected side. Every `llmgw mirror serve`
//! of the store writes its misses into the store's state (each replica its
//! own file, within seconds of a new miss); this merges them.

use anyhow::Context;
use clap::Args;

use crate::cli::help;
use crate::cli::{OutputArg, StoreArg, print};

#[derive(Args, Debug)]
#[command(after_help = help::after(help::MISSES, help::EXIT_CODES))]
pub struct MissesArgs {
    #[command(flatten)]
    pub store: StoreArg,
    /// Write the want-list (JSON) to this file instead of listing the misses.
    #[arg(long, value_name = "FILE")]
    pub out: Option<std::path::PathBuf>,
    #[command(flatten)]
    pub output: OutputArg,
}

pub fn run_misses(a: MissesArgs) -> anyhow::Result<()> {
    let list = a
        .store
        .location_from_env()
        .transact(None, |store| {
            anyhow::Ok(llmgw_mirror::read_misses(&store.state_dir()))
        })
        .with_context(|| {
            format!(
                "reading the miss log of the store {}",
                a.store.path.display()
            )
        })?;
    let bytes = llmgw_mirror::want_list_bytes(&list);
    if let Some(out) = &a.out {
        llmgw_mirror::write_durable(out, &bytes)
            .with_context(|| format!("writing the want-list {}", out.display()))?;
        eprintln!(
            "{} misses written to {}; carry it to the connected side",
            list.misses.len(),
            out.display()
        );
        return Ok(());
    }
    if a.output.json {
        return print(&String::from_utf8_lossy(&bytes));
    }
    if list.misses.is_empty() {
        return print("no misses: every request for a held name was answered\n");
    }
    let mut text = String::new();
    for m in &list.misses {
        text.push_str(&format!(
            "{:>6}  {:<18} {}\n",
            m.count,
            m.route,
            llmgw_shared::shown(&m.path)
        ));
    }
    print(&text)
}
