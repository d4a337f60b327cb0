//! `llmgw mirror push`: what the store holds copied into a registry the
//! site already runs (Harbor, zot, distribution), so its clusters pull
//! from it: the mirror says what (`llmgw_mirror::push_plan`), the
//! bundler's registry client sends it (`llmgw_bundler::push`).

use anyhow::Context;
use clap::{Args, ValueEnum};
use llmgw_bundler::push::{PushError, Summary, TagPolicy, Target};

use crate::cli::help::{self, EXIT_CODES};
use crate::cli::{StoreArg, UsageError, print};

#[derive(Args, Debug)]
#[command(after_help = help::after(help::PUSH, EXIT_CODES))]
pub struct PushArgs {
    /// The registry, and a path to push under: HOST[:PORT][/PREFIX].
    #[arg(long, value_name = "REGISTRY[/PREFIX]")]
    pub to: String,
    /// An image held, by repository path (`acme/app`) or REGISTRY/PATH (repeatable).
    #[arg(long = "image", value_name = "NAME")]
    pub images: Vec<String>,
    /// A chart held, by name (repeatable).
    #[arg(long = "chart", value_name = "NAME")]
    pub charts: Vec<String>,
    /// A Hub repository held: both its OCI profiles, models/ID and modelpack/ID (repeatable).
    #[arg(long = "models", value_name = "REPO", num_args = 1..)]
    pub models: Vec<String>,
    /// Every image, chart and model profile held.
    #[arg(long)]
    pub all: bool,
    /// A tag the registry holds naming another manifest: move it, leave it, or merge the indexes.
    #[arg(long, value_enum, default_value = "overwrite")]
    pub tags: Tags,
    /// Speak plain HTTP to the registry (never over a network you do not trust).
    #[arg(long)]
    pub insecure_registry: bool,
    #[command(flatten)]
    pub store: StoreArg,
}

/// `--tags`.
#[derive(Debug, Clone, Copy, ValueEnum)]
pub enum Tags {
    Overwrite,
    Keep,
    Merge,
}

pub fn run_push(a: PushArgs) -> anyhow::Result<()> {
    let target = Target::parse(&a.to, a.insecure_registry)
        .map_err(|e| UsageError(llmgw_shared::Chain(&e).to_string()))?;
    let policy = match a.tags {
        Tags::Overwrite => TagPolicy::Overwrite,
        Tags::Keep => TagPolicy::Keep,
        Tags::Merge => TagPolicy::Merge,
    };
    let pick = llmgw_mirror::PushPick {
        images: a.images.clone(),
        charts: a.charts.clone(),
        models: a.models.clone(),
        all: a.all,
    };
    let env = |k: &str| {
        std::env::var_os(k)
            .filter(|v| !v.is_empty())
            .map(std::path::PathBuf::from)
    };
    let (auth_file, home) = (env("REGISTRY_AUTH_FILE"), env("HOME"));
    let location = a.store.location_from_env();
    let summary = location.transact(None, |store| -> anyhow::Result<Summary> {
        // Shared, as `mirror verify` holds it: no gc or import removes a
        // blob while it is being sent.
        let _lock =
            llmgw_mirror::StoreLock::acquire_shared(&store.lock_path(), "`llmgw mirror push`")?;
        let plan = match llmgw_mirror::push_plan(store, &pick) {
            Err(e @ llmgw_mirror::PushPlanError::NothingAsked)
            | Err(e @ llmgw_mirror::PushPlanError::NotHeld { .. })
            | Err(e @ llmgw_mirror::PushPlanError::Ambiguous { .. }) => {
                return Err(UsageError(e.to_string()).into());
            }
            other => other?,
        };
        let (http, auth) = llmgw_bundler::push::client(
            auth_file.as_deref(),
            home.as_deref(),
            llmgw_bundler::RetryPolicy::default(),
        )?;
        let rt = tokio::runtime::Builder::new_multi_thread()
            .enable_all()
            .build()
            .context("starting the async runtime")?;
        let say = |line: &str| eprintln!("{line}");
        let pushed: Result<Summary, PushError> = rt.block_on(llmgw_bundler::push::push(
            &http, &auth, &target, &plan, policy, &say,
        ));
        Ok(pushed?)
    })?;
    for kept in &summary.tags_kept {
        eprintln!("kept {kept}");
    }
    print(&format!(
        "pushed {} blobs ({} bytes), mounted {}, skipped {} already there ({} bytes); manifests: \
         {} pushed, {} there; tags: {} set, {} unchanged, {} merged, {} kept\n",
        summary.blobs_pushed,
        summary.bytes_pushed,
        summary.blobs_mounted,
        summary.blobs_skipped,
        summary.bytes_skipped,
        summary.manifests_pushed,
        summary.manifests_skipped,
        summary.tags_set,
        summary.tags_unchanged,
        summary.tags_merged,
        summary.tags_kept.len()
    ))
}
