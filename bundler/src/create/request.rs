//! What a run asks for, and asking every upstream what it means: the
//! request is checked without any network ([`Request::of`]), then
//! [`plan_request`] fills a [`Plan`] from llmgw's release, each engine's
//! builds, the Python environments, each Hub repository, and the container
//! images and charts.

use super::options::Options;
use crate::cache::Cache;
use crate::error::{CreateError, RequestError};
use crate::http::Http;
use crate::plan::Plan;
use crate::sources::engines::{self, EngineBuilds};
use crate::sources::hub::{self, HubClient};
use crate::sources::llmgw_release;
use crate::sources::oci::{self, auth::RegistryAuth};
use crate::sources::python::{EnvRequest, PlannedEnv};
use crate::spec::{CreateSpec, EngineSpec};

/// What a run asks for, checked against the recipe table and the flags
/// without any network: the Python environments, and each engine's builds.
pub struct Request {
    pub python: Vec<EnvRequest>,
    pub engines: Vec<EngineBuilds>,
    /// `--engine ENGINE=latest`: made a concrete release when planning.
    pub latest: Vec<EngineSpec>,
}

impl Request {
    /// Refuses Python engines the table does not know, unknown engines, bad
    /// versions and flags that name nothing, before any network.
    pub fn of(spec: &CreateSpec) -> Result<Self, CreateError> {
        let is_latest = |e: &&EngineSpec| e.version == engines::latest::LATEST;
        if let Some(e) = spec
            .engines
            .iter()
            .find(|e| is_latest(e) && engines::is_python(&e.name))
        {
            return Err(RequestError::LatestNotRelease {
                engine: e.name.clone(),
            }
            .into());
        }
        let python = crate::sources::python::requests_of(spec)?;
        let engines = spec
            .engines
            .iter()
            .filter(|e| !engines::is_python(&e.name) && !is_latest(e))
            .map(|e| engines::resolve(e, &spec.arches))
            .collect::<Result<Vec<_>, _>>()?;
        let latest = spec.engines.iter().filter(is_latest).cloned().collect();
        Ok(Self {
            python,
            engines,
            latest,
        })
    }
}

/// The run's client, with the registries' token sessions attached (for
/// images and charts), and the sessions.
pub fn client(
    spec: &CreateSpec,
    opts: &Options,
) -> Result<(Http, std::sync::Arc<RegistryAuth>), CreateError> {
    let http = Http::new(&spec.hf_endpoint, opts.hf_token.clone(), opts.retry)?;
    oci::with_sessions(
        http,
        spec.registry_auth_file.as_deref(),
        spec.home.as_deref(),
    )
}

/// A request planned: the plan, and the Python environments as resolved
/// (for a dry run's report).
pub struct Planned {
    pub plan: Plan,
    pub envs: Vec<PlannedEnv>,
}

/// Asks every upstream what the request means: llmgw's release (its
/// signature checked first), each engine's builds, the Python environments
/// (resolved and checked at their publishers), and each Hub repository.
/// A dry run plans through here exactly as a real run does, so it fails
/// where the run would. Downloads only the small files planning needs.
pub async fn plan_request(
    spec: &CreateSpec,
    opts: &Options,
    (http, auth): (&Http, &RegistryAuth),
    cache: &Cache,
    request: &Request,
) -> Result<Planned, CreateError> {
    let progress = &opts.progress;
    let mut plan = Plan::default();
    if let Some(l) = &spec.llmgw {
        progress.message(&format!(
            "llmgw {}: checking the release signature",
            l.version
        ));
        llmgw_release::plan(http, cache, l, &spec.arches, spec.allow_missing, &mut plan).await?;
    }
    plan_engines(spec, http, progress, request, &mut plan).await?;
    // A want-list adds projects to the environments it names, so they are
    // resolved with them; its other wants are planned after the request's
    // own repositories and engines, each a gap where its upstream lacks it.
    let wants = spec.wants.clone().unwrap_or_default();
    let python =
        super::wants::extend_envs(http, &spec.pypi, &request.python, &wants, &mut plan).await;
    let envs =
        crate::sources::python::plan_for(spec, http, cache, progress, &python, &mut plan).await?;
    let envs_planned = plan.python_envs.clone();
    crate::sources::extras::plan(&spec.extras, &envs_planned, &mut plan);
    let dsl = (spec.jobs, spec.allow_missing);
    crate::sources::extras::dsl::plan(http, cache, dsl, &spec.extras, &envs, &mut plan).await?;
    let hub = HubClient {
        http,
        endpoint: &spec.hf_endpoint,
        have_token: opts.hf_token.is_some(),
    };
    for r in &spec.repos {
        hub::plan(&hub, r, spec.allow_missing, &mut plan).await?;
    }
    if !wants.is_empty() {
        progress.message(&format!(
            "--want: {} wants to plan, {} no route plans from",
            wants.wants.len(),
            wants.unplannable.len()
        ));
        super::wants::plan_hub(&hub, &spec.repos, &wants, &mut plan).await;
        let (api, arches) = ((spec.github_api.as_str(), &spec.signatures), &spec.arches);
        super::wants::plan_releases(http, api, arches, &spec.engines, &wants, &mut plan).await;
    }
    for p in &spec.engine_images.picks {
        let i = &p.image;
        progress.message(&format!(
            "--engine-image {}: {} ({}, {}) for {}",
            p.asked,
            i.reference(),
            i.variant,
            i.needs(),
            p.arches.join(", ")
        ));
    }
    for g in &spec.engine_images.gaps {
        let what = format!("--engine-image {} for {}", g.asked, g.arch);
        progress.message(&format!("{what}: no image ({})", g.reason));
        plan.gap(what, g.reason.clone());
    }
    oci::plan_all(
        http,
        auth,
        cache,
        progress,
        &spec.images,
        &spec.charts,
        &spec.registries,
        &spec.arches,
        opts.source_date_epoch,
        &mut plan,
    )
    .await?;
    if !wants.is_empty() {
        let ctx = super::wants::ImageCtx {
            http,
            auth,
            cache,
            progress,
            spec,
            created: opts.source_date_epoch,
        };
        super::wants::plan_images(&ctx, &wants, &mut plan).await;
        for (what, why) in wants.unplannable {
            plan.gap(what, why);
        }
    }
    let reached = crate::reach::check(http, cache, &mut plan, &crate::reach::Flags::of(spec)).await;
    plan.finish(reached)?;
    Ok(Planned { plan, envs })
}

/// Each engine's builds planned from its release: `latest` made a concrete
/// release first (`engines::latest`), then every engine as asked.
async fn plan_engines(
    spec: &CreateSpec,
    http: &Http,
    progress: &crate::progress::Events,
    request: &Request,
    plan: &mut Plan,
) -> Result<(), CreateError> {
    let mut latest = Vec::new();
    for e in &request.latest {
        let eb = engines::latest::resolve_latest(http, &spec.github_api, e, &spec.arches).await?;
        progress.message(&format!(
            "{} latest: {} (the newest stable release; recorded as such)",
            e.name, eb.engine.version
        ));
        latest.push(eb);
    }
    for eb in request.engines.iter().chain(&latest) {
        progress.message(&format!(
            "{} {}: {} builds for {}",
            eb.engine.name,
            eb.engine.version,
            eb.builds.len(),
            spec.arches.join(", ")
        ));
        engines::plan(
            http,
            &spec.github_api,
            eb,
            (spec.allow_missing, &spec.signatures),
            plan,
        )
        .await?;
    }
    Ok(())
}
