//! Hugging Face Hub repositories: a revision resolved to its 40-hex commit,
//! the recursive tree at that commit (every `Link: rel="next"` page), the
//! globs applied, and each file planned for download by commit with what
//! the Hub says it hashes to — the LFS sha256 for LFS files, the git blob
//! sha1 for the rest.
//!
//! What the Hub says about the repository besides — the card's licence and
//! each chosen file's security scan — is asked for in [`evidence`]; whether
//! the revision is a branch, a tag or a commit in [`refs`]. Every call is
//! handed one [`HubClient`] (the client, the endpoint, whether a token is
//! sent), which also words the Hub's refusals.
//!
//! Globs follow `huggingface_hub`'s `allow_patterns` (fnmatch): `*` also
//! matches `/`, so `*.gguf` finds GGUF files in sub-folders too.

mod client;
mod evidence;
mod kernel;
mod refs;

pub use client::HubClient;
pub use kernel::{KernelBuilds, kernel_builds};

use globset::{GlobBuilder, GlobSet, GlobSetBuilder};
use llmgw_shared::manifest::{RepoEvidence, RepoKind};
use llmgw_shared::url::{PATH, SEGMENT};
use llmgw_shared::{GitOid, RepoId, Sha256, check_relative_path};
use percent_encoding::utf8_percent_encode;
use reqwest::Url;
use serde::Deserialize;

use crate::cache::Expect;
use crate::error::{CreateError, HubError};
use crate::fetch::Download;
use crate::http::{HttpError, link_next};
use crate::plan::{Plan, PlannedFile, PlannedRepo};
use crate::spec::RepoSpec;

/// A tree page larger than this is refused (the Hub's are up to 1000 entries).
const MAX_PAGE: usize = 64 << 20;

#[derive(Deserialize)]
struct RevisionJson {
    #[serde(default)]
    sha: Option<String>,
    #[serde(flatten)]
    licence: evidence::LicenceJson,
}

#[derive(Deserialize)]
struct TreeEntry {
    #[serde(rename = "type")]
    kind: String,
    path: String,
    #[serde(default)]
    size: u64,
    #[serde(default)]
    oid: Option<String>,
    #[serde(default)]
    lfs: Option<LfsJson>,
    /// The file's Xet hash, for a file the Hub stores in Xet.
    #[serde(default, rename = "xetHash")]
    xet_hash: Option<String>,
}

#[derive(Deserialize)]
struct LfsJson {
    oid: String,
    size: u64,
}

fn what(spec: &RepoSpec) -> String {
    let kind = spec.kind.singular();
    format!("{kind} {}@{}", spec.id, spec.revision)
}

/// Resolves, lists and plans one repository: the revision resolved to its
/// commit, the tree at the commit listed, the files the globs choose
/// selected and planned, and what the Hub says of them asked for.
pub async fn plan(
    hub: &HubClient<'_>,
    spec: &RepoSpec,
    allow_missing: bool,
    plan: &mut Plan,
) -> Result<(), CreateError> {
    let asked = spec;
    let spec = &kernel::with_revision(hub, asked).await?;
    let (commit, licence) = resolve(hub, spec).await?;
    let ref_kind = refs::ref_kind(hub, spec, &commit).await?;
    let entries = list(hub, spec, &commit).await?;
    let mut kernel = None;
    let spec = &match spec.kind {
        RepoKind::Kernel => {
            let envs = (plan.python_envs.as_slice(), allow_missing);
            let chosen = kernel::choose(hub, spec, commit.as_str(), &entries, envs).await?;
            for gap in chosen.gaps {
                plan.gap(what(spec), gap);
            }
            // No node loads any build (each named as a gap): a card alone
            // is nothing a node can use, so nothing is carried.
            if chosen.record.variants.is_empty() {
                return Ok(());
            }
            kernel = Some(chosen.record);
            chosen.spec
        }
        RepoKind::Model | RepoKind::Dataset => spec.clone(),
    };
    let (files, all_paths) = select(hub, spec, &commit, entries, plan)?;
    if files.is_empty() {
        let reason = nothing_chosen(spec, &commit, all_paths);
        if allow_missing {
            plan.gap(what(spec), reason);
            return Ok(());
        }
        return Err(HubError::NothingChosen {
            what: what(spec),
            reason,
        }
        .into());
    }
    let chosen: Vec<String> = files.iter().map(|f| f.path.clone()).collect();
    let scans = evidence::scans(hub, spec, commit.as_str(), &chosen).await?;
    plan.add_evidence(RepoEvidence {
        kind: spec.kind,
        id: RepoId::parse("Hub repository id", &spec.id)?,
        commit: commit.as_str().to_string(),
        license: licence,
        weights_variants: evidence::weights_variants(&all_paths),
        files: scans,
    });
    plan.repos.push(PlannedRepo {
        kind: spec.kind,
        id: spec.id.clone(),
        revision: spec.revision.clone(),
        ref_kind: Some(ref_kind),
        commit,
        patterns: spec.patterns.clone(),
        files,
        kernel,
    });
    Ok(())
}

