//! `bundle create --dry-run`: the whole request planned exactly as a real
//! run plans it — llmgw's release (its signature checked), every engine
//! build, the Python environments (resolved and checked), every Hub file —
//! then reported with sizes: what would be fetched, what would be carried,
//! and what a have-list or base manifest lets stay behind.
//!
//! Invariant: nothing large is downloaded and nothing is written but the
//! small files planning itself needs (llmgw's `SHA256SUMS`, Python
//! `.metadata` files and locks, into the cache). The numbers come from the
//! same plan and the same [`crate::delta::Delivery`] rules a real run
//! uses, so the report is what the run would do.

use std::collections::BTreeMap;

use llmgw_shared::Sha256;
use serde::Serialize;

use crate::cache::{Cache, Expect};
use crate::create::Options;
use crate::delta::Delivery;
use crate::error::CreateError;
use crate::plan::{Plan, Stored};
use crate::sources::python::dry_run::{EnvSummary, summarise_envs};
use crate::spec::CreateSpec;

/// One release or repository: what it has, and what of it would travel.
#[derive(Debug, Clone, Serialize)]
pub struct SourceSummary {
    /// `release ggml-org/llama.cpp b6123`, `model acme/tiny@<commit>`.
    pub what: String,
    pub files: usize,
    pub bytes: u64,
    /// Files (and bytes) whose content the site does not hold; files known
    /// only by a git blob sha1 count here (decided once they are fetched).
    pub carry_files: usize,
    pub carry_bytes: u64,
}

/// A count of distinct contents and their bytes.
#[derive(Debug, Clone, Copy, Default, Serialize)]
pub struct Count {
    pub files: usize,
    pub bytes: u64,
}

impl Count {
    fn add(&mut self, size: u64) {
        self.files += 1;
        self.bytes += size;
    }
}

/// What a dry run found.
#[derive(Debug, Clone, Serialize)]
pub struct DryRun {
    pub sources: Vec<SourceSummary>,
    pub environments: Vec<EnvSummary>,
    /// Every distinct content the manifest would name.
    pub distinct_files: usize,
    pub distinct_bytes: u64,
    /// Left behind: a have-list or base manifest holds it (or, for a
    /// repair, the need-list does not ask for it).
    pub held: Count,
    /// Would come over the network (`cached_bytes` of it from the cache).
    pub fetch: Count,
    pub cached_bytes: u64,
    /// Would be in the bundle.
    pub carry: Count,
    /// Small Hub files known only by their git blob sha1: fetched to learn
    /// their sha256, then carried unless the site holds them.
    pub sha256_unknown: Count,
    /// `full`, `delta` or `repair`.
    pub delivery: &'static str,
    /// For a repair: need-list blobs this request does not plan (a real
    /// run refuses them).
    pub not_in_request: Vec<String>,
    pub gaps: Vec<llmgw_shared::manifest::Gap>,
}

/// Plans `spec` as a real run would (the same `plan_request`), asking the
/// upstreams but downloading nothing large and writing nothing, and says
/// what the bundle would carry and what it would leave out.
pub async fn dry_run(spec: &CreateSpec, opts: &Options) -> Result<DryRun, CreateError> {
    let delivery = spec.delta.load()?;
    let request = crate::create::request::Request::of(spec)?;
    let cache = Cache::open(&spec.cache).map_err(|e| CreateError::io(&spec.cache, e))?;
    let (http, auth) = crate::create::request::client(spec, opts)?;
    let planned =
        crate::create::request::plan_request(spec, opts, (&http, &auth), &cache, &request).await?;
    Ok(report(&planned.plan, &planned.envs, &delivery, &cache))
}

