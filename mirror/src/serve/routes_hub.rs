//! The Hugging Face Hub routes, shaped as `huggingface_hub` 0.36 and 2.x
//! and llama.cpp's `-hf` read them (see `protocols.md` §1 and §6):
//!
//! - `GET /api/{models,datasets}/{repo}` and `…/revision/{rev}` (`blobs`)
//! - `GET /api/{type}s/{repo}/tree/{rev}[/{path}]` (`recursive`, `expand`),
//!   as ONE page: no `Link`, bare-hex oids, never `xetHash`
//! - `POST /api/{type}s/{repo}/paths-info/{rev}` (form: `paths`, `expand`)
//! - `GET /api/{type}s/{repo}/refs`
//! - `HEAD|GET /[datasets/]{repo}/resolve/{rev}/{path}`: 200 directly
//! - `GET /v2/{repo}/manifests/{tag}`: the GGUF for a quant tag

use axum::response::Response;
use http::{HeaderMap, HeaderValue, Method, StatusCode};
use llmgw_shared::manifest::RepoKind;
use llmgw_shared::names;
use serde_json::{Value, json};

use super::Req;
use super::files::{BlobReply, serve_blob};
use super::index::{HubFile, HubRepo, Snapshot, TreeEntry};
use super::paths::{self, query_bool};
use super::respond::{self, header_text, hub_error};