/// The revision asked for, resolved to its commit; with the card's
/// licence the same answer carries.
async fn resolve(
    hub: &HubClient<'_>,
    spec: &RepoSpec,
) -> Result<(GitOid, Option<String>), CreateError> {
    let w = what(spec);
    let url = format!(
        "{}/api/{}/{}/revision/{}",
        hub.endpoint,
        spec.kind.api_plural(),
        spec.id,
        utf8_percent_encode(&spec.revision, SEGMENT)
    );
    let (body, _) = hub
        .http
        .get_small(&url, Some("application/json"), MAX_PAGE)
        .await
        .map_err(|e| hub.refusal(spec, e))?;
    let rev: RevisionJson = serde_json::from_slice(&body)
        .map_err(|e| CreateError::hub_answer(&w, &url, "revision object", e))?;
    let commit = rev.sha.unwrap_or_default().to_ascii_lowercase();
    let Ok(commit) = GitOid::parse_exact("commit", &commit) else {
        return Err(HubError::NoCommit {
            what: w,
            found: commit,
        }
        .into());
    };
    Ok((commit, rev.licence.licence()))
}

/// Every entry of every page of the recursive tree at `commit`. A page
/// asked for twice is a listing that loops; more pages than the cap is
/// one that does not end.
async fn list(
    hub: &HubClient<'_>,
    spec: &RepoSpec,
    commit: &GitOid,
) -> Result<Vec<TreeEntry>, CreateError> {
    let (http, w) = (hub.http, what(spec));
    let mut entries: Vec<TreeEntry> = Vec::new();
    let first = format!(
        "{}/api/{}/{}/tree/{commit}?recursive=true&expand=false",
        hub.endpoint,
        spec.kind.api_plural(),
        spec.id
    );
    let mut next = Some(first);
    let mut seen = std::collections::HashSet::new();
    let max_pages = http.limits.max_pages;
    while let Some(page_url) = next.take() {
        if seen.len() >= max_pages {
            return Err(HubError::EndlessTree {
                what: w,
                max_pages,
                last: shown(&page_url),
            }
            .into());
        }
        seen.insert(page_url.clone());
        let (body, headers) = http
            .get_small(&page_url, Some("application/json"), MAX_PAGE)
            .await
            .map_err(|e| hub.refusal(spec, e))?;
        let mut page: Vec<TreeEntry> = serde_json::from_slice(&body)
            .map_err(|e| CreateError::hub_answer(&w, &page_url, "tree listing", e))?;
        entries.append(&mut page);
        let base = Url::parse(&page_url).map_err(|source| HttpError::BadUrl {
            url: page_url.clone(),
            what: "not a URL",
            source,
        })?;
        next = link_next(&headers, &base).map(|u| u.to_string());
        if let Some(n) = &next
            && seen.contains(n)
        {
            return Err(HubError::TreeLoops {
                what: w,
                page: shown(&page_url),
                next: shown(n),
            }
            .into());
        }
    }
    Ok(entries)
}

/// The files of `entries` the globs choose, each planned for download by
/// commit; with the path of every file (chosen or not).
fn select(
    hub: &HubClient<'_>,
    spec: &RepoSpec,
    commit: &GitOid,
    entries: Vec<TreeEntry>,
    plan: &mut Plan,
) -> Result<(Vec<PlannedFile>, Vec<String>), CreateError> {
    let globs = glob_set(spec)?;
    let denied = format!(
        "the repository is gated or private; {}",
        if hub.have_token {
            "HF_TOKEN is set, but the Hub refused it: check that its account has accepted the \
             repository's terms and the token can read it"
        } else {
            "set HF_TOKEN to a token of an account that has accepted its terms (it is sent to the \
             Hub only)"
        }
    );
    let mut files = Vec::new();
    let mut all_paths = Vec::new();
    for e in entries.into_iter().filter(|e| e.kind == "file") {
        check_relative_path("Hub file path", &e.path)?;
        all_paths.push(e.path.clone());
        if let Some(g) = &globs
            && !g.is_match(&e.path)
        {
            continue;
        }
        let (file, expect) = planned_file(spec, &e)?;
        plan.download(Download {
            label: format!("{} {}", spec.id, e.path),
            url: format!(
                "{}/{}{}/resolve/{commit}/{}",
                hub.endpoint,
                spec.kind.url_prefix(),
                spec.id,
                utf8_percent_encode(&e.path, PATH)
            ),
            size: file.size,
            expect,
            denied_hint: Some(denied.clone()),
        });
        files.push(file);
    }
    Ok((files, all_paths))
}

