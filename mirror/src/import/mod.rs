//! `llmgw bundle import`: check a bundle completely, then add it to the
//! store all at once.
//!
//! Every blob is hashed once, while it streams from the bundle into a
//! private staging folder, `STORE/tmp/import-<manifest sha256>/` (same
//! filesystem as `blobs/`, never served). Only when every check of
//! [`crate::bundle::verify`] passed — manifest hash, signature, every blob — are
//! the staged blobs renamed into `blobs/`, each already synced to disk; then
//! the directories are synced, and the manifest is written to
//! `bundles/<sha>.json` last. A server reading the store starts from
//! `bundles/`, so it sees the whole bundle or none of it.
//!
//! Each blob is written on a writer thread while the next chunk is read and
//! hashed, and once its hash matched it is fsynced and given its staged
//! name by a background syncer, so the disk catches up while the next blob
//! streams; the import waits for the syncer before anything is renamed
//! into `blobs/`.
//!
//! Before the commit, the bundle's claims are checked against the bundles
//! held ([`crate::store::claims`]): no second version of a file, nothing added to
//! a signed release. The commit numbers the bundle in the store's import
//! order ([`crate::store::state`]) just before its manifest appears.
//!
//! A signed bundle ([`crate::store::series`]) is checked before anything is
//! staged: its signature against the keys trusted for bundles, its
//! sequence against its series (rollback, equivocation), its expiry against
//! the store's policy. The commit writes its signature as
//! `bundles/<sha>.json.minisig` and moves its series up, both before the
//! manifest appears, and takes both back if it fails.
//!
//! On a refusal the staging folder is removed and `blobs/`, `bundles/` and
//! `state/` are exactly as before; a commit that fails takes back the
//! blobs, folders and import number it added. A process killed before the
//! commit leaves only its staging folder, which is keyed by the manifest
//! hash: running the same import again finds the blobs it already verified
//! there (a staged blob gets its final name only after its hash matched and
//! its bytes were synced) and does not read them again. Killed during the
//! commit, it may leave verified blobs in `blobs/` that no manifest names:
//! they are never served (the server only serves what a held manifest
//! names), `mirror verify` and `mirror gc` name them, gc removes them, and
//! running the import again uses them.
//!
//! One module per step: `plan` (the look-ahead at a signed bundle's head),
//! `staging` (the folder the check streams into), and `error` (the
//! import's own failures); the commit (step 4) is the store's own
//! ([`crate::store::commit`]), handed what was staged. This file runs them
//! in order.

mod error;
pub(crate) mod layers;
mod model_files;
mod pickles;
mod plan;
pub mod run;
mod staging;
pub mod volumes;
mod xet;

use std::path::Path;

use llmgw_shared::manifest::Manifest;
use llmgw_shared::{BundleId, Sha256};

use crate::bundle::verify::{self, Outcome, Proved};
use crate::store::Store;
use crate::store::claims;
use crate::store::commit::Staged;
use crate::store::fsutil::StoreLock;
use crate::store::series::{SignedBy, Step};
use crate::store::trust;
use llmgw_shared::progress::Progress;

pub use error::ImportError;
pub(crate) use plan::plan_signed;
use staging::Staging;

/// How an import treats a signed series, and the time it runs at.
#[derive(Debug, Clone, Copy)]
pub struct ImportOptions {
    /// Accept a signed bundle older than its series' highest (held, never
    /// current).
    pub allow_rollback: bool,
    /// Let an unsigned bundle move names signed series serve (recorded in
    /// the policy, logged): [`crate::store::series::follow`].
    pub allow_unsigned_override: bool,
    /// Now, in Unix seconds: expiry and future `created` are judged by it.
    pub now: u64,
}

impl Default for ImportOptions {
    fn default() -> Self {
        Self {
            allow_rollback: false,
            allow_unsigned_override: false,
            now: std::time::SystemTime::now()
                .duration_since(std::time::UNIX_EPOCH)
                .map(|d| d.as_secs())
                .unwrap_or(0),
        }
    }
}

/// What an import did, and what it proved. Serialized, it is what
/// `bundle import --json` reports (the manifest itself and the series step
/// left out).
#[derive(Debug, Clone, serde::Serialize)]
pub struct ImportReport {
    /// The bundle's identity: the sha256 of its `manifest.json`.
    pub manifest_sha256: BundleId,
    /// The manifest as verified and now held in `bundles/`.
    #[serde(skip)]
    pub manifest: Manifest,
    /// What reading the bundle proved.
    #[serde(flatten)]
    pub proved: Proved,
    /// Verified earlier: already in the store, or staged by a killed run.
    #[serde(rename = "blobs_reused")]
    pub blobs_at_hand: usize,
    /// Their bytes.
    #[serde(rename = "bytes_reused")]
    pub bytes_at_hand: u64,
    /// New files in `blobs/`.
    pub blobs_added: usize,
    /// Their bytes: what the store grew by.
    pub bytes_added: u64,
    /// Bundles the store holds now.
    pub bundles_held: usize,
    /// Who signed the bundle (a key trusted for bundles), if anyone.
    pub signed_by: Option<SignedBy>,
    /// What it did to its series.
    #[serde(skip)]
    pub step: Option<Step>,
    /// Warnings the operator must see (expiry, clock, rollback).
    #[serde(rename = "warnings")]
    pub notes: Vec<String>,
}

