//! `bundle create --dry-run`: the Python environments resolved and every
//! file checked at its publisher exactly as a real run does, then listed
//! with sizes — and nothing large downloaded, no bundle written. What an
//! operator runs first to learn what a vLLM bundle will cost, and what
//! checks the real dependency graph against the real indexes.

use serde::Serialize;

use super::PlannedEnv;
use crate::cache::Cache;
use crate::create::Options;
use crate::error::CreateError;
use crate::http::Http;
use crate::plan::Plan;
use crate::spec::CreateSpec;

/// One environment as a dry run reports it.
#[derive(Debug, Clone, Serialize)]
pub struct EnvSummary {
    pub name: String,
    pub platform: String,
    pub resolver: String,
    pub files: usize,
    pub bytes: u64,
    /// The interpreter asset, or why it could not be checked.
    pub interpreter: String,
    pub largest: Vec<FileSummary>,
}

#[derive(Debug, Clone, Serialize)]
pub struct FileSummary {
    pub filename: String,
    pub size: u64,
    pub sha256: String,
    pub origin: String,
}

/// What a dry run found.
#[derive(Debug, Clone, Serialize)]
pub struct DryRun {
    pub environments: Vec<EnvSummary>,
    /// Distinct files over all environments (what vLLM and SGLang, or two
    /// CUDA variants, share is counted once).
    pub distinct_files: usize,
    pub distinct_bytes: u64,
    pub gaps: Vec<llmgw_shared::manifest::Gap>,
}

/// How many of each environment's largest files a summary names.
const LARGEST: usize = 10;

pub async fn dry_run(spec: &CreateSpec, opts: &Options) -> Result<DryRun, CreateError> {
    let requests = super::requests_of(spec)?;
    if requests.is_empty() {
        return Err(CreateError::Usage(
            "--dry-run resolves Python environments: give --engine vllm=V, --engine sglang=V \
             or --python-env"
                .into(),
        ));
    }
    let cache = Cache::open(&spec.cache).map_err(|e| CreateError::io(&spec.cache, e))?;
    let http = Http::new(&spec.hf_endpoint, None, opts.retry)?;
    let mut plan = Plan::default();
    let envs = super::plan_for_with(
        spec,
        &http,
        &cache,
        &opts.progress,
        &requests,
        &mut plan,
        false,
    )
    .await?;
    Ok(summarise(&envs, &plan))
}

fn summarise(envs: &[PlannedEnv], plan: &Plan) -> DryRun {
    let environments = envs
        .iter()
        .map(|e| {
            let mut files: Vec<FileSummary> = e
                .files
                .iter()
                .map(|f| FileSummary {
                    filename: f.file.filename.clone(),
                    size: f.size,
                    sha256: f.file.sha256.clone(),
                    origin: f.file.origin.clone(),
                })
                .collect();
            files.sort_by(|a, b| b.size.cmp(&a.size).then(a.filename.cmp(&b.filename)));
            files.truncate(LARGEST);
            EnvSummary {
                name: e.request.name.clone(),
                platform: e.platform.clone(),
                resolver: format!("uv {}", e.resolver_version),
                files: e.files.len(),
                bytes: e.files.iter().map(|f| f.size).sum(),
                interpreter: e
                    .interpreter
                    .as_ref()
                    .map_or_else(|| "not checked".to_string(), |i| i.asset.clone()),
                largest: files,
            }
        })
        .collect();
    DryRun {
        environments,
        distinct_files: plan.downloads.len(),
        distinct_bytes: plan.downloads.iter().map(|d| d.size).sum(),
        gaps: plan.gaps.clone(),
    }
}