/// What the dry run says: each source's files, then the distinct blobs
/// counted once (held, to fetch, to carry), then the delivery.
fn report(
    plan: &Plan,
    envs: &[crate::sources::python::PlannedEnv],
    delivery: &Delivery,
    cache: &Cache,
) -> DryRun {
    let skips = |sha: &Sha256, size: u64| delivery.skips(&Expect::Sha256(sha.clone()), size);
    let sources = sources(plan, &skips);
    let t = tally(plan, &skips, cache);
    let (name, not_in_request) = delivered(delivery, &t.all);
    DryRun {
        sources,
        environments: summarise_envs(envs),
        distinct_files: t.all.len() + t.unknown.files,
        distinct_bytes: t.all.values().sum::<u64>() + t.unknown.bytes,
        held: t.held,
        fetch: t.fetch,
        cached_bytes: t.cached_bytes,
        carry: t.carry,
        sha256_unknown: t.unknown,
        delivery: name,
        not_in_request,
        gaps: plan.gaps.clone(),
    }
}

/// Each release, repository, image and chart of the plan with its files
/// and what of them is carried (`skips`: what the delivery leaves out).
fn sources(plan: &Plan, skips: &dyn Fn(&Sha256, u64) -> bool) -> Vec<SourceSummary> {
    let mut sources = Vec::new();
    for r in &plan.releases {
        let mut s = source(format!("release {} {}", r.repo, r.tag));
        for a in &r.assets {
            s.count(a.size, !skips(&a.sha256, a.size));
        }
        sources.push(s);
    }
    for r in &plan.repos {
        let kind = r.kind.singular();
        let mut s = source(format!("{kind} {}@{}", r.id, r.commit));
        for f in &r.files {
            // A file known by its git blob sha1 only is counted as carried:
            // its sha256 is not known before it is fetched.
            s.count(
                f.size,
                f.lfs_sha256.as_ref().is_none_or(|sha| !skips(sha, f.size)),
            );
        }
        sources.push(s);
    }
    for image in plan
        .images
        .iter()
        .chain(plan.charts.iter().map(|c| &c.artifact))
    {
        let platforms = |list: &[llmgw_shared::manifest::OciDescriptor]| {
            let p: Vec<&str> = list.iter().filter_map(|d| d.platform.as_deref()).collect();
            if p.is_empty() {
                "-".to_string()
            } else {
                p.join(", ")
            }
        };
        let mut s = source(format!(
            "image {} (platforms: {}; left out: {})",
            llmgw_shared::manifest::image_name(image),
            platforms(&image.manifests),
            platforms(&image.left_out)
        ));
        for d in image.all_blobs() {
            s.count(d.size, !skips(&d.sha256, d.size));
        }
        sources.push(s);
    }
    sources
}

/// The distinct blobs of a plan, counted once each.
struct Tally<'a> {
    /// Every blob known by its sha256, with its size.
    all: BTreeMap<&'a Sha256, u64>,
    held: Count,
    fetch: Count,
    carry: Count,
    /// Files known by their git blob sha1 only.
    unknown: Count,
    cached_bytes: u64,
}

fn tally<'a>(plan: &'a Plan, skips: &dyn Fn(&Sha256, u64) -> bool, cache: &Cache) -> Tally<'a> {
    let mut t = Tally {
        all: BTreeMap::new(),
        held: Count::default(),
        fetch: Count::default(),
        carry: Count::default(),
        unknown: Count::default(),
        cached_bytes: 0,
    };
    for d in &plan.downloads {
        match &d.expect {
            Expect::GitBlobSha1(_) => {
                t.unknown.add(d.size);
                t.fetch.add(d.size);
                t.cached_bytes += cache.bytes_present(&d.expect, d.size);
            }
            Expect::Sha256(sha) => {
                t.all.insert(sha, d.size);
                if skips(sha, d.size) {
                    t.held.add(d.size);
                } else {
                    t.fetch.add(d.size);
                    t.carry.add(d.size);
                    t.cached_bytes += cache.bytes_present(&d.expect, d.size);
                }
            }
        }
    }
    for Stored {
        sha256: sha, size, ..
    } in &plan.stored
    {
        if t.all.insert(sha, *size).is_none() {
            if skips(sha, *size) {
                t.held.add(*size);
            } else {
                t.carry.add(*size);
            }
        }
    }
    t
}

