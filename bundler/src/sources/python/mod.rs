//! Python environments (vLLM, SGLang, a site's own requirements): resolved
//! for each node platform by the real uv, every file then checked at its
//! publisher independently of uv, and planned like every other download;
//! plus the interpreter the carried uv installs them with.
//!
//! The invariant: a file enters the plan only with a sha256 its publisher
//! gave (PyPI's JSON API, the extra index's fragment, GitHub's digest) that
//! agrees with the lock; the `.metadata` files likewise; the lock itself is
//! carried as uv wrote it.
//!
//! [`request`] (which environments), [`uv`] (running the resolver), [`lock`]
//! (reading its answer), [`simple`] (the publishers' indexes), [`check`]
//! (comparing), [`resolve`] (one environment), [`companions`] (the wheels
//! a resolved package brings, FlashInfer's cubins), [`per_cuda`] (one
//! published per CUDA version on its publisher's index, FlashInfer's JIT
//! cache), [`interpreter`] (uv's Python), `files` (each checked file
//! planned, with its `.metadata`).

pub mod check;
pub mod choices;
pub mod companions;
pub mod dry_run;
mod files;
pub mod interpreter;
pub mod lock;
pub mod pep751;
pub mod per_cuda;
pub mod record;
pub mod request;
pub mod resolve;
pub mod simple;
pub mod site_lock;
pub mod uv;

use std::collections::BTreeMap;
use std::path::Path;

use llmgw_shared::chain;

use crate::cache::Cache;
use crate::error::CreateError;
pub use crate::error::PythonError;
use crate::http::Http;
use crate::plan::Plan;
use crate::progress::Events;
use crate::sources::github;
use crate::spec::CreateSpec;
use crate::spec::python::InterpreterChoice;
pub use request::EnvRequest;

/// What the Python side of a run works with.
pub struct Ctx<'a> {
    pub http: &'a Http,
    pub cache: &'a Cache,
    pub github_api: &'a str,
    /// GitHub's raw file server, for uv's `download-metadata.json`.
    pub github_raw: &'a str,
    /// The simple API's base: `https://pypi.org/simple`.
    pub pypi: &'a str,
    pub uv_flag: Option<&'a Path>,
    /// The uv version the bundle carries (`--engine uv=V`), whose Python
    /// the nodes will install; `None` takes the resolver's.
    pub carried_uv: Option<&'a str>,
    /// Whether the interpreter is carried (`--python-interpreter`).
    pub interpreter: InterpreterChoice,
    pub allow_missing: bool,
    /// `--no-extras`: companion wheels (`flashinfer-cubin`) are left out,
    /// each a gap, like the other runtime extras.
    pub extras_left_out: bool,
    /// `--extras-base HOST=URL`, by host: a publisher's own index of
    /// companion wheels (`flashinfer.ai`) is read from that base instead.
    pub extras_bases: &'a BTreeMap<String, String>,
    pub jobs: usize,
    pub progress: &'a Events,
    /// Who may sign each project's files (PEP 740), and the trusted root.
    pub signatures: &'a crate::attest::SignaturePolicy,
}

/// One file of an environment as planned: checked, with its size, and its
/// `.metadata` blob (sha256, size) when carried.
#[derive(Debug, Clone)]
pub struct PlannedFile {
    pub file: check::CheckedFile,
    pub size: u64,
    pub metadata_blob: Option<(llmgw_shared::Sha256, u64)>,
}

/// An environment as planned.
#[derive(Debug, Clone)]
pub struct PlannedEnv {
    pub request: EnvRequest,
    pub platform: String,
    pub resolver_version: String,
    /// The lock blob: sha256 and size.
    pub lock: (llmgw_shared::Sha256, u64),
    /// The interpreter in the carried python-build-standalone release;
    /// `None` when none is carried (by choice, or a gap).
    pub interpreter: Option<interpreter::Interpreter>,
    /// Set for a site's own lock: its format, name and the project file.
    pub site_lock: Option<llmgw_shared::manifest::SiteLock>,
    /// Set when the nodes bring their own CPython by choice.
    pub node_interpreter: Option<llmgw_shared::manifest::NodeInterpreter>,
    pub files: Vec<PlannedFile>,
    /// The publishers' own indexes companion wheels came from.
    pub companion_indexes: Vec<uv::ExplicitIndex>,
}

