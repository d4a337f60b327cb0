//! GitHub releases, as installers and `gh`-style clients read them
//! (`protocols.md` §2):
//!
//! - `GET|HEAD /{owner}/{repo}/releases/download/{tag}/{name}` and
//!   `/releases/latest/download/{name}`: the bytes, 200 directly
//! - `GET /api/v3/repos/{owner}/{repo}/releases/tags/{tag}`, `/latest`,
//!   `/releases` (Link-paginated), `/releases/{id}`, `/releases/assets/{id}`
//!   (also without `/api/v3`, as on api.github.com)
//!
//! Every URL in the JSON points back at this mirror.

pub mod error;
pub mod graphql;
pub mod graphql_parse;

use axum::response::Response;
use http::{HeaderMap, Method, header};
use llmgw_shared::{check_file_name, check_ref_name};
use serde_json::{Value, json};

use super::index::{AssetEntry, ReleaseEntry};
use super::request::Req;
use super::route::{Route, Routed, routed};
use crate::serve::http::paths::{self, BadPath, quote_path};
use crate::serve::http::respond::{self, header_text};
use error::GithubError;

fn tag_of(raw: &[&str]) -> Result<String, BadPath> {
    let tag = paths::decode_join(raw)?;
    check_ref_name("release tag", &tag)?;
    Ok(tag)
}

fn asset_json(base: &str, rel: &ReleaseEntry, a: &AssetEntry) -> Value {
    json!({
        "url": format!("{base}/api/v3/repos/{}/releases/assets/{}", rel.repo, a.id),
        "id": a.id,
        "node_id": format!("RA_llmgw{}", a.id),
        "name": a.name,
        "label": null,
        "uploader": uploader(),
        "content_type": a.content_type.as_deref().unwrap_or("application/octet-stream"),
        "state": "uploaded",
        "size": a.blob.size,
        "digest": format!("sha256:{}", a.blob.sha256),
        "download_count": 0,
        "created_at": rel.created,
        "updated_at": rel.created,
        "browser_download_url": format!(
            "{base}/{}/releases/download/{}/{}",
            rel.repo,
            quote_path(&rel.tag),
            quote_path(&a.name)
        ),
    })
}

fn uploader() -> Value {
    json!({"login": "llmgw-mirror", "id": 0, "node_id": "", "type": "Bot", "site_admin": false})
}

fn release_json(base: &str, rel: &ReleaseEntry) -> Value {
    let api = format!("{base}/api/v3/repos/{}/releases/{}", rel.repo, rel.id);
    json!({
        "url": api,
        "html_url": format!("{base}/{}/releases/tag/{}", rel.repo, quote_path(&rel.tag)),
        "assets_url": format!("{api}/assets"),
        "upload_url": format!("{api}/assets{{?name,label}}"),
        "tarball_url": null,
        "zipball_url": null,
        "id": rel.id,
        "node_id": format!("RE_llmgw{}", rel.id),
        "tag_name": rel.tag,
        "target_commitish": rel.tag,
        "name": rel.tag,
        "body": format!("{} {} ({}), mirrored by llmgw", rel.engine, rel.version, rel.repo),
        "draft": false,
        "prerelease": false,
        "immutable": true,
        "created_at": rel.created,
        "published_at": rel.created,
        "author": uploader(),
        "assets": rel.assets.values().map(|a| asset_json(base, rel, a)).collect::<Vec<_>>(),
    })
}

async fn send_asset(req: &Req<'_>, a: &AssetEntry) -> Response {
    let mut extra = HeaderMap::new();
    extra.insert(
        header::CONTENT_DISPOSITION,
        header_text(&format!(
            "attachment; filename*=UTF-8''{}",
            quote_path(&a.name).replace('/', "%2F")
        )),
    );
    let content_type = a
        .content_type
        .as_deref()
        .unwrap_or("application/octet-stream");
    req.send_by_sha256(&a.blob, content_type, extra).await
}

fn get_or_head(req: &Req<'_>) -> Result<(), GithubError> {
    if req.method != Method::GET && req.method != Method::HEAD {
        return Err(GithubError::Method);
    }
    Ok(())
}

/// `/{owner}/{repo}/releases/download/{tag...}/{name}` and
/// `/{owner}/{repo}/releases/latest/download/{name}` — `segs` is the whole path.
pub async fn download(req: &Req<'_>, segs: &[&str]) -> Routed {
    routed(Route::GithubDownload, download_asset(req, segs).await)
}

async fn download_asset(req: &Req<'_>, segs: &[&str]) -> Result<Response, GithubError> {
    get_or_head(req)?;
    let id = paths::repo_id("repository", segs[0], segs[1])?;
    let (tag, name_raw) = if segs[3] == "latest" {
        if segs.len() != 6 || segs[4] != "download" {
            return Err(GithubError::NotFound);
        }
        (None, segs[5])
    } else {
        if segs.len() < 6 {
            return Err(GithubError::NotFound);
        }
        (
            Some(tag_of(&segs[4..segs.len() - 1])?),
            segs[segs.len() - 1],
        )
    };
    let name = paths::decode(name_raw)?;
    check_file_name("asset name", &name).map_err(BadPath::from)?;
    let rel = match &tag {
        Some(t) => req.index.release(&id, t),
        None => req.index.releases_of(&id).first().copied(),
    };
    match rel.and_then(|r| r.assets.get(&name)) {
        Some(a) => Ok(send_asset(req, a).await),
        None => Err(GithubError::NoAsset),
    }
}