/// The delivery's name, and for a repair the blobs it needs that the
/// request does not carry.
fn delivered(delivery: &Delivery, all: &BTreeMap<&Sha256, u64>) -> (&'static str, Vec<String>) {
    match delivery {
        Delivery::Full => ("full", Vec::new()),
        Delivery::Delta { .. } => ("delta", Vec::new()),
        Delivery::Repair { need, .. } => (
            "repair",
            need.blobs
                .iter()
                .filter(|b| all.get(&b.sha256) != Some(&b.size))
                .map(|b| {
                    let uses: Vec<String> = b
                        .uses
                        .iter()
                        .map(|u| llmgw_shared::shown(u).to_string())
                        .collect();
                    format!("{} ({} bytes; {})", b.sha256, b.size, uses.join(", "))
                })
                .collect(),
        ),
    }
}

fn source(what: String) -> SourceSummary {
    SourceSummary {
        what,
        files: 0,
        bytes: 0,
        carry_files: 0,
        carry_bytes: 0,
    }
}

impl SourceSummary {
    /// One more file of `size` bytes; `carried`: the bundle carries it.
    fn count(&mut self, size: u64, carried: bool) {
        self.files += 1;
        self.bytes += size;
        if carried {
            self.carry_files += 1;
            self.carry_bytes += size;
        }
    }
}

impl DryRun {
    /// The report as text: one line per release, repository and
    /// environment (with its largest files), then the totals.
    pub fn to_text(&self) -> String {
        use llmgw_shared::shown;
        let mut out = String::new();
        for s in &self.sources {
            out.push_str(&format!(
                "{}  {} files  {} bytes  carried: {} files  {} bytes\n",
                shown(&s.what),
                s.files,
                s.bytes,
                s.carry_files,
                s.carry_bytes
            ));
        }
        for e in &self.environments {
            out.push_str(&format!(
                "python env {}  {}  {}  {} files  {} bytes  interpreter {}\n",
                e.name, e.platform, e.resolver, e.files, e.bytes, e.interpreter
            ));
            for f in &e.largest {
                out.push_str(&format!("    {:>12}  {}\n", f.size, shown(&f.filename)));
            }
        }
        out.push_str(&format!(
            "planned ({}): {} files, {} bytes\n",
            self.delivery, self.distinct_files, self.distinct_bytes
        ));
        if self.delivery != "full" {
            out.push_str(&format!(
                "left behind ({}): {} files, {} bytes\n",
                if self.delivery == "repair" {
                    "not in the need-list"
                } else {
                    "the site holds them"
                },
                self.held.files,
                self.held.bytes
            ));
        }
        out.push_str(&format!(
            "to fetch: {} files, {} bytes ({} bytes of them already in the cache)\n",
            self.fetch.files, self.fetch.bytes, self.cached_bytes
        ));
        // A repair carries what the need-list names (by sha256) only.
        let unknown = if self.delivery == "repair" {
            Count::default()
        } else {
            self.sha256_unknown
        };
        out.push_str(&format!(
            "to carry: {} files, {} bytes\n",
            self.carry.files + unknown.files,
            self.carry.bytes + unknown.bytes
        ));
        if unknown.files > 0 {
            out.push_str(&format!(
                "  of which {} small Hub files ({} bytes) are known only by their git sha1: \
                 fetched to learn their sha256, carried unless the site holds them\n",
                self.sha256_unknown.files, self.sha256_unknown.bytes
            ));
        }
        for n in &self.not_in_request {
            out.push_str(&format!("not in this request (a real run refuses): {n}\n"));
        }
        for g in &self.gaps {
            out.push_str(&format!(
                "missing: {}: {}\n",
                shown(&g.what),
                // The reason is the operator's instruction: whole (escaped).
                llmgw_shared::shown_message(&g.reason)
            ));
        }
        out
    }
}
