//! The store's model-file rule, applied to a verified bundle before its
//! claims are checked and anything is committed: `no-pickle` refuses every
//! Hub file that loads with pickle (by extension, or by content: the
//! staged or held bytes are sniffed, [`super::pickles`], and the rule that
//! matched is named), naming the safetensors or GGUF variant the same
//! repository has at that commit (never one refused itself), or else
//! saying to convert the weights to safetensors or allow pickles;
//! `scanned-clean` refuses every Hub file the Hub did not scan and find
//! safe (the manifest's `evidence`).
//!
//! Invariant: a refusal names every offending file (repository, commit,
//! path, why) and leaves the store as it was — the import removes its
//! staging folder, as for every refusal.

use std::ops::Range;

use llmgw_shared::Sha256;
use llmgw_shared::manifest::{HfRepo, Manifest, RepoEvidence};

use super::ImportError;
use super::pickles::{self, PickleSign};
use crate::store::model_files::ModelFiles;

/// Reads bytes of a blob of the bundle (staged, or held already).
pub(super) type ReadBlob<'a> = dyn Fn(&Sha256, Range<u64>) -> std::io::Result<Vec<u8>> + 'a;

/// Refuses `manifest` if `rule` does not accept one of its Hub files.
pub(super) fn check(
    rule: ModelFiles,
    manifest: &Manifest,
    read: &ReadBlob<'_>,
) -> Result<(), ImportError> {
    if rule == ModelFiles::Allow {
        return Ok(());
    }
    let mut lines = Vec::new();
    for repo in &manifest.repos {
        let evidence = manifest
            .evidence
            .as_ref()
            .and_then(|e| e.repo(repo.kind, repo.id.as_str(), &repo.commit));
        let found = match rule {
            ModelFiles::Allow => Vec::new(),
            ModelFiles::NoPickle => pickled(repo, read)?,
            ModelFiles::ScannedClean => not_clean(repo, evidence),
        };
        if found.is_empty() {
            continue;
        }
        let who = format!("{} {}@{}", kind(repo), repo.id, repo.commit);
        for (path, why) in &found {
            lines.push(format!("  {who}: {}: {why}", llmgw_shared::shown(path)));
        }
        if rule == ModelFiles::NoPickle {
            lines.push(format!("    {}", suggestion(repo, evidence, &found)));
        }
    }
    if lines.is_empty() {
        return Ok(());
    }
    Err(ImportError::ModelFiles {
        rule: rule.word(),
        files: lines.join("\n"),
    })
}

fn kind(repo: &HfRepo) -> &'static str {
    repo.kind.singular()
}

/// Each file of `repo` that loads with pickle, and why.
fn pickled(repo: &HfRepo, read: &ReadBlob<'_>) -> Result<Vec<(String, String)>, ImportError> {
    let mut out = Vec::new();
    for f in &repo.files {
        let mut signs: Vec<PickleSign> = pickles::by_extension(&f.path).into_iter().collect();
        let by_bytes = |r: Range<u64>| read(&f.sha256, r);
        let content = pickles::by_content(f.size, &by_bytes).map_err(|source| {
            ImportError::ModelFileRead {
                path: f.path.clone(),
                sha256: f.sha256.to_string(),
                source,
            }
        })?;
        signs.extend(content);
        if !signs.is_empty() {
            let why = signs
                .iter()
                .map(ToString::to_string)
                .collect::<Vec<_>>()
                .join(", and ");
            out.push((f.path.clone(), format!("loads with pickle ({why})")));
        }
    }
    Ok(out)
}

/// Each file of `repo` the Hub did not scan and find safe, and what it said.
fn not_clean(repo: &HfRepo, evidence: Option<&RepoEvidence>) -> Vec<(String, String)> {
    repo.files
        .iter()
        .filter_map(|f| {
            let scan = evidence.and_then(|e| e.files.iter().find(|s| s.path == f.path));
            match scan {
                Some(s) if s.is_clean() => None,
                Some(s) if s.never_scanned() => Some((
                    f.path.clone(),
                    format!("the Hub never finished scanning it (status {})", s.status),
                )),
                Some(s) => {
                    let flagged: Vec<String> = s
                        .scans
                        .iter()
                        .flat_map(|v| &v.pickle_imports)
                        .filter(|i| i.safety != "innocuous")
                        .map(|i| format!("{}.{} ({})", i.module, i.name, i.safety))
                        .collect();
                    let detail = if flagged.is_empty() {
                        String::new()
                    } else {
                        format!("; imports {}", flagged.join(", "))
                    };
                    Some((
                        f.path.clone(),
                        format!(
                            "the Hub marked it {}{}",
                            s.status,
                            llmgw_shared::shown(&detail)
                        ),
                    ))
                }
                None => Some((
                    f.path.clone(),
                    "the bundle records no scan verdict from the Hub for it (never scanned, or \
                     made by an llmgw or from an endpoint that does not ask)"
                        .to_string(),
                )),
            }
        })
        .collect()
}

/// What to carry instead: the repository's safetensors or GGUF files,
/// but those refused here (a pickle under a safetensors name is none);
/// without any, converting the weights or allowing pickles.
fn suggestion(
    repo: &HfRepo,
    evidence: Option<&RepoEvidence>,
    refused: &[(String, String)],
) -> String {
    let variants: Vec<&String> = evidence
        .map(|e| {
            e.weights_variants
                .iter()
                .filter(|v| !refused.iter().any(|(path, _)| path == *v))
                .collect()
        })
        .unwrap_or_default();
    let disguised: Vec<String> = refused
        .iter()
        .filter(|(path, _)| {
            let lower = path.to_ascii_lowercase();
            lower.ends_with(".safetensors") || lower.ends_with(".gguf")
        })
        .map(|(path, _)| llmgw_shared::shown(path).to_string())
        .collect();
    let disguised = if disguised.is_empty() {
        String::new()
    } else {
        format!(
            " ({} is named like safetensors or GGUF but is a pickle: a name does not make \
             weights safe)",
            disguised.join(", ")
        )
    };
    if variants.is_empty() {
        return format!(
            "{} has no safetensors or GGUF file at this commit that the bundle knows of{disguised}: \
             convert the weights to real safetensors (e.g. with safetensors.torch.save_file) and \
             carry those, or allow pickles with `llmgw mirror policy model-files allow`",
            repo.id
        );
    }
    let shown: Vec<String> = variants
        .iter()
        .take(8)
        .map(|v| llmgw_shared::shown(v).to_string())
        .collect();
    let more = if variants.len() > 8 {
        format!(" and {} more", variants.len() - 8)
    } else {
        String::new()
    };
    let glob = if variants
        .iter()
        .all(|v| v.to_ascii_lowercase().ends_with(".gguf"))
    {
        "*.gguf"
    } else {
        "*.safetensors"
    };
    format!(
        "{} has {}{more} at the same commit: bundle that instead (e.g. --{} {}@{}:{glob} and \
         the config files it needs){disguised}",
        repo.id,
        shown.join(", "),
        kind(repo),
        repo.id,
        repo.commit
    )
}
