//! `llmgw bundle rehearse`: plays a node against a bundle before it leaves
//! (`llmgw_rehearse`). The command enters a private user and network
//! namespace first (as `unshare -rn` makes one, loopback up: `namespace`),
//! so a node line that reaches for the internet fails here as it would on
//! the far side; where the machine allows no namespace it says why and
//! rehearses on the host's loopback.

use std::path::PathBuf;
use std::time::Duration;

use anyhow::Context;
use clap::Args;
use llmgw_rehearse::{Isolation, RehearseOptions};
use llmgw_shared::BundleId;

use super::import::parse_sha256_arg;
use crate::cli::help;
use crate::cli::{OutputArg, print};

const EXIT: &str = "Exit codes: 0 every check passed (notes are not failures), 1 a check \
                    failed (each with its fix) or the bundle was refused as import would refuse \
                    it, 2 usage error.";

#[derive(Args, Debug)]
#[command(
    after_help = help::after(help::REHEARSE, EXIT),
    mut_arg("json", |a| a.help("Print the report as JSON on stdout instead of a table."))
)]
pub struct RehearseArgs {
    /// The bundle: a .tar, a .tar.zst or a directory.
    pub bundle: PathBuf,
    /// The bundle's manifest sha256: 64 hex digits, or the path of the `.sha256` file create
    /// wrote.
    #[arg(long, value_parser = parse_sha256_arg)]
    pub sha256: BundleId,
    /// A minisign public key (KEY.pub) trusted for llmgw's release, as the real store will
    /// trust it (repeatable).
    #[arg(long = "trust", value_name = "KEY.pub")]
    pub trust: Vec<PathBuf>,
    /// The folder the throwaway store is made in (it needs the bundle's size free) [default:
    /// $TMPDIR].
    #[arg(long, value_name = "DIR")]
    pub work_dir: Option<PathBuf>,
    /// How long to wait for the mirror to serve every model image.
    #[arg(long, value_name = "SECONDS", default_value_t = 600)]
    pub ready_seconds: u64,
    /// Run on the host's loopback without trying a private network namespace.
    #[arg(long)]
    pub no_namespace: bool,
    #[command(flatten)]
    pub output: OutputArg,
}

pub fn run(a: RehearseArgs) -> anyhow::Result<()> {
    // Before any thread starts: the namespace is entered in place.
    let isolation = if a.no_namespace {
        Isolation::LoopbackOnly("--no-namespace was given".into())
    } else {
        match super::namespace::enter() {
            Ok(()) => Isolation::Namespace,
            Err(super::namespace::NoNamespace::Refused(why)) => {
                eprintln!(
                    "llmgw: no private network namespace here ({why}); rehearsing on this \
                     host's loopback instead, where a node line that reaches the internet is \
                     not caught"
                );
                Isolation::LoopbackOnly(why)
            }
            Err(super::namespace::NoNamespace::Broken(why)) => anyhow::bail!(
                "the private network namespace was made but cannot be used ({why}); pass \
                 --no-namespace to rehearse on this host's loopback"
            ),
        }
    };
    let opts = RehearseOptions {
        bundle: a.bundle,
        sha256: a.sha256,
        trust: a.trust,
        work: a.work_dir,
        ready: Duration::from_secs(a.ready_seconds),
        isolation,
    };
    // This process opens no store but the rehearsal's own, removed when
    // it ends: nothing it writes needs to survive a power cut.
    llmgw_mirror::throwaway_stores_only();
    let rt = tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()
        .context("starting the async runtime")?;
    let report = rt.block_on(llmgw_rehearse::rehearse(&opts))?;
    if a.output.json {
        print(&format!("{}\n", serde_json::to_string_pretty(&report)?))?;
    } else {
        print(&report.to_text())?;
    }
    if report.failed() {
        anyhow::bail!("the rehearsal failed: a node would fail where the report says FAIL");
    }
    Ok(())
}
