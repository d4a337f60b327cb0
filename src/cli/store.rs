//! `llmgw mirror list | gc | remove | verify`: looking after a mirror store.

use clap::Args;
use llmgw_mirror::gc;
use llmgw_mirror::inspect::{Summary, human_bytes};
use llmgw_mirror::progress::Terminal;
use llmgw_mirror::store::Store;
use llmgw_mirror::store_verify;

use super::help::{self, EXIT_CODES};
use super::{StoreArg, print};

#[derive(Args, Debug)]
#[command(after_help = help::after(help::LIST, help::LIST_EXIT_CODES))]
pub struct ListArgs {
    #[command(flatten)]
    pub store: StoreArg,
    /// Print JSON instead of text.
    #[arg(long)]
    pub json: bool,
}

#[derive(Args, Debug)]
#[command(after_help = help::after(help::GC, EXIT_CODES))]
pub struct GcArgs {
    #[command(flatten)]
    pub store: StoreArg,
    /// Only say what would be removed.
    #[arg(long)]
    pub dry_run: bool,
    /// Print JSON instead of text.
    #[arg(long)]
    pub json: bool,
}

#[derive(Args, Debug)]
#[command(after_help = help::after(help::REMOVE, EXIT_CODES))]
pub struct RemoveArgs {
    /// The bundle's manifest sha256, or a unique prefix of it.
    pub sha256: String,
    #[command(flatten)]
    pub store: StoreArg,
}

#[derive(Args, Debug)]
#[command(after_help = help::after(help::STORE_VERIFY, help::STORE_VERIFY_EXIT_CODES))]
pub struct VerifyStoreArgs {
    #[command(flatten)]
    pub store: StoreArg,
    /// Print JSON instead of text.
    #[arg(long)]
    pub json: bool,
}

pub fn run_list(a: ListArgs) -> anyhow::Result<()> {
    let store = Store::at(&a.store.path);
    let bundles = store
        .read_each()
        .map_err(|e| anyhow::anyhow!("reading the store {}: {e}", a.store.path.display()))?;
    let mut summaries: Vec<Summary> = Vec::new();
    let mut damaged: Vec<String> = Vec::new();
    for (id, m) in &bundles {
        match m {
            Ok(m) => summaries.push(Summary::of(id, m)),
            Err(e) => damaged.push(format!("DAMAGED bundle {id}: {e}")),
        }
    }
    if a.json {
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
        out.push_str(&format!("{} bundles held\n", summaries.len()));
        print(&out)?;
    }
    if damaged.is_empty() {
        return Ok(());
    }
    // The readable bundles were listed; the damaged ones are named here
    // (and the exit code says something is wrong).
    eprintln!("{}", damaged.join("\n"));
    anyhow::bail!(
        "{} of the {} bundles in {} cannot be read and are not served; import each again to \
         repair it (`llmgw mirror verify` checks the rest)",
        damaged.len(),
        bundles.len(),
        a.store.path.display()
    )
}

pub fn run_gc(a: GcArgs) -> anyhow::Result<()> {
    let store = Store::at(&a.store.path);
    let r = gc::gc(&store, a.dry_run).map_err(super::flat)?;
    if a.json {
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
    for p in &r.staging_kept {
        out.push_str(&format!(
            "kept {}: a volume import in progress (import the remaining volumes to finish it, \
             or delete the folder to give it up)\n",
            p.display()
        ));
    }
    out.push_str(&format!(
        "{verb} {} blobs ({}); kept {} blobs ({}) named by {} bundles\n",
        r.blobs_removed.len(),
        human_bytes(r.bytes_removed),
        r.blobs_kept,
        human_bytes(r.bytes_kept),
        r.bundles_kept
    ));
    print(&out)
}

pub fn run_remove(a: RemoveArgs) -> anyhow::Result<()> {
    let id = gc::remove(&Store::at(&a.store.path), &a.sha256).map_err(super::flat)?;
    print(&format!(
        "bundle {id} removed from the mirror; run `llmgw mirror gc` to free its blobs\n"
    ))
}

pub fn run_verify(a: VerifyStoreArgs) -> anyhow::Result<()> {
    let store = Store::at(&a.store.path);
    let r = store_verify::verify_store(&store, &Terminal::new("checking")).map_err(super::flat)?;
    if a.json {
        print(&format!("{}\n", serde_json::to_value(&r)?))?;
    } else {
        let mut out = String::new();
        for d in &r.damaged {
            out.push_str(&format!("DAMAGED {}: {}\n", d.path.display(), d.problem));
        }
        for p in &r.unreferenced {
            out.push_str(&format!(
                "UNREFERENCED {}: intact, but no held bundle names it (a removed bundle's, or \
                 left by an import killed while it committed); `llmgw mirror gc` removes it\n",
                p.display()
            ));
        }
        out.push_str(&format!(
            "checked {} blobs ({} bytes) and {} bundles: {}\n",
            r.blobs_checked,
            r.bytes_checked,
            r.bundles,
            if r.damaged.is_empty() {
                "all intact".to_string()
            } else {
                format!("{} damaged", r.damaged.len())
            }
        ));
        print(&out)?;
    }
    if !r.damaged.is_empty() {
        anyhow::bail!(
            "{} damaged file(s) in {}; remove the damaged blobs and import the bundles that carry \
             them again",
            r.damaged.len(),
            a.store.path.display()
        );
    }
    Ok(())
}
