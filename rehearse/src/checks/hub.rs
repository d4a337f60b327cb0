//! Every Hub repository as `huggingface_hub` meets it: the revision's
//! listing (`/api/{models|datasets}/{id}/revision/{rev}`: its commit and
//! every file), then a HEAD of every file's `resolve` URL, checked as the
//! client checks it (`X-Repo-Commit`, an ETag, the size in `X-Linked-Size`
//! or `Content-Length`); and every `--model` glob matches a file carried.
//!
//! Invariant: one row per repository revision, failing on the first thing
//! a node would trip on, with the file and what the mirror answered.

use globset::Glob;
use llmgw_shared::manifest::{HfRepo, Manifest};

use crate::client::{Mirror, path, seg};
use crate::report::Check;

const AREA: &str = "hub";

/// The rows for every Hub repository of `m`.
pub async fn check(mirror: &Mirror, m: &Manifest) -> Vec<Check> {
    let mut out = Vec::new();
    for repo in &m.repos {
        let subject = format!(
            "{} {}@{}: listing and {} files",
            repo.kind.api_plural(),
            repo.id,
            repo.revision,
            repo.files.len()
        );
        out.push(match one(mirror, repo).await {
            Ok(()) => Check::pass(AREA, subject),
            Err((detail, fix)) => Check::fail(AREA, subject, detail, fix),
        });
    }
    out
}

async fn one(mirror: &Mirror, repo: &HfRepo) -> Result<(), (String, String)> {
    let remake = "make the bundle again (its files are not what the mirror serves): report it, \
                  with this line, as a fault of llmgw";
    let listing = format!(
        "/api/{}/{}/revision/{}",
        repo.kind.api_plural(),
        repo.id,
        seg(&repo.revision)
    );
    let a = mirror
        .get_ok(&listing, &[])
        .await
        .map_err(|e| (e, remake.to_string()))?;
    let v: serde_json::Value = serde_json::from_slice(&a.body)
        .map_err(|e| (format!("GET {listing}: not JSON: {e}"), remake.to_string()))?;
    if v["sha"] != repo.commit.as_str() {
        return Err((
            format!(
                "GET {listing}: sha {} where the bundle has {}",
                v["sha"], repo.commit
            ),
            remake.into(),
        ));
    }
    let listed: std::collections::BTreeSet<&str> = v["siblings"]
        .as_array()
        .into_iter()
        .flatten()
        .filter_map(|s| s["rfilename"].as_str())
        .collect();
    for f in &repo.files {
        if !listed.contains(f.path.as_str()) {
            return Err((
                format!("GET {listing}: {} is not listed", f.path),
                remake.into(),
            ));
        }
        let url = format!(
            "/{}{}/resolve/{}/{}",
            repo.kind.url_prefix(),
            repo.id,
            seg(&repo.revision),
            path(&f.path)
        );
        let a = mirror
            .head_ok(&url, &[])
            .await
            .map_err(|e| (e, remake.to_string()))?;
        let commit = a.header("x-repo-commit");
        if commit != repo.commit {
            return Err((
                format!("HEAD {url}: X-Repo-Commit {commit:?}, not {}", repo.commit),
                remake.into(),
            ));
        }
        if a.header("etag").is_empty() {
            return Err((format!("HEAD {url}: no ETag"), remake.into()));
        }
        let size = match a.header("x-linked-size") {
            "" => a.header("content-length"),
            s => s,
        };
        if size != f.size.to_string() {
            return Err((
                format!("HEAD {url}: size {size:?}, the bundle has {}", f.size),
                remake.into(),
            ));
        }
    }
    for p in &repo.patterns {
        let Ok(glob) = Glob::new(p) else { continue };
        let glob = glob.compile_matcher();
        if !repo.files.iter().any(|f| glob.is_match(&f.path)) {
            return Err((
                format!("the glob {p:?} matches no file carried"),
                format!(
                    "check the glob against the repository's files at {}: `llmgw bundle create \
                     --dry-run` lists what each --model glob picks",
                    repo.commit
                ),
            ));
        }
    }
    Ok(())
}