/// A file of the tree as planned, and what its bytes must hash to: the
/// LFS sha256 for an LFS file, else the git blob sha1 (its sha256 is known
/// once the bytes are fetched and hashed).
fn planned_file(spec: &RepoSpec, e: &TreeEntry) -> Result<(PlannedFile, Expect), CreateError> {
    let w = what(spec);
    let oid = e.oid.clone().unwrap_or_default().to_ascii_lowercase();
    let Ok(oid) = GitOid::parse_exact("git oid", &oid) else {
        return Err(HubError::NoGitOid {
            what: w,
            path: e.path.clone(),
            found: oid,
        }
        .into());
    };
    let Some(lfs) = &e.lfs else {
        let expect = Expect::GitBlobSha1(oid.clone());
        let file = PlannedFile {
            path: e.path.clone(),
            size: e.size,
            git_oid: oid,
            lfs_sha256: None,
            xet_hash: None,
        };
        return Ok((file, expect));
    };
    let sha = lfs.oid.trim_start_matches("sha256:").to_ascii_lowercase();
    let Ok(sha) = Sha256::parse_exact("LFS oid", &sha) else {
        return Err(HubError::LfsOid {
            what: w,
            path: e.path.clone(),
            oid: lfs.oid.clone(),
        }
        .into());
    };
    if lfs.size != e.size {
        return Err(HubError::LfsSize {
            what: w,
            path: e.path.clone(),
            tree: e.size,
            lfs: lfs.size,
        }
        .into());
    }
    let file = PlannedFile {
        path: e.path.clone(),
        size: lfs.size,
        git_oid: oid,
        lfs_sha256: Some(sha.clone()),
        xet_hash: xet_hash(spec, e)?,
    };
    Ok((file, Expect::Sha256(sha)))
}

/// An LFS file's `xetHash` as the tree lists it: 64 hex digits, or the
/// listing is refused (a hash import would compare with nothing sane).
/// Only LFS files are recorded: the Hub stores no other file in Xet.
fn xet_hash(spec: &RepoSpec, e: &TreeEntry) -> Result<Option<llmgw_shared::XetHash>, CreateError> {
    let Some(found) = &e.xet_hash else {
        return Ok(None);
    };
    let hash =
        llmgw_shared::XetHash::parse_exact("Xet hash", found).map_err(|_| HubError::XetHash {
            what: what(spec),
            path: e.path.clone(),
            found: found.chars().take(80).collect(),
        })?;
    Ok(Some(hash))
}

/// Why a repository gives no file: it has none, or none the globs match
/// (naming the first 40 it has).
fn nothing_chosen(spec: &RepoSpec, commit: &GitOid, mut all_paths: Vec<String>) -> String {
    all_paths.sort();
    let have = if all_paths.is_empty() {
        "no files at all".to_string()
    } else {
        let n = all_paths.len();
        let mut s = all_paths
            .into_iter()
            .take(40)
            .collect::<Vec<_>>()
            .join(", ");
        if n > 40 {
            s.push_str(&format!(" and {} more", n - 40));
        }
        s
    };
    if spec.patterns.is_empty() {
        format!("the repository has no files at commit {commit}")
    } else {
        format!(
            "no file at commit {commit} matches {}; it has: {have}",
            spec.patterns.join(",")
        )
    }
}

/// A URL a server chose, for a message: printable and at most 200
/// characters (a parsed URL is already percent-encoded).
fn shown(url: &str) -> String {
    let clean: String = url.chars().filter(|c| !c.is_control()).collect();
    if clean.chars().count() <= 200 {
        return clean;
    }
    let mut s: String = clean.chars().take(200).collect();
    s.push('…');
    s
}

fn glob_set(spec: &RepoSpec) -> Result<Option<GlobSet>, CreateError> {
    if spec.patterns.is_empty() {
        return Ok(None);
    }
    let mut b = GlobSetBuilder::new();
    for p in &spec.patterns {
        let g = GlobBuilder::new(p)
            .literal_separator(false)
            .build()
            .map_err(|error| CreateError::Glob {
                pattern: p.clone(),
                error,
            })?;
        b.add(g);
    }
    b.build().map(Some).map_err(|error| CreateError::Glob {
        pattern: spec.patterns.join(","),
        error,
    })
}

#[cfg(test)]
mod tests;
