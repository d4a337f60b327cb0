//! Hugging Face Hub repositories: a revision resolved to its 40-hex commit,
//! the recursive tree at that commit (every `Link: rel="next"` page), the
//! globs applied, and each file planned for download by commit with what
//! the Hub says it hashes to — the LFS sha256 for LFS files, the git blob
//! sha1 for the rest.
//!
//! What the Hub says about the repository besides — the card's licence and
//! each chosen file's security scan — is asked for in [`evidence`].
//!
//! Globs follow `huggingface_hub`'s `allow_patterns` (fnmatch): `*` also
//! matches `/`, so `*.gguf` finds GGUF files in sub-folders too.

mod evidence;

use globset::{GlobBuilder, GlobSet, GlobSetBuilder};
use llmgw_shared::manifest::{RefKind, RepoEvidence, RepoKind};
use llmgw_shared::url::{PATH, SEGMENT};
use llmgw_shared::{GitOid, RepoId, Sha256, check_relative_path, is_sha1_hex};
use percent_encoding::utf8_percent_encode;
use reqwest::Url;
use serde::Deserialize;

use crate::cache::Expect;
use crate::error::CreateError;
use crate::fetch::Download;
use crate::http::{Http, HttpError, link_next};
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

/// `GET /api/{type}s/{repo}/refs`: the names are all that is read.
#[derive(Deserialize)]
struct RefsJson {
    #[serde(default)]
    branches: Vec<RefName>,
    #[serde(default)]
    tags: Vec<RefName>,
}

#[derive(Deserialize)]
struct RefName {
    name: String,
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
}

#[derive(Deserialize)]
struct LfsJson {
    oid: String,
    size: u64,
}

fn what(spec: &RepoSpec) -> String {
    let kind = match spec.kind {
        RepoKind::Model => "model",
        RepoKind::Dataset => "dataset",
    };
    format!("{kind} {}@{}", spec.id, spec.revision)
}

/// Turns the Hub's refusal into words an operator can act on.
fn hub_error(spec: &RepoSpec, endpoint: &str, have_token: bool, e: HttpError) -> CreateError {
    let HttpError::Status {
        status,
        ref error_code,
        ref message,
        ..
    } = e
    else {
        return e.into();
    };
    let w = what(spec);
    let said = message
        .as_deref()
        .map(|m| format!(" (the Hub said: {m})"))
        .unwrap_or_default();
    let token = if have_token {
        "HF_TOKEN is set, but the Hub refused it: check that its account has accepted the repository's terms and the token can read it"
    } else {
        "set HF_TOKEN to a token of an account that has accepted its terms"
    };
    let msg = match (error_code.as_deref(), status) {
        (Some("GatedRepo"), _) | (_, 401) | (_, 403) => {
            format!("{w}: the repository is gated or private ({status}){said}; {token}")
        }
        (Some("RevisionNotFound"), _) => {
            format!("{w}: {endpoint} has no revision {}{said}", spec.revision)
        }
        (Some("RepoNotFound"), _) | (_, 404) => format!(
            "{w}: {endpoint} has no such repository{said}; check the name (if it is private or gated, {token})"
        ),
        _ => return e.into(),
    };
    CreateError::Hub(msg)
}