/// The environments a run carries: the Python engines of `--engine` and
/// the `--python-env`s, per `--arch`; refused here, before any network,
/// when the table or the flags are wrong.
pub fn requests_of(spec: &CreateSpec) -> Result<Vec<EnvRequest>, CreateError> {
    let engines: Vec<request::EngineAsk> = spec
        .engines
        .iter()
        .filter(|e| crate::sources::engines::is_python(&e.name))
        .map(|e| (e.name.clone(), e.version.clone(), e.variant.clone()))
        .collect();
    let flags = request::EnvFlags {
        indexes: &spec.indexes,
        manylinux: spec.manylinux.as_deref(),
        site_python: spec.site_python.as_deref(),
    };
    let mut requests = request::requests(&engines, &spec.python_envs, &spec.arches, &flags)?;
    choices::apply(&mut requests, &spec.overrides, &spec.constraints)?;
    Ok(requests)
}

/// `bundle create`'s hook: plans every environment of `requests` into
/// `plan`, its manifest records included. A dry run calls it as a real
/// run does, so it fails where the run would.
pub async fn plan_for(
    spec: &CreateSpec,
    http: &Http,
    cache: &Cache,
    progress: &Events,
    requests: &[EnvRequest],
    plan: &mut Plan,
) -> Result<Vec<PlannedEnv>, CreateError> {
    let ctx = Ctx {
        http,
        cache,
        github_api: &spec.github_api,
        github_raw: &spec.github_raw,
        pypi: &spec.pypi,
        uv_flag: spec.uv.as_deref(),
        carried_uv: spec
            .engines
            .iter()
            .find(|e| e.name == "uv")
            .map(|e| e.version.as_str()),
        interpreter: spec.python_interpreter,
        allow_missing: spec.allow_missing,
        extras_left_out: spec.extras.leave_out,
        extras_bases: &spec.extras.bases,
        jobs: spec.jobs,
        progress,
        signatures: &spec.signatures,
    };
    let envs = plan_with(&ctx, requests, plan).await?;
    for e in &envs {
        plan.python_envs.push(record::python_env(e, &spec.pypi));
    }
    Ok(envs)
}

