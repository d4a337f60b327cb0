//! The Hub's file routes: `HEAD|GET /[datasets/]{repo}/resolve/{rev}/{path}`
//! (the bytes, 200 directly) and `GET /v2/{repo}/manifests/{tag}` (the GGUF
//! for a quant tag, as older llama.cpp `-hf` asks).
//!
//! Invariant: a file is found only through the index (repo, revision,
//! path → blob); the blob's sha256 is the only thing that reaches the disk.

use axum::response::Response;
use http::{HeaderMap, HeaderValue, Method};
use llmgw_shared::check_relative_path;
use llmgw_shared::manifest::RepoKind;
use serde_json::json;

use super::error::HubError;
use super::shapes::lfs_sibling;
use super::{revision, revision_not_found};
use crate::serve::http::files::{BlobReply, serve_blob};
use crate::serve::http::paths;
use crate::serve::http::respond::{self, header_text};
use crate::serve::index::HubFile;
use crate::serve::request::Req;
use crate::serve::route::{Route, Routed, routed};

/// `HEAD|GET /[datasets/]{owner}/{name}/resolve/{rev}/{path...}` — `segs`
/// starts at the owner.
pub async fn resolve(req: &Req<'_>, kind: Option<RepoKind>, segs: &[&str]) -> Routed {
    routed(Route::HubResolve, resolve_file(req, kind, segs).await)
}

async fn resolve_file(
    req: &Req<'_>,
    kind: Option<RepoKind>,
    segs: &[&str],
) -> Result<Response, HubError> {
    if req.method != Method::GET && req.method != Method::HEAD {
        return Err(HubError::Method { allow: "GET, HEAD" });
    }
    if segs.len() < 5 {
        return Err(HubError::NotFound);
    }
    let id = paths::repo_id("repository id", segs[0], segs[1])?;
    let rev = revision(&segs[3..4])?;
    let path = paths::decode_join(&segs[4..])?;
    check_relative_path("file path", &path).map_err(paths::BadPath::from)?;
    let repo = super::repo(req, kind, &id)?;
    let snap = repo
        .resolve(&rev)
        .ok_or_else(|| revision_not_found(&repo.id, &rev))?;
    let file = snap.file(&path).ok_or_else(|| HubError::EntryNotFound {
        id: repo.id.clone(),
        path: path.clone(),
        commit: snap.commit.clone(),
    })?;
    let etag = format!("\"{}\"", file.etag());
    let mut extra = HeaderMap::new();
    extra.insert("x-repo-commit", header_text(&snap.commit));
    extra.insert("x-linked-etag", header_text(&etag));
    extra.insert("x-linked-size", HeaderValue::from(file.blob.size));
    // Held in Xet as on the Hub: `hf_xet` downloads it by its hash, from
    // the address the token route gives.
    if let Some(hash) = file
        .lfs
        .then(|| req.index.xet.hash_of(&file.blob.sha256))
        .flatten()
    {
        extra.insert("x-xet-hash", header_text(hash.as_str()));
        let plural = repo.kind.api_plural();
        let link = format!(
            "<{}/api/{plural}/{}/xet-read-token/{}>; rel=\"xet-auth\"",
            req.base_url(),
            repo.id,
            snap.commit
        );
        extra.insert(http::header::LINK, header_text(&link));
    }
    Ok(serve_blob(
        &req.state.store,
        &req.index,
        req.method,
        req.headers,
        BlobReply {
            blob: file.blob,
            etag,
            content_type: "application/octet-stream",
            extra,
        },
    )
    .await)
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
    if req.method != Method::GET && req.method != Method::HEAD {
        return routed(
            Route::HubManifests,
            Err(HubError::Method { allow: "GET, HEAD" }),
        );
    }
    // segs: owner, name, "manifests", tag
    if segs.len() != 4 || segs[2] != "manifests" {
        return routed(Route::NotFound, Err(HubError::NoRoute));
    }
    routed(Route::HubManifests, gguf_for_tag(req, segs))
}

fn gguf_for_tag(req: &Req<'_>, segs: &[&str]) -> Result<Response, HubError> {
    let id = paths::repo_id("repository id", segs[0], segs[1])?;
    let tag = paths::decode(segs[3])?;
    if tag.is_empty()
        || !tag
            .chars()
            .all(|c| c.is_ascii_alphanumeric() || "_-.".contains(c))
    {
        return Err(HubError::BadTag(tag));
    }
    let repo = super::repo(req, Some(RepoKind::Model), &id)?;
    let snap = repo
        .default_snapshot()
        .ok_or_else(|| revision_not_found(&repo.id, "main"))?;
    let ggufs: Vec<HubFile> = snap
        .files()
        .filter(|f| f.path.to_ascii_lowercase().ends_with(".gguf"))
        .collect();
    let (models, mmproj): (Vec<HubFile>, Vec<HubFile>) = ggufs
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
            .find(|f| first_shard(f) && has_quant(f.path, t))
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
        return Err(HubError::NoQuant {
            id: repo.id.clone(),
            tag,
            commit: snap.commit.clone(),
        });
    };
    let file_json = |f: &HubFile| {
        let mut v = json!({"rfilename": f.path, "size": f.blob.size, "blobId": f.git_oid});
        if f.lfs {
            v["lfs"] = lfs_sibling(f);
        }
        v
    };
    let mut v = json!({"ggufFile": file_json(&gguf)});
    if let Some(m) = mmproj.first() {
        v["mmprojFile"] = file_json(m);
    }
    let mut extra = HeaderMap::new();
    extra.insert("x-repo-commit", header_text(&snap.commit));
    Ok(respond::json_with(req.method, req.headers, &v, extra))
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
}
