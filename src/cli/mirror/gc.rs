//! `llmgw mirror gc`: removes the blobs no held bundle names, and staging
//! left by imports that stopped.

use clap::Args;
use llmgw_mirror::GcOptions;
use llmgw_mirror::human_bytes;

use crate::cli::help::{self, EXIT_CODES};
use crate::cli::{OutputArg, StoreArg, print};

#[derive(Args, Debug)]
#[command(after_help = help::after(help::GC, EXIT_CODES))]
pub struct GcArgs {
    #[command(flatten)]
    pub store: StoreArg,
    /// Only say what would be removed.
    #[arg(long)]
    pub dry_run: bool,
    #[command(flatten)]
    pub s3: crate::cli::s3::S3Arg,
    /// With --store s3://…: a blob no bundle names is removed only once it is older than
    /// this many hours, so an import whose manifest is not up yet keeps its blobs.
    #[arg(long, default_value_t = 24, value_name = "HOURS")]
    pub grace_hours: u64,
    #[command(flatten)]
    pub output: OutputArg,
}

pub fn run_gc(a: GcArgs) -> anyhow::Result<()> {
    let opts = GcOptions {
        dry_run: a.dry_run,
        grace: std::time::Duration::from_secs(a.grace_hours.saturating_mul(3600)),
        now: std::time::SystemTime::now(),
    };
    let r = a
        .store
        .location(&a.s3)
        .transact(Some("llmgw mirror gc"), |store| {
            anyhow::Ok(llmgw_mirror::gc(store, opts)?)
        })?;
    if a.output.json {
        return print(&format!("{}\n", serde_json::to_value(&r)?));
    }
    let verb = if a.dry_run { "would remove" } else { "removed" };
    let mut out = String::new();
    for p in &r.blobs_removed {
        out.push_str(&format!("{verb} {}\n", p.display()));
    }
    for p in &r.staging_removed {
        out.push_str(&format!("{verb} staging {}\n", p.display()));
    }
    for p in &r.blobs_young {
        out.push_str(&format!(
            "kept {}: named by no bundle, but younger than --grace-hours\n",
            p.display()
        ));
    }
    for p in &r.staging_kept {
        out.push_str(&format!(
            "kept {}: a volume import in progress (import the remaining volumes to finish it, \
             or delete the folder to give it up)\n",
            p.display()
        ));
    }
    out.push_str(&format!(
        "{verb} {} ({}); kept {} ({}) named by {}\n",
        llmgw_shared::plural(r.blobs_removed.len(), "blob", "blobs"),
        human_bytes(r.bytes_removed),
        llmgw_shared::plural(r.blobs_kept, "blob", "blobs"),
        human_bytes(r.bytes_kept),
        llmgw_shared::plural(r.bundles_kept, "bundle", "bundles")
    ));
    print(&out)
}
