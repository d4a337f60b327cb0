//! `GET /v1/index`: everything the store holds, with sha256s, sizes and
//! the mirror URL of each file, for the control plane to hand checksums
//! to nodes.
//!
//! Invariant: answered from the one index the request loaded (and the base
//! URL it was reached at), never from the server's state.

use axum::response::Response;
use http::{HeaderMap, Method};
use serde_json::{Value, json};

use crate::serve::http::paths::quote_path;
use crate::serve::http::respond;
use crate::serve::index::Index;

/// The answer for `ix`, its URLs under `base` (the mirror's base URL).
pub fn answer(ix: &Index, base: &str, method: &Method, headers: &HeaderMap) -> Response {
    let bundles: Vec<Value> = ix
        .bundles
        .iter()
        .map(|b| json!({"id": b.id, "created": b.created, "tool": b.tool, "arches": b.arches}))
        .collect();
    let releases: Vec<Value> = ix
        .releases
        .values()
        .map(|r| {
            let assets: Vec<Value> = r
                .assets
                .values()
                .map(|a| {
                    json!({
                        "name": a.name,
                        "size": a.blob.size,
                        "sha256": a.blob.sha256,
                        "url": format!("{base}/{}/releases/download/{}/{}", r.repo, quote_path(&r.tag), quote_path(&a.name)),
                    })
                })
                .collect();
            json!({"repo": r.repo, "tag": r.tag, "engine": r.engine, "version": r.version, "assets": assets})
        })
        .collect();
    let mut repos: Vec<(&_, &crate::serve::index::HubRepo)> =
        ix.repos.iter().map(|(k, r)| (k, &**r)).collect();
    repos.sort_by(|a, b| a.0.cmp(b.0));
    let repos: Vec<Value> = repos
        .into_iter()
        .map(|(_, repo)| {
            let prefix = repo.kind.url_prefix();
            let commits: Vec<Value> = repo
                .snapshots
                .values()
                .map(|s| {
                    let files: Vec<Value> = s
                        .files()
                        .map(|f| {
                            json!({
                                "path": f.path,
                                "size": f.blob.size,
                                "sha256": f.blob.sha256,
                                "git_oid": f.git_oid,
                                "lfs": f.lfs,
                                "url": format!("{base}/{prefix}{}/resolve/{}/{}", repo.id, s.commit, quote_path(f.path)),
                            })
                        })
                        .collect();
                    json!({"commit": s.commit, "last_modified": s.last_modified, "files": files})
                })
                .collect();
            json!({
                "type": repo.kind.singular(),
                "id": repo.id,
                "refs": repo.refs,
                "default_commit": repo.default_commit,
                "commits": commits,
            })
        })
        .collect();
    let v = json!({
        "bundles": bundles,
        "releases": releases,
        "repos": repos,
        "python_envs": python_envs_json(base, &ix.pypi),
        "images": images_json(ix),
        "charts": charts_json(base, ix),
        "blobs": {"count": ix.blob_count, "bytes": ix.blob_bytes},
    });
    respond::json(method, headers, &v)
}

/// The images held: each repository (with its registry) and its tags.
fn images_json(ix: &Index) -> Value {
    let repos: Vec<Value> = ix
        .oci
        .repos()
        .map(|r| {
            let tags: serde_json::Map<String, Value> = r
                .tags
                .iter()
                .map(|(t, d)| (t.clone(), format!("sha256:{d}").into()))
                .collect();
            json!({"registry": r.registry, "name": r.name, "tags": tags, "manifests": r.manifests.len(), "blobs": r.blobs.len()})
        })
        .collect();
    Value::Array(repos)
}

/// The charts held, with their package's sha256 and URL.
fn charts_json(base: &str, ix: &Index) -> Value {
    let charts: Vec<Value> = ix
        .oci
        .charts()
        .values()
        .flat_map(|v| v.values())
        .map(|c| {
            let file = format!("{}-{}.tgz", c.name, c.version);
            json!({
                "name": c.name,
                "version": c.version,
                "sha256": c.package.sha256,
                "size": c.package.size,
                "url": format!("{base}/charts/{}", quote_path(&file)),
            })
        })
        .collect();
    Value::Array(charts)
}

/// The environments held, for `/v1/index`: what each is, its size, what
/// its nodes need, and where its index, lock and interpreter are.
fn python_envs_json(base: &str, ix: &crate::serve::index::pypi::PypiIndex) -> serde_json::Value {
    use crate::serve::http::paths::quote_path;
    let envs: Vec<serde_json::Value> = ix
        .envs()
        .map(|e| {
            let at = format!("{base}/pypi/{}", quote_path(&e.name));
            serde_json::json!({
                "name": e.name,
                "bundle": e.bundle,
                "engine": e.engine,
                "version": e.version,
                "variant": e.variant,
                "arch": e.arch,
                "python": e.python,
                "platform": e.platform,
                "files": e.files.len(),
                "bytes": e.bytes,
                "os_packages": e.os_packages,
                "free_gb": e.free_gb,
                "note": e.note,
                "index_url": format!("{at}/simple/"),
                "lock_url": format!("{at}/{}", match e.site_lock.as_ref().map(|s| s.format) {
                    Some(llmgw_shared::manifest::SiteLockFormat::UvLock) => "uv.lock",
                    _ => "pylock.toml",
                }),
                "interpreter": e.interpreter.as_ref().map(|i| format!(
                    "{base}/{}/releases/download/{}/{}",
                    i.repo,
                    quote_path(&i.tag),
                    quote_path(&i.name)
                )),
            })
        })
        .collect();
    serde_json::Value::Array(envs)
}
