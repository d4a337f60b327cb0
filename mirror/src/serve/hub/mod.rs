//! The Hugging Face Hub routes, shaped as `huggingface_hub` 0.36 and 2.x
//! and llama.cpp's `-hf` read them (see `protocols.md` §1 and §6):
//!
//! - `GET /api/{models,datasets}/{repo}` and `…/revision/{rev}` (`blobs`)
//! - `GET /api/{type}s/{repo}/tree/{rev}[/{path}]` (`recursive`, `expand`),
//!   1 000 entries a page with a `Link` to the next (`tree.rs`), bare-hex
//!   oids, never `xetHash`
//! - `POST /api/{type}s/{repo}/paths-info/{rev}` (form: `paths`, `expand`)
//! - `GET /api/{type}s/{repo}/refs`
//! - `HEAD|GET /[datasets/]{repo}/resolve/{rev}/{path}`: 200 directly
//! - `GET /v2/{repo}/manifests/{tag}`: the GGUF for a quant tag
//!
//! Invariant: every name from the URL is decoded and checked before it is
//! looked up, and is only ever a key into the index; every refusal is a
//! [`HubError`], answered in the shape the Hub's clients read.

pub mod ahead;
pub mod error;
mod files;
mod kernels;
mod shapes;
mod tree;

use axum::response::Response;
use http::{HeaderMap, Method};
use llmgw_shared::manifest::RepoKind;
use llmgw_shared::{check_ref_name, check_relative_path, is_sha1_hex};
use serde_json::{Value, json};

use super::index::{HubRepo, Snapshot};
use super::request::Req;
use super::route::{Route, Routed, routed};
use crate::serve::http::paths::{self, BadPath, query_bool};
use crate::serve::http::respond::{self, header_text};
use error::HubError;
use shapes::{info_json, tree_json};

pub use files::{manifests, resolve};
pub use kernels::NodeMiss;

/// `models` / `datasets` / `kernels` (and the resolve prefixes `datasets`,
/// `kernels`) to a kind. `spaces` exist on the Hub but are never mirrored.
pub fn kind_of(plural: &str) -> Option<Option<RepoKind>> {
    match plural {
        "models" => Some(Some(RepoKind::Model)),
        "datasets" => Some(Some(RepoKind::Dataset)),
        "kernels" => Some(Some(RepoKind::Kernel)),
        "spaces" => Some(None),
        _ => None,
    }
}

/// Decodes and checks a revision: a 40-hex commit or a ref name.
fn revision(raw: &[&str]) -> Result<String, BadPath> {
    let rev = paths::decode_join(raw)?;
    if !is_sha1_hex(&rev) {
        check_ref_name("revision", &rev)?;
    }
    Ok(rev)
}

/// The repository held under this id, or the Hub's RepoNotFound.
fn repo<'i>(req: &'i Req<'_>, kind: Option<RepoKind>, id: &str) -> Result<&'i HubRepo, HubError> {
    kind.and_then(|k| req.index.repo(k, id))
        .ok_or_else(|| HubError::RepoNotFound {
            plural: kind.map_or("spaces", RepoKind::api_plural),
            id: id.to_string(),
        })
}

fn revision_not_found(id: &str, rev: &str) -> HubError {
    HubError::RevisionNotFound {
        id: id.to_string(),
        rev: rev.to_string(),
    }
}

/// `/api/{plural}/{owner}/{name}/...` — `segs` starts at the owner.
pub fn api(req: &Req<'_>, plural: &str, segs: &[&str], form: Option<&[u8]>) -> Routed {
    if let ("organizations", [org, "overview"]) = (plural, segs) {
        return routed(Route::HubOrgOverview, kernels::overview(req, org));
    }
    let Some(kind) = kind_of(plural) else {
        return routed(Route::NotFound, Err(HubError::NoRoute));
    };
    if segs.len() < 2 {
        return routed(Route::NotFound, Err(HubError::NoRoute));
    }
    let route = match segs.get(2).copied() {
        None => Route::HubInfo,
        Some("revision") => Route::HubRevision,
        Some("tree") => Route::HubTree,
        Some("refs") => Route::HubRefs,
        Some("paths-info") => Route::HubPathsInfo,
        Some("xet-read-token") => Route::HubXetToken,
        _ => return routed(Route::NotFound, Err(HubError::NotFound)),
    };
    routed(route, answer(req, route, kind, segs, form))
}

/// `resp`, said to be built from `repo`'s part of the index alone (every
/// answer of this module is: `shapes.rs` and `tree.rs` read nothing else),
/// so the JSON cache keeps it until an import changes that repository.
fn of_repo(mut resp: Response, repo: &HubRepo) -> Response {
    let source = respond::Source::HubRepo(repo.kind, llmgw_shared::repo_key(&repo.id));
    respond::made_from(&mut resp, source);
    resp
}