/// `/api/v3/repos/{owner}/{repo}/releases...` — `segs` starts at the owner.
pub async fn api(req: &Req<'_>, segs: &[&str], request_path: &str) -> Routed {
    if segs.len() < 3 || segs[2] != "releases" {
        return routed(Route::NotFound, Err(GithubError::NotFound));
    }
    let route = match &segs[3..] {
        [] => Route::GithubReleases,
        ["latest"] => Route::GithubLatest,
        ["tags", ..] => Route::GithubRelease,
        ["assets", _] => Route::GithubAsset,
        [_] | [_, "assets"] => Route::GithubRelease,
        _ => return routed(Route::NotFound, Err(GithubError::NotFound)),
    };
    routed(route, answer(req, segs, request_path).await)
}

async fn answer(req: &Req<'_>, segs: &[&str], request_path: &str) -> Result<Response, GithubError> {
    get_or_head(req)?;
    let id = paths::repo_id("repository", segs[0], segs[1])?;
    let rest = &segs[3..];
    let base = req.base_url();
    let all = req.index.releases_of(&id);
    match rest {
        [] => Ok(release_list(req, &all, &base, request_path)),
        ["latest"] => {
            let r = all.first().ok_or(GithubError::NotFound)?;
            Ok(respond::json(
                req.method,
                req.headers,
                &release_json(&base, r),
            ))
        }
        ["tags", tag @ ..] => {
            let tag = tag_of(tag)?;
            let r = req.index.release(&id, &tag).ok_or(GithubError::NotFound)?;
            Ok(respond::json(
                req.method,
                req.headers,
                &release_json(&base, r),
            ))
        }
        ["assets", aid] => asset(req, &all, &base, aid).await,
        [rid, more @ ..] => {
            let rel = rid
                .parse::<u64>()
                .ok()
                .and_then(|n| all.iter().find(|r| r.id == n))
                .ok_or(GithubError::NotFound)?;
            let v = if more.is_empty() {
                release_json(&base, rel)
            } else {
                Value::Array(
                    rel.assets
                        .values()
                        .map(|a| asset_json(&base, rel, a))
                        .collect(),
                )
            };
            Ok(respond::json(req.method, req.headers, &v))
        }
    }
}

/// `/releases`: one page of the releases held, newest first, with GitHub's
/// `Link` header to the others.
fn release_list(req: &Req<'_>, all: &[&ReleaseEntry], base: &str, request_path: &str) -> Response {
    let num = |k: &str, d: usize| {
        paths::query_get(&req.query, k)
            .and_then(|v| v.parse::<usize>().ok())
            .unwrap_or(d)
    };
    let per_page = num("per_page", 30).clamp(1, 100);
    let page = num("page", 1).max(1);
    let pages = all.len().div_ceil(per_page).max(1);
    let items: Vec<Value> = all
        .iter()
        .skip((page - 1).saturating_mul(per_page))
        .take(per_page)
        .map(|r| release_json(base, r))
        .collect();
    let link_to = |p: usize, rel: &str| {
        format!("<{base}{request_path}?per_page={per_page}&page={p}>; rel=\"{rel}\"")
    };
    let mut links = Vec::new();
    if page > 1 {
        links.push(link_to(page - 1, "prev"));
        links.push(link_to(1, "first"));
    }
    if page < pages {
        links.push(link_to(page + 1, "next"));
        links.push(link_to(pages, "last"));
    }
    let mut extra = HeaderMap::new();
    if !links.is_empty() {
        extra.insert(header::LINK, header_text(&links.join(", ")));
    }
    respond::json_with(req.method, req.headers, &Value::Array(items), extra)
}

/// `/releases/assets/{id}`: the asset's JSON, or its bytes when asked for
/// `application/octet-stream`.
async fn asset(
    req: &Req<'_>,
    all: &[&ReleaseEntry],
    base: &str,
    aid: &str,
) -> Result<Response, GithubError> {
    let (rel, asset) = aid
        .parse::<u64>()
        .ok()
        .and_then(|n| {
            all.iter()
                .find_map(|r| r.assets.values().find(|a| a.id == n).map(|a| (*r, a)))
        })
        .ok_or(GithubError::NotFound)?;
    let wants_bytes = req
        .headers
        .get(header::ACCEPT)
        .and_then(|v| v.to_str().ok())
        .is_some_and(|v| v.contains("application/octet-stream"));
    if wants_bytes {
        Ok(send_asset(req, asset).await)
    } else {
        let v = asset_json(base, rel, asset);
        Ok(respond::json(req.method, req.headers, &v))
    }
}
