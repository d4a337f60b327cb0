//! `llmgw mirror env`: the variables and files a node sets to use the
//! mirror at `--url`, for what the store holds — the same answer the
//! serving mirror gives at `GET /-/env`.

use anyhow::Context;
use clap::Args;

use crate::cli::help;
use crate::cli::{OutputArg, StoreArg, UsageError, print};

#[derive(Args, Debug)]
#[command(after_help = help::after(help::ENV, help::EXIT_CODES))]
pub struct EnvArgs {
    #[command(flatten)]
    pub store: StoreArg,
    /// The URL nodes reach the mirror at, e.g. http://mirror.site.internal:8080.
    #[arg(long, value_name = "URL")]
    pub url: String,
    #[command(flatten)]
    pub output: OutputArg,
}

pub fn run_env(a: EnvArgs) -> anyhow::Result<()> {
    let url = a.url.trim_end_matches('/');
    let host = url
        .strip_prefix("http://")
        .or_else(|| url.strip_prefix("https://"))
        .unwrap_or_default();
    let host_ok = !host.is_empty()
        && host.chars().all(|c| {
            c.is_ascii_alphanumeric() || matches!(c, '.' | '-' | ':' | '[' | ']' | '/' | '_')
        });
    if !host_ok {
        return Err(UsageError(format!(
            "--url {}: expected the http:// or https:// URL nodes reach the mirror at, e.g. \
             http://mirror.site.internal:8080",
            llmgw_shared::shown(&a.url)
        ))
        .into());
    }
    let bundles = a
        .store
        .location_from_env()
        .transact(None, |store| {
            anyhow::Ok(llmgw_mirror::held_in_order(store)?)
        })
        .with_context(|| format!("reading the store {}", a.store.path.display()))?;
    let manifests = bundles.iter().filter_map(|h| h.manifest.as_ref().ok());
    let env = llmgw_mirror::node_env(&llmgw_mirror::NodeHolds::of_manifests(manifests), url);
    if a.output.json {
        return print(&format!("{}\n", serde_json::to_string_pretty(&env)?));
    }
    print(&env.to_shell())
}