fn answer(
    req: &Req<'_>,
    route: Route,
    kind: Option<RepoKind>,
    segs: &[&str],
    form: Option<&[u8]>,
) -> Result<Response, HubError> {
    if route == Route::HubXetToken {
        return xet_token(req, kind, segs);
    }
    let want_post = route == Route::HubPathsInfo;
    let method_ok = if want_post {
        req.method == Method::POST
    } else {
        req.method == Method::GET || req.method == Method::HEAD
    };
    if !method_ok {
        let allow = if want_post { "POST" } else { "GET, HEAD" };
        return Err(HubError::Method { allow });
    }
    let id = paths::repo_id("repository id", segs[0], segs[1])?;
    let repo = repo(req, kind, &id)?;
    let rest = &segs[2..];
    if route == Route::HubRefs {
        if rest.len() != 1 {
            return Err(HubError::NotFound);
        }
        let refs = respond::json(req.method, req.headers, &refs_json(repo));
        return Ok(of_repo(refs, repo));
    }
    // The revision: `revision/` takes the rest (quoted or not), `tree/`
    // and `paths-info/` one segment (the Hub quotes its slashes).
    let (rev_raw, after): (&[&str], &[&str]) = match route {
        Route::HubInfo => (&[], &[]),
        Route::HubRevision if rest.len() >= 2 => (&rest[1..], &[]),
        Route::HubTree | Route::HubPathsInfo if rest.len() >= 2 => (&rest[1..2], &rest[2..]),
        _ => return Err(HubError::NotFound),
    };
    let rev = if rev_raw.is_empty() {
        None
    } else {
        Some(revision(rev_raw)?)
    };
    let snap = match &rev {
        None => repo
            .default_snapshot()
            .ok_or_else(|| revision_not_found(&repo.id, "main"))?,
        Some(rev) => repo
            .resolve(rev)
            .ok_or_else(|| revision_not_found(&repo.id, rev))?,
    };
    let mut commit = HeaderMap::new();
    commit.insert("x-repo-commit", header_text(&snap.commit));
    let v = match route {
        Route::HubInfo | Route::HubRevision => {
            if !after.is_empty() {
                return Err(HubError::NotFound);
            }
            let blobs = query_bool(&req.query, "blobs");
            // A large repository's answer, made before this index was
            // served: sent as built, never built on a request.
            if let Some(made) = repo.ahead.get().and_then(|a| a.revision(&snap.commit))
                && !blobs
            {
                let (body, etag) = (made.body.clone(), made.etag.clone());
                let resp = respond::json_made(req.method, req.headers, body, etag, commit);
                return Ok(of_repo(resp, repo));
            }
            info_json(repo, snap, blobs)
        }
        Route::HubTree => {
            let rev = rev.as_deref().unwrap_or_default();
            tree_page(req, (repo, rev, snap), after, &mut commit)?
        }
        _ => {
            if !after.is_empty() {
                return Err(HubError::NotFound);
            }
            paths_info(req, snap, form)?
        }
    };
    let mut resp = of_repo(
        respond::json_with(req.method, req.headers, &v, commit),
        repo,
    );
    if route == Route::HubTree && repo.kind == RepoKind::Kernel && after == ["build"] {
        kernels::for_node(req, &repo.id, snap, &mut resp);
    }
    Ok(resp)
}

/// One page of the tree of `snap` at `after`; a `Link` to the next, if
/// there is one, in `headers`.
fn tree_page(
    req: &Req<'_>,
    (repo, rev, snap): (&HubRepo, &str, &Snapshot),
    after: &[&str],
    headers: &mut HeaderMap,
) -> Result<Value, HubError> {
    let at = tree::Listing {
        plural: repo.kind.api_plural(),
        repo,
        rev,
    };
    let page = tree::tree(req, &at, snap, after)?;
    if let Some(next) = page.next {
        let link = header_text(&format!("<{next}>; rel=\"next\""));
        headers.insert(http::header::LINK, link);
    }
    Ok(page.entries)
}

/// `xet-read-token/{rev}` of a held repository and revision: see
/// [`crate::serve::xet::token`].
fn xet_token(req: &Req<'_>, kind: Option<RepoKind>, segs: &[&str]) -> Result<Response, HubError> {
    if req.method != Method::GET && req.method != Method::HEAD {
        return Err(HubError::Method { allow: "GET, HEAD" });
    }
    let id = paths::repo_id("repository id", segs[0], segs[1])?;
    let repo = repo(req, kind, &id)?;
    let rev = match &segs[3..] {
        [] => None,
        raw => Some(revision(raw)?),
    };
    let held = match &rev {
        None => repo.default_snapshot().is_some(),
        Some(rev) => repo.resolve(rev).is_some(),
    };
    if !held {
        let rev = rev.unwrap_or_else(|| "main".to_string());
        return Err(revision_not_found(&repo.id, &rev));
    }
    Ok(crate::serve::xet::token(req))
}

/// `refs`: tags where the manifest says they were tags; every other name
/// (and all of a format 1 manifest's) as a branch.
fn refs_json(repo: &HubRepo) -> Value {
    let listed = |tags: bool, prefix: &str| -> Vec<Value> {
        repo.refs
            .iter()
            .filter(|(name, _)| !name.starts_with("refs/"))
            .filter(|(name, _)| repo.tags.contains(*name) == tags)
            .map(|(name, commit)| {
                json!({"name": name, "ref": format!("{prefix}{name}"), "targetCommit": commit})
            })
            .collect()
    };
    json!({
        "branches": listed(false, "refs/heads/"),
        "converts": [],
        "tags": listed(true, "refs/tags/"),
    })
}

/// `paths-info/{rev}`: the form's `paths`, in order, skipping misses.
fn paths_info(req: &Req<'_>, snap: &Snapshot, form: Option<&[u8]>) -> Result<Value, HubError> {
    let pairs = paths::form_pairs(form.unwrap_or_default());
    let expand = query_bool(&pairs, "expand") || query_bool(&req.query, "expand");
    let mut out = Vec::new();
    for (k, p) in &pairs {
        if k != "paths" {
            continue;
        }
        let p = p.trim_matches('/');
        check_relative_path("path", p).map_err(BadPath::from)?;
        if let Some(e) = snap.entry(p) {
            out.push(tree_json(&e, snap, &req.index.xet, expand));
        }
    }
    Ok(Value::Array(out))
}
