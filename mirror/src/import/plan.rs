//! The look-ahead of an import: a signed bundle's signature, series and
//! times, checked from its head before anything is staged.
//!
//! Invariant: reads the bundle's head and the store, writes nothing; what
//! it decides (the series as it is to be, the signature to keep) is only
//! written by the commit ([`crate::store::Store::commit`]), so a refusal
//! here leaves the store as it was.

use std::path::Path;

use llmgw_shared::BundleId;
use llmgw_shared::manifest::Manifest;

use super::{ImportError, ImportOptions};
use crate::store::Store;
use crate::store::series::{self, Policy, Series, SeriesError, SignedBy, Step, follow};
use crate::store::trust;

/// What the signature check decided, for the commit and the report.
#[derive(Default)]
pub(crate) struct SignedPlan {
    pub(super) signature: Option<Vec<u8>>,
    pub(super) signed_by: Option<SignedBy>,
    pub(super) step: Option<Step>,
    /// The series as it is to be after the commit, when it moves.
    pub(super) series: Option<Series>,
    /// The policy as it is to be after the commit, when what it follows or
    /// overrides changes ([`crate::store::series::follow::plan_import`]).
    pub(super) policy: Option<Policy>,
    pub(super) notes: Vec<String>,
    /// The head was read before the full pass (not a pipe).
    pub(super) looked_ahead: bool,
}

/// Checks a bundle's signature, series and times before anything is
/// staged. Returns the manifest sha256 the rest of the import holds the
/// bundle to. When the bundle has no readable manifest, or not the one
/// `expected` names, nothing is decided here: the full check refuses it
/// with its own words.
pub(crate) fn plan_signed(
    store: &Store,
    bundle: &Path,
    expected: Option<&BundleId>,
    opts: &ImportOptions,
) -> Result<(BundleId, SignedPlan), ImportError> {
    let regular = std::fs::metadata(bundle).is_ok_and(|m| m.is_file() || m.is_dir());
    if !regular {
        return piped(store, expected, opts);
    }
    let head = series::read_head(bundle)?;
    let sha = head.manifest_sha256.clone();
    let manifest = match Manifest::from_json_bytes(&head.manifest_bytes) {
        Ok(m) if expected.is_none_or(|e| *e == sha) => m,
        _ => {
            let e = expected.ok_or(SeriesError::NoProof)?;
            let plan = SignedPlan {
                looked_ahead: true,
                ..SignedPlan::default()
            };
            return Ok((e.clone(), plan));
        }
    };
    let bundle_keys = trust::role_keys(store, trust::Role::Bundle)?;
    let signed_by = series::check_signature(&head, &manifest, &bundle_keys)?;
    let policy = Policy::load(store)?;
    match (&signed_by, expected) {
        (None, None) => return Err(SeriesError::NoProof.into()),
        (None, Some(_)) if policy.require_signature => return Err(SeriesError::Unsigned.into()),
        _ => {}
    }
    let mut plan = SignedPlan {
        looked_ahead: true,
        signature: signed_by.as_ref().and(head.signature),
        ..SignedPlan::default()
    };
    if !manifest.is_repair() {
        // What it follows or overrides: written even when the bundle is
        // held already (an override asked for on a second import).
        (plan.policy, plan.notes) = follow::plan_import(
            store,
            &policy,
            signed_by.as_ref(),
            &sha,
            opts.allow_unsigned_override,
        )?;
    }
    if store.bundle_ids()?.contains(&sha) {
        // Held already: importing it again repairs, and moves nothing.
        plan.signed_by = signed_by;
        return Ok((sha, plan));
    }
    plan.notes
        .extend(series::check_times(&manifest, opts.now, &policy)?);
    // A repair bundle names nothing to serve: it never moves a series.
    if let Some(by) = signed_by.as_ref().filter(|_| !manifest.is_repair()) {
        series_step(store, by, &sha, opts, &mut plan)?;
    }
    plan.signed_by = signed_by;
    Ok((sha, plan))
}

/// The plan for a bundle read from a pipe, which can be read once: no
/// look-ahead (a signed bundle is then refused by the full pass; an
/// unsigned one needs `expected`, its --sha256).
fn piped(
    store: &Store,
    expected: Option<&BundleId>,
    opts: &ImportOptions,
) -> Result<(BundleId, SignedPlan), ImportError> {
    let e = expected.ok_or(SeriesError::NoProof)?;
    let mut plan = SignedPlan::default();
    if opts.allow_unsigned_override {
        let policy = Policy::load(store)?;
        (plan.policy, plan.notes) = follow::plan_import(store, &policy, None, e, true)?;
    }
    Ok((e.clone(), plan))
}

/// The step bundle `sha` signed `by` makes in its series, into `plan`: the
/// series as it is to be when it advances, a note when a rollback is
/// allowed; refused when it would go back unasked.
fn series_step(
    store: &Store,
    by: &SignedBy,
    sha: &BundleId,
    opts: &ImportOptions,
    plan: &mut SignedPlan,
) -> Result<(), ImportError> {
    let mut s = Series::load(store)?;
    let step = s.decide(by, sha, opts.allow_rollback)?;
    match &step {
        Step::Advance => {
            s.advance(by, sha);
            plan.series = Some(s);
        }
        Step::Same => {}
        Step::Rollback { held } => {
            tracing::warn!(
                bundle = %sha, key = %by.key_id, channel = %by.channel,
                sequence = by.sequence, held = held, "rollback allowed by --allow-rollback"
            );
            plan.notes.push(format!(
                "rollback allowed (--allow-rollback): key {} channel {} is at sequence \
                 {held}; this bundle (sequence {}) is held, but nodes keep being served \
                 sequence {held}",
                by.key_id,
                llmgw_shared::shown(&by.channel),
                by.sequence
            ));
        }
    }
    plan.step = Some(step);
    Ok(())
}
