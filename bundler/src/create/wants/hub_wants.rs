//! The Hub's part of planning wants: each repository at a revision is
//! planned once for every file, listing and quantization tag wanted of it;
//! what the Hub does not have is a gap naming the node's path.
//!
//! Invariant: a wanted file is carried only as the Hub's tree and LFS
//! digests give it (through `sources::hub`, as a request's model is), and
//! a want the repository cannot meet is a gap, never a failure.

use std::collections::{BTreeMap, HashSet};

use llmgw_shared::chain;
use llmgw_shared::manifest::RepoKind;

use super::absorb;
use crate::plan::Plan;
use crate::sources::hub::{self, HubClient};
use crate::spec::RepoSpec;
use crate::want::{Want, Wants, what};

/// One repository at one revision, as the wants ask for it.
#[derive(Default)]
struct HubGroup {
    /// A listing was asked for: every file.
    whole: Vec<String>,
    /// `(file path, the node's path)`.
    files: Vec<(String, String)>,
    /// `(quantization tag, the node's path)`: llama.cpp's `-hf` asks.
    quants: Vec<(String, String)>,
    /// `(node, the node's path)`: a kernel's listing had no build for it.
    nodes: Vec<(llmgw_shared::kernels::Target, String)>,
}

impl HubGroup {
    /// A kernel's build folders the wanted files are in (its top-level
    /// files are carried with any).
    fn kernel_folders(&self) -> Vec<String> {
        let mut folders: Vec<String> = self
            .files
            .iter()
            .filter_map(|(p, _)| p.strip_prefix("build/")?.split_once('/'))
            .map(|(folder, _)| folder.to_string())
            .collect();
        folders.sort();
        folders.dedup();
        folders
    }
}

/// Plans the Hub files and repositories wanted; `asked` is the request's
/// own repositories (a want they carry whole is met by them).
pub async fn plan_hub(hub: &HubClient<'_>, asked: &[RepoSpec], wants: &Wants, plan: &mut Plan) {
    let groups = hub_groups(wants);
    for ((kind, id, revision), g) in groups {
        let carried_whole = asked.iter().any(|r| {
            r.kind == kind && r.id == id && r.revision == revision && r.patterns.is_empty()
        });
        if carried_whole {
            continue;
        }
        let patterns = if g.whole.is_empty() {
            g.files
                .iter()
                .map(|(p, _)| globset::escape(p))
                .chain(
                    g.quants
                        .iter()
                        .flat_map(|(t, _)| crate::want::quant_globs(t)),
                )
                .collect()
        } else {
            Vec::new()
        };
        let spec = RepoSpec {
            kind,
            id: id.clone(),
            revision: revision.clone(),
            patterns,
            variants: g.kernel_folders(),
            nodes: g.nodes.iter().map(|(n, _)| n.clone()).collect(),
        };
        // A kernel wanted whole is chosen for the environments this run
        // carries.
        let mut own = Plan::default();
        own.python_envs.clone_from(&plan.python_envs);
        let origins = || {
            g.whole
                .iter()
                .chain(g.files.iter().map(|(_, o)| o))
                .chain(g.quants.iter().map(|(_, o)| o))
                .chain(g.nodes.iter().map(|(_, o)| o))
        };
        if let Err(e) = hub::plan(hub, &spec, true, &mut own).await {
            let why = chain(&e);
            for o in origins() {
                plan.gap(what(o), why.clone());
            }
            continue;
        }
        let Some(repo) = own.repos.first() else {
            // Nothing matched: the Hub's own gap says what the commit has.
            let why = own
                .gaps
                .first()
                .map(|g| g.reason.clone())
                .unwrap_or_default();
            for o in origins() {
                plan.gap(what(o), why.clone());
            }
            continue;
        };
        let held: HashSet<&str> = repo.files.iter().map(|f| f.path.as_str()).collect();
        let commit = repo.commit.to_string();
        for (path, origin) in &g.files {
            if g.whole.is_empty() && !held.contains(path.as_str()) {
                plan.gap(
                    what(origin),
                    format!(
                        "{}{id} has no file {} at {revision} (commit {commit})",
                        kind.url_prefix(),
                        llmgw_shared::shown(path)
                    ),
                );
            }
        }
        for (tag, origin) in &g.quants {
            if g.whole.is_empty() && !held.iter().any(|p| crate::want::holds_quant(tag, p)) {
                plan.gap(
                    what(origin),
                    format!(
                        "{id} has no GGUF file with the quantization tag {} at main (commit \
                         {commit})",
                        llmgw_shared::shown(tag)
                    ),
                );
            }
        }
        own.gaps.clear();
        absorb(plan, own);
    }
}

/// The Hub wants of `wants`, by repository and revision.
fn hub_groups(wants: &Wants) -> BTreeMap<(RepoKind, String, String), HubGroup> {
    let mut groups: BTreeMap<(RepoKind, String, String), HubGroup> = BTreeMap::new();
    for (w, origin) in &wants.wants {
        match w {
            Want::HubFile {
                kind,
                id,
                revision,
                path,
            } => groups
                .entry((*kind, id.clone(), revision.clone()))
                .or_default()
                .files
                .push((path.clone(), origin.clone())),
            Want::HubQuant { id, tag } => groups
                .entry((RepoKind::Model, id.clone(), "main".to_string()))
                .or_default()
                .quants
                .push((tag.clone(), origin.clone())),
            Want::HubRepo { kind, id, revision } => groups
                .entry((*kind, id.clone(), revision.clone()))
                .or_default()
                .whole
                .push(origin.clone()),
            Want::KernelBuild { id, revision, node } => groups
                .entry((RepoKind::Kernel, id.clone(), revision.clone()))
                .or_default()
                .nodes
                .push((node.clone(), origin.clone())),
            _ => {}
        }
    }
    groups
}