/// A route's result: its metrics label and the response.
pub type Routed = (&'static str, Response);

fn bad(route: &'static str, why: impl std::fmt::Display) -> Routed {
    (
        route,
        respond::text(StatusCode::BAD_REQUEST, format!("{why}\n")),
    )
}

/// `models` / `datasets` (and the resolve prefix `datasets`) to a kind.
/// `spaces` and `kernels` exist on the Hub but are never mirrored.
pub fn kind_of(plural: &str) -> Option<Option<RepoKind>> {
    match plural {
        "models" => Some(Some(RepoKind::Model)),
        "datasets" => Some(Some(RepoKind::Dataset)),
        "spaces" | "kernels" => Some(None),
        _ => None,
    }
}

/// Decodes and checks a revision: a 40-hex commit or a ref name.
fn revision(raw: &[&str]) -> Result<String, String> {
    let rev = paths::decode_join(raw).map_err(|e| e.to_string())?;
    if !names::is_sha1_hex(&rev) {
        names::check_ref_name("revision", &rev).map_err(|e| e.to_string())?;
    }
    Ok(rev)
}

fn repo_not_found(kind: Option<RepoKind>, id: &str) -> Response {
    let what = kind.map_or("spaces", RepoKind::api_plural);
    hub_error(
        StatusCode::NOT_FOUND,
        Some("RepoNotFound"),
        &format!("Repository not found: {what}/{id} is not held by this mirror"),
        None,
    )
}

fn revision_not_found(id: &str, rev: &str) -> Response {
    hub_error(
        StatusCode::NOT_FOUND,
        Some("RevisionNotFound"),
        &format!("Invalid rev id: {rev} is not held by this mirror for {id}"),
        None,
    )
}

fn entry_not_found(id: &str, path: &str, commit: &str) -> Response {
    hub_error(
        StatusCode::NOT_FOUND,
        Some("EntryNotFound"),
        &format!("Entry not found: {path} is not held by this mirror for {id} at {commit}"),
        Some(commit),
    )
}

/// The Hub writes times with milliseconds: `2026-01-01T00:00:00.000Z`.
fn hub_time(rfc3339: &str) -> String {
    match rfc3339.strip_suffix('Z') {
        Some(t) if !t.contains('.') => format!("{t}.000Z"),
        _ => rfc3339.to_string(),
    }
}

fn lfs_sibling(f: &HubFile) -> Value {
    json!({"sha256": f.blob.sha256, "size": f.blob.size, "pointerSize": f.pointer_size()})
}

fn info_json(repo: &HubRepo, snap: &Snapshot, blobs: bool) -> Value {
    let siblings: Vec<Value> = snap
        .files()
        .map(|f| {
            if blobs {
                let mut v = json!({"rfilename": f.path, "size": f.blob.size, "blobId": f.git_oid});
                if f.lfs {
                    v["lfs"] = lfs_sibling(f);
                }
                v
            } else {
                json!({"rfilename": f.path})
            }
        })
        .collect();
    let author = repo.id.split('/').next().unwrap_or_default();
    let mut v = json!({
        "_id": &snap.commit[..24],
        "id": repo.id,
        "author": author,
        "sha": snap.commit,
        "lastModified": hub_time(&snap.last_modified),
        "private": false,
        "disabled": false,
        "gated": false,
        "downloads": 0,
        "likes": 0,
        "tags": [],
        "siblings": siblings,
    });
    if repo.kind == RepoKind::Model {
        v["modelId"] = json!(repo.id);
    }
    v
}

fn tree_json(entry: &TreeEntry, snap: &Snapshot, expand: bool) -> Value {
    let mut v = match entry {
        TreeEntry::Dir { path, oid } => {
            json!({"type": "directory", "oid": oid, "size": 0, "path": path})
        }
        TreeEntry::File(f) => {
            let mut v =
                json!({"type": "file", "oid": f.git_oid, "size": f.blob.size, "path": f.path});
            if f.lfs {
                v["lfs"] = json!({"oid": f.blob.sha256, "size": f.blob.size, "pointerSize": f.pointer_size()});
            }
            v
        }
    };
    if expand {
        v["lastCommit"] = json!({
            "id": snap.commit,
            "title": "Mirrored by llmgw",
            "date": hub_time(&snap.last_modified),
        });
    }
    v
}

/// `/api/{plural}/{owner}/{name}/...` — `segs` starts at the owner.
pub fn api(req: &Req<'_>, plural: &str, segs: &[&str], form: Option<&[u8]>) -> Routed {
    let Some(kind) = kind_of(plural) else {
        return (
            "not_found",
            respond::text(StatusCode::NOT_FOUND, "not found\n"),
        );
    };
    if segs.len() < 2 {
        return (
            "not_found",
            respond::text(StatusCode::NOT_FOUND, "not found\n"),
        );
    }
    let rest = &segs[2..];
    let route = match rest.first().copied() {
        None => "hub_info",
        Some("revision") => "hub_revision",
        Some("tree") => "hub_tree",
        Some("refs") => "hub_refs",
        Some("paths-info") => "hub_paths_info",
        _ => {
            return (
                "not_found",
                hub_error(StatusCode::NOT_FOUND, None, "not found", None),
            );
        }
    };
    let want_post = route == "hub_paths_info";
    let method_ok = if want_post {
        req.method == Method::POST
    } else {
        req.method == Method::GET || req.method == Method::HEAD
    };
    if !method_ok {
        return (
            route,
            respond::method_not_allowed(if want_post { "POST" } else { "GET, HEAD" }),
        );
    }
    let id = match paths::repo_id("repository id", segs[0], segs[1]) {
        Ok(id) => id,
        Err(e) => return bad(route, e),
    };
    let index = &req.index;
    let Some(repo) = kind.and_then(|k| index.repo(k, &id)) else {
        return (route, repo_not_found(kind, &id));
    };
    if route == "hub_refs" {
        if rest.len() != 1 {
            return (
                route,
                hub_error(StatusCode::NOT_FOUND, None, "not found", None),
            );
        }
        // Tags where the manifest says they were tags; every other name
        // (and all of a format 1 manifest's) as a branch.
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
        let v = json!({
            "branches": listed(false, "refs/heads/"),
            "converts": [],
            "tags": listed(true, "refs/tags/"),
        });
        return (route, respond::json(req.method, req.headers, &v));
    }
    // The revision: `revision/` takes the rest (quoted or not), `tree/`
    // and `paths-info/` one segment (the Hub quotes its slashes).
    let (rev_raw, after): (&[&str], &[&str]) = match route {
        "hub_info" => (&[], &[]),
        "hub_revision" if rest.len() >= 2 => (&rest[1..], &[]),
        "hub_tree" | "hub_paths_info" if rest.len() >= 2 => (&rest[1..2], &rest[2..]),
        _ => {
            return (
                route,
                hub_error(StatusCode::NOT_FOUND, None, "not found", None),
            );
        }
    };
    let snap = if rev_raw.is_empty() {
        match repo.default_snapshot() {
            Some(s) => s,
            None => return (route, revision_not_found(&repo.id, "main")),
        }
    } else {
        let rev = match revision(rev_raw) {
            Ok(r) => r,
            Err(e) => return bad(route, e),
        };
        match repo.resolve(&rev) {
            Some(s) => s,
            None => return (route, revision_not_found(&repo.id, &rev)),
        }
    };
    let commit_header = || {
        let mut h = HeaderMap::new();
        h.insert("x-repo-commit", header_text(&snap.commit));
        h
    };
    match route {
        "hub_info" | "hub_revision" => {
            if !after.is_empty() {
                return (
                    route,
                    hub_error(StatusCode::NOT_FOUND, None, "not found", None),
                );
            }
            let blobs = query_bool(&req.query, "blobs");
            let v = info_json(repo, snap, blobs);
            (
                route,
                respond::json_with(req.method, req.headers, &v, commit_header()),
            )
        }
        "hub_tree" => {
            let path = match paths::decode_join(after) {
                Ok(p) => p,
                Err(e) => return bad(route, e),
            };
            if !path.is_empty()
                && let Err(e) = names::check_relative_path("tree path", &path)
            {
                return bad(route, e);
            }
            if !snap.is_dir(&path) {
                return (route, entry_not_found(&repo.id, &path, &snap.commit));
            }
            let recursive = query_bool(&req.query, "recursive");
            let expand = query_bool(&req.query, "expand");
            let mut out = Vec::new();
            if recursive {
                let prefix = if path.is_empty() {
                    String::new()
                } else {
                    format!("{path}/")
                };
                for (p, e) in snap.entries.range(prefix.clone()..) {
                    if !p.starts_with(&prefix) {
                        break;
                    }
                    out.push(tree_json(e, snap, expand));
                }
            } else {
                for p in snap.children.get(&path).into_iter().flatten() {
                    if let Some(e) = snap.entries.get(p) {
                        out.push(tree_json(e, snap, expand));
                    }
                }
            }
            (
                route,
                respond::json_with(req.method, req.headers, &Value::Array(out), commit_header()),
            )
        }
        _ => {
            // paths-info: the form's `paths`, in order, skipping misses.
            if !after.is_empty() {
                return (
                    route,
                    hub_error(StatusCode::NOT_FOUND, None, "not found", None),
                );
            }
            let pairs = paths::form_pairs(form.unwrap_or_default());
            let expand = query_bool(&pairs, "expand") || query_bool(&req.query, "expand");
            let mut out = Vec::new();
            for (k, p) in &pairs {
                if k != "paths" {
                    continue;
                }
                let p = p.trim_matches('/');
                if let Err(e) = names::check_relative_path("path", p) {
                    return bad(route, e);
                }
                if let Some(e) = snap.entries.get(p) {
                    out.push(tree_json(e, snap, expand));
                }
            }
            (
                route,
                respond::json_with(req.method, req.headers, &Value::Array(out), commit_header()),
            )
        }
    }
}

/// `HEAD|GET /[datasets/]{owner}/{name}/resolve/{rev}/{path...}` — `segs`
/// starts at the owner.
pub async fn resolve(req: &Req<'_>, kind: Option<RepoKind>, segs: &[&str]) -> Routed {
    let route = "hub_resolve";
    if req.method != Method::GET && req.method != Method::HEAD {
        return (route, respond::method_not_allowed("GET, HEAD"));
    }
    if segs.len() < 5 {
        return (
            route,
            hub_error(StatusCode::NOT_FOUND, None, "not found", None),
        );
    }
    let id = match paths::repo_id("repository id", segs[0], segs[1]) {
        Ok(id) => id,
        Err(e) => return bad(route, e),
    };
    let rev = match revision(&segs[3..4]) {
        Ok(r) => r,
        Err(e) => return bad(route, e),
    };
    let path = match paths::decode_join(&segs[4..]) {
        Ok(p) => p,
        Err(e) => return bad(route, e),
    };
    if let Err(e) = names::check_relative_path("file path", &path) {
        return bad(route, e);
    }
    let Some(repo) = kind.and_then(|k| req.index.repo(k, &id)) else {
        return (route, repo_not_found(kind, &id));
    };
    let Some(snap) = repo.resolve(&rev) else {
        return (route, revision_not_found(&repo.id, &rev));
    };
    let Some(file) = snap.file(&path) else {
        return (route, entry_not_found(&repo.id, &path, &snap.commit));
    };
    let etag = format!("\"{}\"", file.etag());
    let mut extra = HeaderMap::new();
    extra.insert("x-repo-commit", header_text(&snap.commit));
    extra.insert("x-linked-etag", header_text(&etag));
    extra.insert("x-linked-size", HeaderValue::from(file.blob.size));
    (
        route,
        serve_blob(
            &req.state.store,
            req.method,
            req.headers,
            BlobReply {
                blob: &file.blob,
                etag,
                content_type: "application/octet-stream",
                extra,
            },
        )
        .await,
    )
}

/// Whether `name` holds `tag` as a whole word: `Q4_K` is not found in
/// `tiny-Q4_K_M.gguf`, `Q4_K_M` is.
fn has_quant(name: &str, tag: &str) -> bool {
    let (name, tag) = (name.to_ascii_uppercase(), tag.to_ascii_uppercase());
    let word = |c: Option<char>| c.is_some_and(|c| c.is_ascii_alphanumeric() || c == '_');
    name.match_indices(&tag).any(|(i, _)| {
        !word(name[..i].chars().next_back()) && !word(name[i + tag.len()..].chars().next())
    })
}

/// `GET /v2/{owner}/{name}/manifests/{tag}` — older llama.cpp `-hf`: the
/// GGUF for a quant tag (`latest` means Q4_K_M, then Q8_0, then the first).
pub fn manifests(req: &Req<'_>, segs: &[&str]) -> Routed {
    let route = "hub_manifests";
    if req.method != Method::GET && req.method != Method::HEAD {
        return (route, respond::method_not_allowed("GET, HEAD"));
    }
    // segs: owner, name, "manifests", tag
    if segs.len() != 4 || segs[2] != "manifests" {
        return (
            "not_found",
            respond::text(StatusCode::NOT_FOUND, "not found\n"),
        );
    }
    let id = match paths::repo_id("repository id", segs[0], segs[1]) {
        Ok(id) => id,
        Err(e) => return bad(route, e),
    };
    let tag = match paths::decode(segs[3]) {
        Ok(t)
            if !t.is_empty()
                && t.chars()
                    .all(|c| c.is_ascii_alphanumeric() || "_-.".contains(c)) =>
        {
            t
        }
        Ok(t) => return bad(route, format!("quant tag {t:?} is not a tag")),
        Err(e) => return bad(route, e),
    };
    let Some(repo) = req.index.repo(RepoKind::Model, &id) else {
        return (route, repo_not_found(Some(RepoKind::Model), &id));
    };
    let Some(snap) = repo.default_snapshot() else {
        return (route, revision_not_found(&repo.id, "main"));
    };
    let ggufs: Vec<&HubFile> = snap
        .files()
        .filter(|f| f.path.to_ascii_lowercase().ends_with(".gguf"))
        .collect();
    let (models, mmproj): (Vec<&HubFile>, Vec<&HubFile>) = ggufs
        .into_iter()
        .partition(|f| !f.path.to_ascii_lowercase().contains("mmproj"));
    // A split model is asked for by its first shard.
    let first_shard = |f: &HubFile| {
        let lower = f.path.to_ascii_lowercase();
        !lower.contains("-of-") || lower.contains("-00001-of-")
    };
    let find = |t: &str| {
        models
            .iter()
            .find(|f| first_shard(f) && has_quant(&f.path, t))
            .copied()
    };
    let chosen = if tag.eq_ignore_ascii_case("latest") {
        find("Q4_K_M")
            .or_else(|| find("Q8_0"))
            .or_else(|| models.iter().find(|f| first_shard(f)).copied())
    } else {
        find(&tag)
    };
    let Some(gguf) = chosen else {
        return (
            route,
            hub_error(
                StatusCode::NOT_FOUND,
                Some("EntryNotFound"),
                &format!("no GGUF file of {} matches the tag {tag}", repo.id),
                Some(&snap.commit),
            ),
        );
    };
    let file_json = |f: &HubFile| {
        let mut v = json!({"rfilename": f.path, "size": f.blob.size, "blobId": f.git_oid});
        if f.lfs {
            v["lfs"] = lfs_sibling(f);
        }
        v
    };
    let mut v = json!({"ggufFile": file_json(gguf)});
    if let Some(m) = mmproj.first() {
        v["mmprojFile"] = file_json(m);
    }
    let mut extra = HeaderMap::new();
    extra.insert("x-repo-commit", header_text(&snap.commit));
    (
        route,
        respond::json_with(req.method, req.headers, &v, extra),
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn quant_tags_are_whole_words() {
        assert!(has_quant("tiny-Q4_K_M.gguf", "Q4_K_M"));
        assert!(has_quant("tiny-q4_k_m.gguf", "Q4_K_M"));
        assert!(!has_quant("tiny-Q4_K_M.gguf", "Q4_K"));
        assert!(has_quant("tiny-Q8_0-00001-of-00002.gguf", "q8_0"));
        assert!(!has_quant("tiny-Q8_0.gguf", "Q8"));
    }

    #[test]
    fn hub_times_have_milliseconds() {
        assert_eq!(hub_time("2026-01-01T00:00:00Z"), "2026-01-01T00:00:00.000Z");
        assert_eq!(hub_time("2026-01-01T00:00:00.5Z"), "2026-01-01T00:00:00.5Z");
    }
}
