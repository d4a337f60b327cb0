//! What a run will carry, worked out before any large download: the
//! manifest's entries (with every digest the publishers gave), the
//! downloads that fill them, and the gaps.

use std::collections::BTreeMap;
use std::path::PathBuf;

use llmgw_shared::manifest::{Gap, HfRepo, PythonEnv, Release};

use crate::cache::{Cache, Expect};
use crate::create::Options;
use crate::engines::{self, EngineBuilds};
use crate::error::CreateError;
use crate::fetch::Download;
use crate::http::Http;
use crate::python::{EnvRequest, PlannedEnv};
use crate::spec::CreateSpec;
use crate::{hub, llmgw_release};

#[derive(Debug, Default)]
pub struct Plan {
    pub releases: Vec<Release>,
    /// Files known only by their git blob sha1 have an empty `sha256`
    /// until they are fetched.
    pub repos: Vec<HfRepo>,
    pub gaps: Vec<Gap>,
    /// Python environments, resolved and checked (their files are among
    /// `downloads`, their locks and `.metadata` files among `stored`).
    pub python_envs: Vec<PythonEnv>,
    /// Each distinct content once.
    pub downloads: Vec<Download>,
    index: BTreeMap<Expect, usize>,
    /// Small verified files already put in the cache (llmgw's signed
    /// SHA256SUMS and its signature): sha256 and path.
    pub stored: Vec<(String, PathBuf, u64)>,
}

impl Plan {
    /// Adds a download unless the same content is already planned.
    pub fn download(&mut self, d: Download) {
        if self.index.contains_key(&d.expect) {
            return;
        }
        self.index.insert(d.expect.clone(), self.downloads.len());
        self.downloads.push(d);
    }

    /// Total bytes of the distinct contents planned.
    pub fn total_bytes(&self) -> u64 {
        self.downloads.iter().map(|d| d.size).sum::<u64>()
            + self.stored.iter().map(|s| s.2).sum::<u64>()
    }

    /// Records something not carried.
    pub fn gap(&mut self, what: String, reason: String) {
        self.gaps.push(Gap { what, reason });
    }
}

/// What a run asks for, checked against the recipe table and the flags
/// without any network: the Python environments, and each engine's builds.
pub struct Request {
    pub python: Vec<EnvRequest>,
    pub engines: Vec<EngineBuilds>,
}

impl Request {
    /// Refuses Python engines the table does not know, unknown engines, bad
    /// versions and flags that name nothing, before any network.
    pub fn of(spec: &CreateSpec) -> Result<Self, CreateError> {
        let python = crate::python::requests_of(spec)?;
        let engines = spec
            .engines
            .iter()
            .filter(|e| !engines::is_python(&e.name))
            .map(|e| engines::resolve(e, &spec.arches))
            .collect::<Result<Vec<_>, _>>()?;
        Ok(Self { python, engines })
    }
}

/// A request planned: the plan, and the Python environments as resolved
/// (for a dry run's report).
pub struct Planned {
    pub plan: Plan,
    pub envs: Vec<PlannedEnv>,
}

/// Asks every upstream what the request means: llmgw's release (its
/// signature checked first), each engine's builds, the Python environments
/// (resolved and checked at their publishers; `need_interpreters` false
/// for a dry run, which lists an interpreter it cannot check), and each Hub
/// repository. Downloads only the small files planning needs.
pub async fn plan_request(
    spec: &CreateSpec,
    opts: &Options,
    http: &Http,
    cache: &Cache,
    request: &Request,
    need_interpreters: bool,
) -> Result<Planned, CreateError> {
    let progress = &opts.progress;
    let mut plan = Plan::default();
    if let Some(l) = &spec.llmgw {
        progress.line(&format!(
            "llmgw {}: checking the release signature",
            l.version
        ));
        llmgw_release::plan(http, cache, l, &spec.arches, spec.allow_missing, &mut plan).await?;
    }
    for eb in &request.engines {
        progress.line(&format!(
            "{} {}: {} builds for {}",
            eb.engine.name,
            eb.engine.version,
            eb.builds.len(),
            spec.arches.join(", ")
        ));
        engines::plan(http, &spec.github_api, eb, spec.allow_missing, &mut plan).await?;
    }
    let envs = crate::python::plan_for(
        spec,
        http,
        cache,
        progress,
        &request.python,
        &mut plan,
        need_interpreters,
    )
    .await?;
    for r in &spec.repos {
        hub::plan(
            http,
            &spec.hf_endpoint,
            opts.hf_token.is_some(),
            r,
            spec.allow_missing,
            &mut plan,
        )
        .await?;
    }
    Ok(Planned { plan, envs })
}