/// Resolves and checks every environment, adds their files, metadata,
/// locks and interpreters to `plan`, and returns what the manifest records.
///
/// Each upstream is a part of its own: with `--allow-missing`, an
/// interpreter that cannot be had, or a variant whose release or index
/// cannot be reached, becomes a gap of the plan and the rest goes on;
/// without it, the run stops naming the part and what to pass. An
/// environment that does not resolve stops the run either way.
pub async fn plan_with(
    ctx: &Ctx<'_>,
    requests: &[EnvRequest],
    plan: &mut Plan,
) -> Result<Vec<PlannedEnv>, CreateError> {
    if requests.is_empty() {
        return Ok(Vec::new());
    }
    let uv = uv::locate(ctx.uv_flag, None).await?;
    let interpreters = match ctx.interpreter {
        InterpreterChoice::None => BTreeMap::new(),
        InterpreterChoice::Carried => interpreters_or_gaps(ctx, &uv, requests, plan).await?,
    };
    let node_interpreter = (ctx.interpreter == InterpreterChoice::None)
        .then_some(llmgw_shared::manifest::NodeInterpreter::None);
    let mut pages = BTreeMap::new();
    let mut out = Vec::new();
    for req in requests {
        let how = match &req.site_lock {
            Some(p) => format!("from the site's lock {}", p.display()),
            None => format!("with uv {}", uv.version),
        };
        ctx.progress.message(&format!(
            "{}: resolving for {} {how}",
            req.name,
            resolve::platform(&req.arch, &req.manylinux),
        ));
        let (r, site_lock) = match &req.site_lock {
            Some(path) => {
                let s = site_lock::resolve(ctx, req, path, &mut pages).await?;
                let project = match &s.project {
                    Some(text) => Some(store_text(ctx, plan, text)?),
                    None => None,
                };
                let kept = llmgw_shared::manifest::SiteLock {
                    format: s.format,
                    file_name: s.file_name,
                    project,
                };
                let r = resolve::Resolved {
                    platform: s.platform,
                    lock_text: s.lock_text,
                    checked: s.checked,
                    companion_indexes: Vec::new(),
                };
                (r, Some(kept))
            }
            None => match resolve::resolved_or_gap(ctx, &uv, req, &mut pages, plan).await? {
                Some(r) => (r, None),
                None => continue,
            },
        };
        for (what, reason) in r.checked.gaps {
            plan.gap(what, reason);
        }
        let files = files::plan_files(ctx, r.checked.files, plan).await?;
        let (sha, path) = ctx
            .cache
            .put_bytes(r.lock_text.as_bytes())
            .map_err(|e| CreateError::io(ctx.cache.root(), e))?;
        let size = r.lock_text.len() as u64;
        plan.store(sha.clone(), path, size);
        let bytes: u64 = files.iter().map(|f| f.size).sum();
        ctx.progress.message(&format!(
            "{}: {} files, {bytes} bytes",
            req.name,
            files.len()
        ));
        let resolver_version = match &site_lock {
            Some(s) => s.file_name.clone(),
            None => uv.version.clone(),
        };
        out.push(PlannedEnv {
            request: req.clone(),
            platform: r.platform,
            resolver_version,
            site_lock,
            lock: (sha, size),
            interpreter: interpreters
                .get(&(req.arch.clone(), req.python.clone()))
                .cloned(),
            node_interpreter,
            files,
            companion_indexes: r.companion_indexes,
        });
    }
    Ok(out)
}

/// Keeps `text` in the cache as a blob the bundle carries.
fn store_text(
    ctx: &Ctx<'_>,
    plan: &mut Plan,
    text: &str,
) -> Result<llmgw_shared::manifest::BlobRef, CreateError> {
    let (sha, path) = ctx
        .cache
        .put_bytes(text.as_bytes())
        .map_err(|e| CreateError::io(ctx.cache.root(), e))?;
    let size = text.len() as u64;
    plan.store(sha.clone(), path, size);
    Ok(llmgw_shared::manifest::BlobRef { sha256: sha, size })
}

/// The interpreters of [`interpreters`], or, when they cannot be had and
/// `--allow-missing` is given, a gap per architecture; else none, and the
/// failure (naming the part and what to pass) among the plan's stops.
async fn interpreters_or_gaps(
    ctx: &Ctx<'_>,
    uv: &uv::Uv,
    requests: &[EnvRequest],
    plan: &mut Plan,
) -> Result<Interpreters, CreateError> {
    let pythons: std::collections::BTreeSet<&str> =
        requests.iter().map(|r| r.python.as_str()).collect();
    let pythons: Vec<&str> = pythons.into_iter().collect();
    match interpreters(ctx, uv, requests, plan).await {
        Ok(i) => Ok(i),
        Err(e) if ctx.allow_missing => {
            let why = chain(&e);
            let arches: std::collections::BTreeSet<&str> =
                requests.iter().map(|r| r.arch.as_str()).collect();
            for arch in arches {
                ctx.progress.message(&format!(
                    "the interpreter for {arch} is not carried (--allow-missing): {why}"
                ));
                plan.gap(format!("{} for {arch}", interpreter::PBS_REPO), why.clone());
            }
            Ok(BTreeMap::new())
        }
        // Planning goes on: every part that stops the run is said at once.
        Err(e) => {
            plan.stops.push(CreateError::Part {
                part: "the Python interpreter".to_string(),
                advice: format!(
                    "pass --allow-missing to record it as a gap and go on, or \
                     --python-interpreter none if the nodes bring their own CPython {}",
                    pythons.join(" and ")
                ),
                error: Box::new(e),
            });
            Ok(BTreeMap::new())
        }
    }
}

