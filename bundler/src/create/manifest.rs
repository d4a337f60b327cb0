//! The fetch phase: the files the manifest needs before it can be written
//! (those the Hub names only by a git blob sha1, whose sha256 is learnt by
//! downloading them into the cache), then the manifest itself.
//!
//! Invariant: the manifest is complete and valid when this phase ends, so
//! the bundle's whole layout is known before the first byte is written.

use std::collections::BTreeMap;

use llmgw_shared::manifest::Manifest;

use crate::cache::{Cache, Expect};
use crate::delta::Delivery;
use crate::error::CreateError;
use crate::fetch::{self, Download, Fetched};
use crate::http::Http;
use crate::plan::{Plan, Stored};
use crate::series::Series;
use crate::spec::CreateSpec;
use crate::writer::Blob;

use super::Options;

/// The fetch phase done: the manifest, and what the write phase works on.
pub(super) struct FirstFetch {
    pub manifest: Manifest,
    /// Carried files already at hand (in the cache), the manifest's first.
    pub small: Vec<Blob>,
    /// Every other download, for the write phase.
    pub rest: Vec<Download>,
    /// The downloads of this phase.
    pub fetched: Vec<Fetched>,
}

/// Fetches the files known only by their git blob sha1 and builds the
/// manifest (`delivery` applied: a delta's prerequisites, a repair's list).
#[allow(clippy::too_many_arguments)]
pub(super) async fn fetch_first(
    spec: &CreateSpec,
    opts: &Options,
    http: &Http,
    cache: &Cache,
    series: &Series,
    delivery: &Delivery,
    mut plan: Plan,
) -> Result<FirstFetch, CreateError> {
    let (first, rest): (Vec<Download>, Vec<Download>) = std::mem::take(&mut plan.downloads)
        .into_iter()
        .partition(|d| matches!(d.expect, Expect::GitBlobSha1(_)));
    let fetched = fetch::fetch_all(http, cache, first.clone(), spec.jobs, &opts.progress).await?;
    let by_expect: BTreeMap<&Expect, &Fetched> = first
        .iter()
        .map(|d| &d.expect)
        .zip(fetched.iter())
        .collect();
    let manifest = build_manifest(spec, opts, series, plan_into_parts(&mut plan), &by_expect)?;
    let mut manifest = delivery.apply(manifest)?;
    // The SBOM last: it describes the manifest as it will be written.
    let signatures = crate::attest::record(
        std::mem::take(&mut plan.signatures),
        &spec.signatures,
        cache,
    )?;
    let (signatures, signature_blobs) = signatures.unzip();
    let mut sbom = crate::sbom::attach(
        &mut manifest,
        (std::mem::take(&mut plan.repo_evidence), signatures),
        cache,
    )?;
    sbom.extend(signature_blobs.into_iter().flatten());
    let carried = manifest.carried_blobs();
    let mut small: Vec<Blob> = fetched
        .iter()
        .filter(|f| carried.contains_key(&f.sha256))
        .map(|f| Blob {
            sha256: f.sha256.clone(),
            size: f.size,
            path: f.path.clone(),
        })
        .collect();
    for Stored {
        sha256: sha,
        path,
        size,
    } in plan
        .stored
        .iter()
        .filter(|s| carried.contains_key(&s.sha256))
    {
        small.push(Blob {
            sha256: sha.clone(),
            size: *size,
            path: path.clone(),
        });
    }
    small.extend(sbom);
    Ok(FirstFetch {
        manifest,
        small,
        rest,
        fetched,
    })
}

type Parts = (
    Vec<llmgw_shared::manifest::Release>,
    Vec<crate::plan::PlannedRepo>,
    Vec<llmgw_shared::manifest::Gap>,
    Vec<llmgw_shared::manifest::PythonEnv>,
    (
        Vec<llmgw_shared::manifest::OciImage>,
        Vec<llmgw_shared::manifest::HelmChart>,
        Vec<llmgw_shared::manifest::Extra>,
    ),
);

fn plan_into_parts(plan: &mut Plan) -> Parts {
    (
        std::mem::take(&mut plan.releases),
        std::mem::take(&mut plan.repos),
        std::mem::take(&mut plan.gaps),
        std::mem::take(&mut plan.python_envs),
        (
            std::mem::take(&mut plan.images),
            std::mem::take(&mut plan.charts),
            std::mem::take(&mut plan.extras),
        ),
    )
}

/// The manifest, each file known only by its git blob sha1 entered with
/// the sha256 its fetched bytes hashed to.
fn build_manifest(
    spec: &CreateSpec,
    opts: &Options,
    series: &Series,
    (releases, planned, gaps, python_envs, (images, charts, extras)): Parts,
    by_expect: &BTreeMap<&Expect, &Fetched>,
) -> Result<Manifest, CreateError> {
    let fetched = |oid: &llmgw_shared::GitOid| {
        by_expect
            .get(&Expect::GitBlobSha1(oid.clone()))
            .map(|f| f.sha256.clone())
    };
    let repos = planned
        .into_iter()
        .map(|r| r.into_repo(fetched))
        .collect::<Result<Vec<_>, _>>()?;
    let created = opts
        .source_date_epoch
        .unwrap_or_else(llmgw_shared::build_time_unix);
    let mut m = Manifest::new(spec.arches.clone(), created);
    m.releases = releases;
    m.repos = repos;
    m.gaps = gaps;
    m.python_envs = python_envs;
    m.images = images;
    m.charts = charts;
    m.extras = extras;
    // Format 3 only when it carries images or charts (4 with runtime
    // extras), so a format 2 mirror still imports every other bundle.
    m.format_version = m.needed_format();
    series.apply(&mut m);
    // The one sort of create: every later step (a delta, the SBOM and its
    // referrers) sorts only what it adds.
    m.sort();
    m.validate()?;
    Ok(m)
}
