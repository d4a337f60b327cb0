//! A Hub kernel repository planned: its newest `vN` branch where no
//! revision was asked, the build folders chosen, and what the Hub says of
//! its publisher.
//!
//! Invariant: the folders carried are those named by hand, or else every
//! folder some node of the bundle's own Python environments loads (by the
//! client's own rules, `llmgw_shared::kernels`); a node that would load none
//! is a refusal (a gap with `--allow-missing`), never a silent omission.

use std::collections::BTreeSet;

use globset::escape;
use llmgw_shared::kernels::{Target, Variant};
use llmgw_shared::manifest::{KernelRepo, PythonEnv, kernel_targets};
use serde::Deserialize;

use super::{HubClient, MAX_PAGE, TreeEntry, what};
use crate::error::{CreateError, KernelError};
use crate::http::HttpError;
use crate::spec::RepoSpec;

/// The branches of `GET /api/kernels/{repo}/refs`.
#[derive(Deserialize)]
struct Refs {
    #[serde(default)]
    branches: Vec<Named>,
}

#[derive(Deserialize)]
struct Named {
    name: String,
}

/// `GET /api/organizations/{org}/overview`: only the flag the client reads.
#[derive(Deserialize)]
struct Overview {
    #[serde(default, rename = "trustedKernelPublisher")]
    trusted: bool,
}

/// `spec` with its revision: as asked, or the newest `vN` branch (what
/// `get_kernel(repo, version=N)` asks for, with the highest N).
pub(super) async fn with_revision(
    hub: &HubClient<'_>,
    spec: &RepoSpec,
) -> Result<RepoSpec, CreateError> {
    if !spec.revision.is_empty() {
        return Ok(spec.clone());
    }
    let url = format!("{}/api/kernels/{}/refs", hub.endpoint, spec.id);
    let (body, _) = hub
        .http
        .get_small(&url, Some("application/json"), MAX_PAGE)
        .await
        .map_err(|e| hub.refusal(spec, e))?;
    let refs: Refs = serde_json::from_slice(&body)
        .map_err(|e| CreateError::hub_answer(&what(spec), &url, "refs answer", e))?;
    let newest = refs
        .branches
        .iter()
        .filter_map(|b| Some((b.name.strip_prefix('v')?.parse::<u32>().ok()?, &b.name)))
        .max();
    let Some((_, name)) = newest else {
        let names: Vec<&str> = refs.branches.iter().map(|b| b.name.as_str()).collect();
        return Err(KernelError::NoVersion {
            what: what(spec),
            branches: names.join(", "),
        }
        .into());
    };
    Ok(RepoSpec {
        revision: name.clone(),
        ..spec.clone()
    })
}

/// A kernel's build folders chosen.
pub(super) struct Chosen {
    /// The request with the globs that choose the folders (and the
    /// repository's top-level files: its card, `kernel-status.toml`).
    pub spec: RepoSpec,
    /// What the manifest records.
    pub record: KernelRepo,
    /// With `--allow-missing`, each node that loads none of the folders.
    pub gaps: Vec<String>,
}

/// The build folders to carry; see the module docs.
pub(super) async fn choose(
    hub: &HubClient<'_>,
    spec: &RepoSpec,
    commit: &str,
    entries: &[TreeEntry],
    (envs, allow_missing): (&[PythonEnv], bool),
) -> Result<Chosen, CreateError> {
    let w = what(spec);
    let folders: BTreeSet<&str> = entries
        .iter()
        .filter_map(|e| e.path.strip_prefix("build/")?.split_once('/'))
        .map(|(folder, _)| folder)
        .collect();
    if folders.is_empty() {
        return Err(KernelError::NoBuilds {
            what: w,
            commit: commit.to_string(),
        }
        .into());
    }
    let have = folders.iter().copied().collect::<Vec<_>>().join(", ");
    let mut variants = Vec::new();
    for folder in &folders {
        let v = Variant::parse(folder).map_err(|error| KernelError::BadFolder {
            what: w.clone(),
            folder: folder.to_string(),
            error,
        })?;
        variants.push(v);
    }
    let mut gaps = Vec::new();
    let chosen = if spec.variants.is_empty() {
        let nodes = match spec.nodes.is_empty() {
            true => kernel_targets(envs),
            false => spec.nodes.clone(),
        };
        let gaps = allow_missing.then_some(&mut gaps);
        by_nodes(&w, &variants, &nodes, &have, gaps)?
    } else {
        if let Some(v) = spec.variants.iter().find(|v| !folders.contains(v.as_str())) {
            return Err(KernelError::NotInRepo {
                what: w,
                variant: v.clone(),
                have,
            }
            .into());
        }
        spec.variants.clone()
    };
    let mut patterns: Vec<String> = entries
        .iter()
        .filter(|e| e.kind == "file" && !e.path.contains('/'))
        .map(|e| escape(&e.path))
        .collect();
    patterns.extend(chosen.iter().map(|v| format!("build/{}/*", escape(v))));
    let record = KernelRepo {
        variants: chosen.clone(),
        trusted_publisher: publisher_trusted(hub, spec).await?,
    };
    let spec = RepoSpec {
        patterns,
        variants: chosen,
        ..spec.clone()
    };
    Ok(Chosen { spec, record, gaps })
}

