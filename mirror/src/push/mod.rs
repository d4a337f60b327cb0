//! `llmgw mirror push`, the mirror's half: what to copy into a site's own
//! registry (Harbor, zot, distribution), as a [`PushPlan`] the bundler's
//! registry client sends. The images and charts held (every platform
//! held, with their attestations and referrers) and the models' two OCI
//! profiles, each under the name the mirror serves it by.
//!
//! Invariant: push sends what `mirror serve` would serve and nothing else:
//! the plan is read from the same index ([`held`]), so a tag pushed is the
//! tag the mirror serves (moved only by the store's trusted order), and a
//! blob is named only with its bytes checked at hand ([`repo`]). Blobs are
//! read from a folder store; a bucket is refused, as export refuses it.

mod error;
mod held;
mod repo;

use std::collections::{BTreeMap, BTreeSet};

use llmgw_shared::manifest::registry_key;
use llmgw_shared::push::PushPlan;
use llmgw_shared::shown;

pub use error::PushPlanError;

use crate::serve::index::oci::{OciRepo, registry_label};
use crate::store::Store;

/// What was asked to be pushed.
#[derive(Debug, Clone, Default)]
pub struct Pick {
    /// Images by repository path (`acme/app`) or `REGISTRY/PATH`.
    pub images: Vec<String>,
    /// Charts by name.
    pub charts: Vec<String>,
    /// Hub repositories (`acme/tiny`, `datasets/acme/set`).
    pub models: Vec<String>,
    /// Everything held.
    pub all: bool,
}

/// What `pick` asks for in `store`, ready to push.
pub fn plan(store: &Store, pick: &Pick) -> Result<PushPlan, PushPlanError> {
    if store.is_bucket() {
        return Err(PushPlanError::Bucket);
    }
    if !pick.all && pick.images.is_empty() && pick.charts.is_empty() && pick.models.is_empty() {
        return Err(PushPlanError::NothingAsked);
    }
    let served = held::index(store, pick.all || !pick.models.is_empty())?;
    let oci = &served.index.oci;
    // Target name -> (repository, what it is); a name twice is refused.
    let mut chosen: Chosen<'_> = BTreeMap::new();
    let mut add = |r, what| choose(&mut chosen, r, what);
    let carried: Vec<&OciRepo> = oci.repos().collect();
    if pick.all {
        for r in &carried {
            add(r, image_what(r))?;
        }
        for name in oci.names() {
            if let Some(r) = oci.generated(name) {
                add(r, format!("model profile {name}"))?;
            }
        }
    }
    for asked in &pick.images {
        for r in images(&carried, asked)? {
            add(r, image_what(r))?;
        }
    }
    for asked in &pick.charts {
        let Some(at) = served.charts.get(asked) else {
            return Err(not_held("chart", asked, served.charts.keys()));
        };
        for (registry, repository) in at {
            if let Some(r) = carried
                .iter()
                .find(|r| &r.registry == registry && &r.name == repository)
            {
                add(r, format!("chart {}", shown(asked)))?;
            }
        }
    }
    for asked in &pick.models {
        let base = asked.to_ascii_lowercase();
        let mut found = false;
        for name in [format!("models/{base}"), format!("modelpack/{base}")] {
            if let Some(r) = oci.generated(&name) {
                add(r, format!("model profile {name}"))?;
                found = true;
            }
        }
        if !found {
            let held = oci
                .names()
                .filter_map(|n| n.strip_prefix("models/"))
                .collect::<Vec<_>>();
            return Err(not_held("model", asked, held.into_iter()));
        }
    }
    let mut plan = PushPlan::default();
    for (name, (r, what)) in chosen {
        plan.repos
            .push(repo::of(store, &served.index, r, &name, &what)?);
    }
    Ok(plan)
}

/// Target name -> (repository, what it is).
type Chosen<'a> = BTreeMap<String, (&'a OciRepo, String)>;

/// Adds `repo` to what is pushed; a target name two registries hold is
/// refused.
fn choose<'a>(
    chosen: &mut Chosen<'a>,
    repo: &'a OciRepo,
    what: String,
) -> Result<(), PushPlanError> {
    if let Some((other, _)) = chosen.get(&repo.name)
        && other.registry != repo.registry
    {
        return Err(PushPlanError::Ambiguous {
            asked: shown(&repo.name).to_string(),
            held: format!(
                "{}, {}",
                registry_label(&other.registry),
                registry_label(&repo.registry)
            ),
        });
    }
    chosen.insert(repo.name.clone(), (repo, what));
    Ok(())
}

/// How a carried repository is named in messages.
fn image_what(r: &OciRepo) -> String {
    match &r.registry {
        Some(reg) => format!("image {}/{}", shown(reg), shown(&r.name)),
        None => format!("image {}", shown(&r.name)),
    }
}

/// The carried repositories `asked` names: by path (every registry
/// holding it) or `REGISTRY/PATH`.
fn images<'a>(carried: &[&'a OciRepo], asked: &str) -> Result<Vec<&'a OciRepo>, PushPlanError> {
    let by_path: Vec<&OciRepo> = carried
        .iter()
        .copied()
        .filter(|r| r.name == asked)
        .collect();
    if !by_path.is_empty() {
        return Ok(by_path);
    }
    let with_registry = asked.split_once('/').and_then(|(reg, path)| {
        let key = registry_key(reg)?;
        carried
            .iter()
            .copied()
            .find(|r| r.registry.as_deref() == Some(key.as_str()) && r.name == path)
    });
    match with_registry {
        Some(r) => Ok(vec![r]),
        None => {
            let names: BTreeSet<String> = carried.iter().map(|r| r.name.clone()).collect();
            Err(not_held("image", asked, names.iter()))
        }
    }
}

fn not_held<S: AsRef<str>>(
    kind: &'static str,
    asked: &str,
    held: impl Iterator<Item = S>,
) -> PushPlanError {
    let held: Vec<String> = held.map(|s| shown(s.as_ref()).to_string()).collect();
    PushPlanError::NotHeld {
        kind,
        asked: shown(asked).to_string(),
        held: if held.is_empty() {
            "none".into()
        } else {
            held.join(", ")
        },
    }
}