/// Resolves, lists and plans one repository.
pub async fn plan(
    http: &Http,
    endpoint: &str,
    have_token: bool,
    spec: &RepoSpec,
    allow_missing: bool,
    plan: &mut Plan,
) -> Result<(), CreateError> {
    let plural = spec.kind.api_plural();
    let w = what(spec);
    let url = format!(
        "{endpoint}/api/{plural}/{}/revision/{}",
        spec.id,
        utf8_percent_encode(&spec.revision, SEGMENT)
    );
    let (body, _) = http
        .get_small(&url, Some("application/json"), MAX_PAGE)
        .await
        .map_err(|e| hub_error(spec, endpoint, have_token, e))?;
    let rev: RevisionJson = serde_json::from_slice(&body)
        .map_err(|e| CreateError::hub_answer(&w, &url, "revision object", e))?;
    let commit = rev.sha.unwrap_or_default().to_ascii_lowercase();
    let Ok(commit) = GitOid::parse_exact("commit", &commit) else {
        return Err(CreateError::Hub(format!(
            "{w}: the Hub's revision answer has no 40-hex commit `sha` (found {commit:?})"
        )));
    };

    let ref_kind = ref_kind(http, endpoint, have_token, spec, &commit).await?;
    let licence = rev.licence.licence();

    // Every page of the recursive tree at the commit.
    let mut entries: Vec<TreeEntry> = Vec::new();
    let first = format!(
        "{endpoint}/api/{plural}/{}/tree/{commit}?recursive=true&expand=false",
        spec.id
    );
    let mut next = Some(first);
    // A page asked for twice is a listing that loops; more pages than the
    // cap is one that does not end.
    let mut seen = std::collections::HashSet::new();
    let max_pages = http.limits.max_pages;
    while let Some(page_url) = next.take() {
        if seen.len() >= max_pages {
            return Err(CreateError::Hub(format!(
                "{w}: the tree listing has more than {max_pages} pages (the last asked for was \
                 {}); refusing a listing that does not end",
                shown(&page_url)
            )));
        }
        seen.insert(page_url.clone());
        let (body, headers) = http
            .get_small(&page_url, Some("application/json"), MAX_PAGE)
            .await
            .map_err(|e| hub_error(spec, endpoint, have_token, e))?;
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
            return Err(CreateError::Hub(format!(
                "{w}: the tree listing loops: {} names {} as its next page \
                 (`Link: rel=\"next\"`), which was already fetched",
                shown(&page_url),
                shown(n)
            )));
        }
    }

    let globs = glob_set(spec)?;
    let denied = format!(
        "the repository is gated or private; {}",
        if have_token {
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
        let oid = e.oid.clone().unwrap_or_default().to_ascii_lowercase();
        let Ok(oid) = GitOid::parse_exact("git oid", &oid) else {
            return Err(CreateError::Hub(format!(
                "{w}: {}: the tree gives no 40-hex git oid (found {oid:?})",
                e.path
            )));
        };
        let label = format!("{} {}", spec.id, e.path);
        let url = format!(
            "{endpoint}/{}{}/resolve/{commit}/{}",
            spec.kind.url_prefix(),
            spec.id,
            utf8_percent_encode(&e.path, PATH)
        );
        let file = match &e.lfs {
            Some(lfs) => {
                let sha = lfs.oid.trim_start_matches("sha256:").to_ascii_lowercase();
                let Ok(sha) = Sha256::parse_exact("LFS oid", &sha) else {
                    return Err(CreateError::Hub(format!(
                        "{w}: {}: its LFS oid {:?} is not a sha256",
                        e.path, lfs.oid
                    )));
                };
                if lfs.size != e.size {
                    return Err(CreateError::Hub(format!(
                        "{w}: {}: the tree lists size {} but LFS size {}",
                        e.path, e.size, lfs.size
                    )));
                }
                plan.download(Download {
                    label,
                    url,
                    size: lfs.size,
                    expect: Expect::Sha256(sha.clone()),
                    denied_hint: Some(denied.clone()),
                });
                PlannedFile {
                    path: e.path.clone(),
                    size: lfs.size,
                    git_oid: oid,
                    lfs_sha256: Some(sha),
                }
            }
            None => {
                plan.download(Download {
                    label,
                    url,
                    size: e.size,
                    expect: Expect::GitBlobSha1(oid.clone()),
                    denied_hint: Some(denied.clone()),
                });
                // Its sha256 is known once the bytes are fetched and hashed.
                PlannedFile {
                    path: e.path.clone(),
                    size: e.size,
                    git_oid: oid,
                    lfs_sha256: None,
                }
            }
        };
        files.push(file);
    }
    if files.is_empty() {
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
        let reason = if spec.patterns.is_empty() {
            format!("the repository has no files at commit {commit}")
        } else {
            format!(
                "no file at commit {commit} matches {}; it has: {have}",
                spec.patterns.join(",")
            )
        };
        if allow_missing {
            plan.gap(w, reason);
            return Ok(());
        }
        return Err(CreateError::Hub(format!("{w}: {reason}")));
    }
    let chosen: Vec<String> = files.iter().map(|f| f.path.clone()).collect();
    let scans = evidence::scans(http, endpoint, have_token, spec, commit.as_str(), &chosen).await?;
    plan.repo_evidence.push(RepoEvidence {
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
    });
    Ok(())
}