/// The interpreters found, by (arch, Python version).
type Interpreters = BTreeMap<(String, String), interpreter::Interpreter>;

/// For each arch and Python version the environments are for: the
/// interpreter the carried uv expects, found in python-build-standalone's
/// release, checked against uv's sha256 and GitHub's digest, and planned
/// as a release asset.
async fn interpreters(
    ctx: &Ctx<'_>,
    uv: &uv::Uv,
    requests: &[EnvRequest],
    plan: &mut Plan,
) -> Result<Interpreters, CreateError> {
    let uv_version = ctx.carried_uv.unwrap_or(&uv.version);
    let metadata = interpreter::fetch_metadata(ctx.http, ctx.github_raw, uv_version).await?;
    let mut out = BTreeMap::new();
    for req in requests {
        if out.contains_key(&(req.arch.clone(), req.python.clone())) {
            continue;
        }
        let i = interpreter::pick(&metadata, &req.python, &req.arch)?;
        let err = |detail: String| PythonError::Interpreter {
            arch: req.arch.clone(),
            detail,
        };
        let release =
            github::fetch_release(ctx.http, ctx.github_api, interpreter::PBS_REPO, &i.tag)
                .await?
                .ok_or_else(|| {
                    err(format!(
                        "{} has no release {} of {}, which uv {uv_version} downloads {} from",
                        ctx.github_api,
                        i.tag,
                        interpreter::PBS_REPO,
                        i.asset
                    ))
                })?;
        let asset = release.asset(&i.asset).ok_or_else(|| {
            err(format!(
                "the release {} of {} has no {}, which uv {uv_version} expects",
                i.tag,
                interpreter::PBS_REPO,
                i.asset
            ))
        })?;
        let (github_sha256, mut digests) =
            github::publisher_digests(ctx.http, &release, interpreter::PBS_REPO, asset).await?;
        if github_sha256 != i.sha256 {
            return Err(err(format!(
                "{}: uv {uv_version}'s download-metadata.json says sha256 {} but GitHub's \
                 release says {github_sha256}; uv on the nodes would refuse it, so it is not carried",
                i.asset, i.sha256
            ))
            .into());
        }
        digests.push(llmgw_shared::manifest::PublisherDigest {
            source: llmgw_shared::manifest::DigestSource::UvDownloadMetadata,
            value: i.sha256.to_string(),
        });
        plan.download(asset.download(
            format!("{} {} {}", interpreter::PBS_REPO, i.tag, i.asset),
            &i.sha256,
        ));
        let entry = llmgw_shared::manifest::Asset {
            name: i.asset.clone(),
            size: asset.size,
            sha256: i.sha256.clone(),
            publisher_digests: digests,
            content_type: asset.content_type.clone(),
        };
        let build = llmgw_shared::manifest::BuildRef {
            arch: req.arch.clone(),
            variant: format!("cpython-{}", req.python),
            assets: vec![i.asset.clone()],
        };
        match plan
            .releases
            .iter_mut()
            .find(|r| r.repo == interpreter::PBS_REPO && r.tag == i.tag)
        {
            Some(r) => {
                r.assets.push(entry);
                r.builds.push(build);
            }
            None => plan.releases.push(llmgw_shared::manifest::Release {
                repo: llmgw_shared::RepoId::parse("release repository", interpreter::PBS_REPO)?,
                tag: i.tag.clone(),
                engine: "python".to_string(),
                version: i.version.clone(),
                builds: vec![build],
                assets: vec![entry],
                signature: None,
            }),
        }
        out.insert((req.arch.clone(), req.python.clone()), i);
    }
    Ok(out)
}
