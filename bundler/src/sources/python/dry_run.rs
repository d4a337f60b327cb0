//! The Python part of `bundle create --dry-run` ([`crate::dry_run`]):
//! each environment, resolved and every file checked at its publisher
//! exactly as a real run does, summarised with its size and largest files.
//! What an operator runs first to learn what a vLLM bundle will cost.
//!
//! Invariant: a summary is computed from the planned environment only;
//! nothing here downloads or writes.

use serde::Serialize;

use super::PlannedEnv;

/// One environment as a dry run reports it.
#[derive(Debug, Clone, Serialize)]
pub struct EnvSummary {
    pub name: String,
    pub platform: String,
    pub resolver: String,
    pub files: usize,
    pub bytes: u64,
    /// The interpreter asset, or why none is carried.
    pub interpreter: String,
    pub largest: Vec<FileSummary>,
}

#[derive(Debug, Clone, Serialize)]
pub struct FileSummary {
    pub filename: String,
    pub size: u64,
    pub sha256: llmgw_shared::Sha256,
    pub origin: String,
}

/// How many of each environment's largest files a summary names.
const LARGEST: usize = 10;

/// Each environment with its file count, bytes and largest files.
pub fn summarise_envs(envs: &[PlannedEnv]) -> Vec<EnvSummary> {
    summarise(envs)
}

fn summarise(envs: &[PlannedEnv]) -> Vec<EnvSummary> {
    envs.iter()
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
                interpreter: match (&e.interpreter, e.node_interpreter) {
                    (Some(i), _) => i.asset.clone(),
                    (None, Some(n)) => n.describe(&e.request.python),
                    (None, None) => "missing (a gap: --allow-missing)".to_string(),
                },
                largest: files,
            }
        })
        .collect()
}