/// Whether the revision asked for is a branch, a tag or a commit, as the
/// Hub's refs API says (a mirror lists each where it belongs). `refs/...`
/// names (pull requests, conversions) count as branches. An endpoint
/// without the refs listing (older mirrors, some proxies answer 404) has
/// the revision served as a branch, with a warning.
async fn ref_kind(
    http: &Http,
    endpoint: &str,
    have_token: bool,
    spec: &RepoSpec,
    commit: &str,
) -> Result<RefKind, CreateError> {
    let rev = spec.revision.as_str();
    if rev.eq_ignore_ascii_case(commit) {
        return Ok(RefKind::Commit);
    }
    if rev.starts_with("refs/") {
        return Ok(RefKind::Branch);
    }
    let url = format!("{endpoint}/api/{}/{}/refs", spec.kind.api_plural(), spec.id);
    let body = match http
        .get_small(&url, Some("application/json"), MAX_PAGE)
        .await
    {
        Ok((body, _)) => body,
        Err(HttpError::Status { status: 404, .. }) => {
            return Ok(no_refs_listing(spec, &url));
        }
        Err(e) => {
            return Err(CreateError::Hub(format!(
                "{}: listing its branches and tags ({url}) failed: {}",
                what(spec),
                llmgw_shared::chain(&hub_error(spec, endpoint, have_token, e))
            )));
        }
    };
    let refs: RefsJson = serde_json::from_slice(&body)
        .map_err(|e| CreateError::hub_answer(&what(spec), &url, "refs answer", e))?;
    Ok(if refs.branches.iter().any(|b| b.name == rev) {
        RefKind::Branch
    } else if refs.tags.iter().any(|t| t.name == rev) {
        RefKind::Tag
    } else if is_sha1_hex(rev) || rev.len() < 40 && rev.bytes().all(|b| b.is_ascii_hexdigit()) {
        RefKind::Commit
    } else {
        RefKind::Branch
    })
}

/// The endpoint has no refs listing (404): the revision, which the
/// revision call found, is served as a branch, and the operator is told.
fn no_refs_listing(spec: &RepoSpec, url: &str) -> RefKind {
    tracing::warn!(
        "{}: {url} answered 404 (the endpoint has no refs listing); revision {} is served as a \
         branch (a mirror that lists refs would say whether it is a tag)",
        what(spec),
        llmgw_shared::shown(&spec.revision)
    );
    RefKind::Branch
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
mod tests {
    use super::*;

    #[test]
    fn globs_match_like_fnmatch() {
        let spec = RepoSpec {
            kind: RepoKind::Model,
            id: "org/m".into(),
            revision: "main".into(),
            patterns: vec!["*.Q4_K_M.gguf".into(), "config.json".into()],
        };
        let g = glob_set(&spec).unwrap().unwrap();
        assert!(g.is_match("m.Q4_K_M.gguf"));
        assert!(g.is_match("sub/m.Q4_K_M.gguf"));
        assert!(g.is_match("config.json"));
        assert!(!g.is_match("m.Q8_0.gguf"));
        assert!(!g.is_match("sub/config.json.bak"));
    }

    #[test]
    fn resolve_paths_keep_slashes() {
        assert_eq!(
            utf8_percent_encode("sub/dir/a b+c.txt", PATH).to_string(),
            "sub/dir/a%20b%2Bc.txt"
        );
        assert_eq!(
            utf8_percent_encode("refs/pr/1", SEGMENT).to_string(),
            "refs%2Fpr%2F1"
        );
    }
}