/// Every folder some node loads; a node that loads none is refused, or
/// with `--allow-missing` (`gaps` given) recorded as a gap.
fn by_nodes(
    w: &str,
    variants: &[Variant],
    targets: &[Target],
    have: &str,
    mut gaps: Option<&mut Vec<String>>,
) -> Result<Vec<String>, CreateError> {
    if targets.is_empty() {
        return Err(KernelError::NoTargets {
            what: w.to_string(),
            have: have.to_string(),
        }
        .into());
    }
    let mut chosen = BTreeSet::new();
    for t in targets {
        let loads: Vec<&Variant> = variants.iter().filter(|v| t.accepts(v).is_ok()).collect();
        if loads.is_empty() {
            let reasons: Vec<String> = variants
                .iter()
                .filter_map(|v| Some(format!("{} ({})", v.name, t.accepts(v).err()?)))
                .collect();
            let refusal = KernelError::NoneLoads {
                what: w.to_string(),
                target: t.to_string(),
                reasons: reasons.join("; "),
            };
            match gaps.as_deref_mut() {
                Some(gaps) => gaps.push(llmgw_shared::chain(&refusal)),
                None => return Err(refusal.into()),
            }
        }
        chosen.extend(loads.iter().map(|v| v.name.clone()));
    }
    Ok(chosen.into_iter().collect())
}

/// Whether the Hub names the repository's owner a trusted kernel
/// publisher. An owner without an organization overview (404: a user) is
/// not one, as the client concludes.
async fn publisher_trusted(hub: &HubClient<'_>, spec: &RepoSpec) -> Result<bool, CreateError> {
    let owner = spec.id.split('/').next().unwrap_or_default();
    let url = format!("{}/api/organizations/{owner}/overview", hub.endpoint);
    match hub
        .http
        .get_small(&url, Some("application/json"), MAX_PAGE)
        .await
    {
        Ok((body, _)) => {
            let o: Overview = serde_json::from_slice(&body).map_err(|e| {
                CreateError::hub_answer(&what(spec), &url, "organization overview", e)
            })?;
            Ok(o.trusted)
        }
        Err(HttpError::Status { status: 404, .. }) => Ok(false),
        Err(e) => Err(KernelError::Publisher {
            what: what(spec),
            owner: owner.to_string(),
            url,
            error: Box::new(e),
        }
        .into()),
    }
}

/// A kernel repository's build folders at a revision, as the Hub lists
/// them: what `llmgw recipe kernels` shows.
#[derive(Debug, Clone)]
pub struct KernelBuilds {
    /// The revision asked for, or the newest `vN` branch.
    pub revision: String,
    /// The commit it names.
    pub commit: String,
    /// Each folder under `build/`, parsed as the client parses it.
    pub variants: Vec<Variant>,
}

/// The build folders of kernel `id` at `revision` (empty: the newest
/// `vN`), asked of the Hub at `hub`; a folder that is no variant is
/// refused by name, as create refuses it.
pub async fn kernel_builds(
    hub: &HubClient<'_>,
    id: &str,
    revision: &str,
) -> Result<KernelBuilds, CreateError> {
    let asked = RepoSpec {
        kind: llmgw_shared::manifest::RepoKind::Kernel,
        id: id.to_string(),
        revision: revision.to_string(),
        patterns: Vec::new(),
        variants: Vec::new(),
        nodes: Vec::new(),
    };
    let spec = with_revision(hub, &asked).await?;
    let (commit, _) = super::resolve(hub, &spec).await?;
    let entries = super::list(hub, &spec, &commit).await?;
    let folders: BTreeSet<&str> = entries
        .iter()
        .filter_map(|e| e.path.strip_prefix("build/")?.split_once('/'))
        .map(|(folder, _)| folder)
        .collect();
    let mut variants = Vec::new();
    for folder in folders {
        variants.push(
            Variant::parse(folder).map_err(|error| KernelError::BadFolder {
                what: what(&spec),
                folder: folder.to_string(),
                error,
            })?,
        );
    }
    Ok(KernelBuilds {
        revision: spec.revision,
        commit: commit.to_string(),
        variants,
    })
}
