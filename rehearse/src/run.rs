//! One rehearsal from start to end: a throwaway store, the import, the
//! mirror on loopback, every check, the report.
//!
//! Invariant: the store is a temporary folder of this run (never one the
//! operator named), removed when the run ends whatever happened; the
//! server listens on 127.0.0.1 only and stops before the folder goes.

use std::net::SocketAddr;
use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

use llmgw_mirror::{
    BucketServing, ConnLimits, ImportOptions, ImportOutcome, NodeHolds, Role, ServeConfig, Store,
    StoreLocation, import_with, node_env, start,
};
use llmgw_shared::BundleId;
use llmgw_shared::manifest::Manifest;

use crate::checks;
use crate::client::Mirror;
use crate::error::RehearseError;
use crate::report::{Check, Report};

/// Where the rehearsal's clients run.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Isolation {
    /// Inside a private network namespace: only its loopback answers.
    Namespace,
    /// On the host's loopback, because no namespace could be made (why).
    LoopbackOnly(String),
}

/// What to rehearse.
#[derive(Debug, Clone)]
pub struct RehearseOptions {
    /// The bundle: a `.tar`, `.tar.zst` or a directory.
    pub bundle: PathBuf,
    /// Its manifest's sha256, as the operator carries it.
    pub sha256: BundleId,
    /// Keys llmgw's own release must verify with, as `bundle trust add
    /// --role release` gives a real store.
    pub trust: Vec<PathBuf>,
    /// The folder the throwaway store is made in (a temporary folder of
    /// the system's when none).
    pub work: Option<PathBuf>,
    /// How long to wait for the mirror to be ready (its model images).
    pub ready: Duration,
    /// Where the clients run.
    pub isolation: Isolation,
}

/// Rehearses the bundle; a failed check is a row of the report, an error
/// is what kept the rehearsal from running.
pub async fn rehearse(opts: &RehearseOptions) -> Result<Report, RehearseError> {
    let base = opts.work.clone().unwrap_or_else(std::env::temp_dir);
    let work = tempfile::Builder::new()
        .prefix("llmgw-rehearse-")
        .tempdir_in(&base)
        .map_err(|source| RehearseError::Work { dir: base, source })?;
    let store = Store::at(work.path().join("store"));
    let manifest = import(&store, opts).await?;
    let cfg = ServeConfig {
        store: StoreLocation::Folder(store.root().to_path_buf()),
        bucket: BucketServing::default(),
        listen: SocketAddr::from(([127, 0, 0, 1], 0)),
        public_url: None,
        tls: None,
        token_file: None,
        limits: ConnLimits::default(),
    };
    let running = start(cfg)
        .await
        .map_err(|e| RehearseError::Serve { source: e.into() })?;
    let mirror = Mirror::new(&running.url())?;
    let checks = match ready(&mirror, opts.ready).await {
        Ok(()) => run_checks(&mirror, &store, &manifest, work.path()).await,
        Err(e) => Err(e),
    };
    let _ = running.shutdown(Duration::from_secs(5)).await;
    Ok(Report {
        manifest_sha256: opts.sha256.to_string(),
        isolation: match &opts.isolation {
            Isolation::Namespace => {
                "in a private network namespace: only its loopback answers".into()
            }
            Isolation::LoopbackOnly(why) => {
                format!("on this host's loopback, not in a private network namespace: {why}")
            }
        },
        checks: checks?,
    })
}

/// The import into the throwaway store, off the async workers; the
/// manifest it holds.
async fn import(store: &Store, opts: &RehearseOptions) -> Result<Manifest, RehearseError> {
    for key in &opts.trust {
        llmgw_mirror::add_trusted_key(store, key, Role::Release).map_err(|source| {
            RehearseError::Trust {
                key: key.clone(),
                source: source.into(),
            }
        })?;
    }
    let held = store.clone();
    let (store, bundle, sha) = (store.clone(), opts.bundle.clone(), opts.sha256.clone());
    let refused = |source| RehearseError::Refused {
        bundle: opts.bundle.clone(),
        source,
    };
    let outcome = tokio::task::spawn_blocking(move || {
        let quiet = llmgw_shared::progress::Quiet;
        import_with(
            &store,
            &bundle,
            Some(&sha),
            &ImportOptions::default(),
            &quiet,
        )
        .map_err(Box::new)
    })
    .await
    .map_err(|e| RehearseError::Serve { source: e.into() })?
    .map_err(refused)?;
    match outcome {
        ImportOutcome::Imported(r) => Ok(r.manifest),
        // A fresh store holds nothing: this is the same bundle imported by
        // a race nobody runs; read what it holds.
        ImportOutcome::AlreadyHeld {
            manifest_sha256, ..
        } => held
            .read_bundle(&manifest_sha256)
            .map_err(|e| RehearseError::Serve { source: e.into() }),
    }
}

/// Waits until `/readyz` answers 200: every model image is served.
async fn ready(mirror: &Mirror, wait: Duration) -> Result<(), RehearseError> {
    let start = Instant::now();
    let mut last = String::from("nothing");
    while start.elapsed() < wait {
        match mirror.ask(reqwest::Method::GET, "/readyz", &[]).await {
            Ok(a) if a.status == reqwest::StatusCode::OK => return Ok(()),
            Ok(a) => last = a.describe(),
            Err(e) => last = e,
        }
        tokio::time::sleep(Duration::from_millis(10)).await;
    }
    Err(RehearseError::NotReady {
        seconds: wait.as_secs(),
        last,
    })
}

/// Every check, reported in the order a node meets them. The areas run at
/// once (a node's clients do not wait for each other either; each area
/// writes only under its own folder of `work`), so the rehearsal takes as
/// long as its slowest area, not their sum.
async fn run_checks(
    mirror: &Mirror,
    store: &Store,
    m: &Manifest,
    work: &Path,
) -> Result<Vec<Check>, RehearseError> {
    let env = node_env(&NodeHolds::of_manifests([m]), &mirror.base);
    let uv = crate::uv::find(store, m, work);
    let (env_block, python, hub, oci, releases) = tokio::join!(
        checks::env_block::check(&env),
        checks::python::check(m, &env, uv.as_ref(), work),
        checks::hub::check(mirror, m),
        checks::oci::check(mirror, m),
        checks::releases::check(mirror, m),
    );
    let mut out = vec![env_block];
    if let Some(uv) = &uv {
        out.push(Check::note("python", "the uv used", uv.from.clone()));
    }
    out.extend(python);
    out.extend(hub);
    out.extend(oci);
    out.extend(releases);
    Ok(out)
}