/// How an import ended.
#[derive(Debug, Clone)]
pub enum ImportOutcome {
    /// The bundle is held now; what was checked and added.
    Imported(Box<ImportReport>),
    /// The bundle, and every blob it names, was already held: nothing done.
    AlreadyHeld {
        /// The bundle's manifest sha256.
        manifest_sha256: BundleId,
        /// Bundles the store holds (unchanged).
        bundles_held: usize,
    },
}

/// The store's model-file rule on a verified bundle, reading each file
/// where it is: staged by this import, or held already.
fn check_model_files(
    store: &Store,
    staging: &Staging<'_>,
    m: &Manifest,
) -> Result<(), ImportError> {
    let rule = crate::store::series::Policy::load(store)?.model_files;
    let read = |sha: &Sha256, range: std::ops::Range<u64>| -> std::io::Result<Vec<u8>> {
        let staged = staging.staged_path(sha.as_str());
        if staged.is_file() {
            return pickles::read_file_range(&staged, range);
        }
        let mut r = store
            .read_blob_range(sha, range.clone())
            .map_err(std::io::Error::other)?;
        let mut out = Vec::new();
        std::io::Read::read_to_end(
            &mut std::io::Read::take(&mut r, range.end - range.start),
            &mut out,
        )?;
        Ok(out)
    };
    model_files::check(rule, m, &read)
}

/// Clears what stopped processes left in `tmp/` (a state file a `kill -9`
/// caught between its write and its rename; see
/// [`crate::store::leftovers`]) before this import stages. A leftover that
/// cannot be removed only stays for `gc` to name: the import goes on.
pub(crate) fn sweep_leftovers(store: &Store, lock: &StoreLock) {
    use crate::store::leftovers::{Sweeper, sweep};
    if let Err(e) = sweep(store, lock, Sweeper::Import, false) {
        tracing::warn!(error = %llmgw_shared::Chain(&e), "cannot clear a leftover in the store's tmp/; `llmgw mirror gc` will");
    }
}

/// Imports the bundle at `bundle` into `store`. `expected_sha256` is the
/// manifest hash carried apart; without it the bundle must be signed by a
/// key the store trusts for bundles.
pub fn import_with(
    store: &Store,
    bundle: &Path,
    expected: Option<&BundleId>,
    opts: &ImportOptions,
    progress: &dyn Progress,
) -> Result<ImportOutcome, ImportError> {
    store.create_dirs()?;
    let lock = StoreLock::acquire(&store.lock_path(), "the import")?;
    sweep_leftovers(store, &lock);
    let trusted = trust::keys(store)?;
    let (sha, plan) = plan_signed(store, bundle, expected, opts)?;
    // A guard: the staging folder is removed when this function returns,
    // whatever it returns (committed, held already, refused); only a killed
    // import leaves it, for the next run to carry on from.
    let mut staging = Staging::new(store, &sha);
    staging.signature_checked = plan.looked_ahead;
    let outcome = verify::check_bundle(bundle, &sha, &trusted, &mut staging, progress)
        .and_then(|o| staging.settle().map(|()| o));
    match outcome {
        Err(e) => Err(e),
        Ok(Outcome::Stopped {
            manifest_sha256, ..
        }) => {
            // Held already: only what the store follows may change.
            if let Some(p) = &plan.policy {
                p.save(store)?;
            }
            Ok(ImportOutcome::AlreadyHeld {
                manifest_sha256,
                bundles_held: store.bundle_ids()?.len(),
            })
        }
        Ok(Outcome::Verified(v)) => {
            check_model_files(store, &staging, &v.manifest)?;
            xet::check_hub_hashes(store, &staging.dir, &v.manifest)?;
            // Under the lock, so no other import slips in between.
            let unrecorded =
                claims::check(store, &v.manifest_sha256, &v.manifest, &v.proved.signed)?;
            let added = store
                .commit(Staged {
                    dir: &staging.dir,
                    id: &v.manifest_sha256,
                    manifest: &v.manifest,
                    manifest_bytes: &v.manifest_bytes,
                    signature: plan.signature.as_deref(),
                    series: plan.series.as_ref(),
                    policy: plan.policy.as_ref(),
                    learned: staging.layers.learned(&v.manifest_sha256),
                    xet: staging.xet.staged(store, &staging.dir),
                    unrecorded,
                })
                .map_err(ImportError::Commit)?;
            Ok(ImportOutcome::Imported(Box::new(ImportReport {
                manifest_sha256: v.manifest_sha256,
                manifest: v.manifest,
                proved: v.proved,
                blobs_at_hand: v.blobs_at_hand,
                bytes_at_hand: v.bytes_at_hand,
                blobs_added: added.blobs,
                bytes_added: added.bytes,
                bundles_held: store.bundle_ids()?.len(),
                signed_by: plan.signed_by,
                step: plan.step,
                notes: plan.notes,
            })))
        }
    }
}
