//! The syntax of single values: `NAME=VERSION`, `REPO[@REVISION][:GLOB,...]`,
//! base URLs, the default cache folder. Each refusal is a usage error
//! naming the flag, the value and the shape expected.

use std::path::PathBuf;

use llmgw_shared::manifest::RepoKind;
use llmgw_shared::{check_ref_name, check_repo_id};

use super::{EngineSpec, RepoSpec, SpecEnv};
use crate::error::{CreateError, FlagError, RepoArgFault, RequestError};

pub(super) fn flag_of(kind: RepoKind) -> &'static str {
    match kind {
        RepoKind::Model => "--model",
        RepoKind::Dataset => "--dataset",
        RepoKind::Kernel => "--kernel",
    }
}

/// `$XDG_CACHE_HOME/llmgw`, else `~/.cache/llmgw`.
pub(super) fn default_cache(env: &SpecEnv) -> Result<PathBuf, CreateError> {
    if let Some(x) = &env.xdg_cache_home {
        return Ok(x.join("llmgw"));
    }
    if let Some(h) = &env.home {
        return Ok(h.join(".cache").join("llmgw"));
    }
    Err(RequestError::NoCacheFolder.into())
}

/// A base URL: http or https, without a trailing slash.
pub(super) fn url_flag(flag: &'static str, value: String) -> Result<String, CreateError> {
    let v = value.trim().trim_end_matches('/').to_string();
    match reqwest::Url::parse(&v) {
        Ok(u) if matches!(u.scheme(), "http" | "https") && u.host().is_some() => Ok(v),
        _ => Err(FlagError::Url { flag, value }.into()),
    }
}

/// `NAME=VERSION[:VARIANT]`, e.g. `llamacpp=b6123` or `vllm=0.33.0:cu13`
/// (only the CUDA 13 environment of vLLM 0.33.0, no other variant and no
/// fallback for older GPUs). The recipe table checks the name, the version
/// and the variant later, with its own words.
pub fn parse_engine(text: &str) -> Result<EngineSpec, CreateError> {
    let bad = || FlagError::Engine {
        text: text.to_string(),
    };
    let (name, rest) = text.split_once('=').ok_or_else(bad)?;
    let (version, variant) = match rest.split_once(':') {
        Some((v, variant)) => (v, Some(variant.trim())),
        None => (rest, None),
    };
    let (name, version) = (name.trim(), version.trim());
    if name.is_empty() || version.is_empty() || variant.is_some_and(str::is_empty) {
        return Err(bad().into());
    }
    Ok(EngineSpec {
        name: name.to_string(),
        version: version.to_string(),
        variant: variant.map(str::to_string),
    })
}

/// `REPO[@REVISION][:GLOB,...]`, e.g. `acme/tiny@main` or
/// `org/m:*.Q4_K_M.gguf,config.json`. The revision defaults to `main`.
pub fn parse_repo(kind: RepoKind, text: &str) -> Result<RepoSpec, CreateError> {
    let bad = |fault: RepoArgFault| CreateError::RepoArg {
        flag: flag_of(kind),
        text: text.to_string(),
        fault,
    };
    let (left, globs) = match text.split_once(':') {
        Some((l, g)) => (l, Some(g)),
        None => (text, None),
    };
    let (id, revision) = match left.split_once('@') {
        Some((id, rev)) => (id, rev),
        None => (left, "main"),
    };
    check_repo_id("repository id", id).map_err(|e| bad(e.into()))?;
    check_ref_name("revision", revision).map_err(|e| bad(e.into()))?;
    let mut patterns = Vec::new();
    if let Some(globs) = globs {
        for g in globs.split(',') {
            let g = g.trim();
            if g.is_empty() {
                return Err(bad(RepoArgFault::EmptyGlob));
            }
            globset::Glob::new(g).map_err(|error| {
                bad(RepoArgFault::Glob {
                    pattern: g.to_string(),
                    error,
                })
            })?;
            patterns.push(g.to_string());
        }
        if patterns.is_empty() {
            return Err(bad(RepoArgFault::NoGlob));
        }
    }
    Ok(RepoSpec {
        kind,
        id: id.to_string(),
        revision: revision.to_string(),
        patterns,
        variants: Vec::new(),
        nodes: Vec::new(),
    })
}
