//! `llmgw bundle rehearse`: plays a node against a bundle before it leaves
//! (`llmgw_rehearse`). The command runs itself again inside a private user
//! and network namespace (`unshare -rn`, loopback up), so a node line that
//! reaches for the internet fails here as it would on the far side; where
//! the machine allows no namespace it says why and rehearses on the host's
//! loopback.

use std::path::PathBuf;
use std::process::Command;
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

/// The flag the command gives itself when it runs again inside the
/// namespace (hidden).
const INSIDE: &str = "--inside-namespace";

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
    /// Set when the command runs itself again inside the namespace.
    #[arg(long = "inside-namespace", hide = true)]
    pub inside_namespace: bool,
    #[command(flatten)]
    pub output: OutputArg,
}

pub fn run(a: RehearseArgs) -> anyhow::Result<()> {
    let isolation = if a.inside_namespace {
        Isolation::Namespace
    } else if a.no_namespace {
        Isolation::LoopbackOnly("--no-namespace was given".into())
    } else {
        match namespace_usable() {
            Ok(()) => return again_inside(),
            Err(why) => {
                eprintln!(
                    "llmgw: no private network namespace here ({why}); rehearsing on this \
                     host's loopback instead, where a node line that reaches the internet is \
                     not caught"
                );
                Isolation::LoopbackOnly(why)
            }
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

/// Whether `unshare -rn` makes a namespace here and its loopback comes up;
/// why not, in words.
fn namespace_usable() -> Result<(), String> {
    let o = Command::new("unshare")
        .args(["-rn", "ip", "link", "set", "lo", "up"])
        .output()
        .map_err(|e| format!("cannot run unshare (util-linux): {e}"))?;
    if o.status.success() {
        return Ok(());
    }
    Err(format!(
        "`unshare -rn ip link set lo up` failed: {}",
        String::from_utf8_lossy(&o.stderr).trim()
    ))
}

/// Runs this same command again inside a new user and network namespace
/// with its loopback up; exits with its code.
fn again_inside() -> anyhow::Result<()> {
    let exe = std::env::current_exe().context("finding llmgw's own path")?;
    let status = Command::new("unshare")
        .args([
            "-rn",
            "bash",
            "-c",
            r#"ip link set lo up && exec "$0" "$@""#,
        ])
        .arg(exe)
        .args(std::env::args_os().skip(1))
        .arg(INSIDE)
        .status()
        .context("running unshare")?;
    std::process::exit(status.code().unwrap_or(1));
}
