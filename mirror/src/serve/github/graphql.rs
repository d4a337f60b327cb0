//! GitHub's GraphQL endpoint (`POST /api/graphql` on an Enterprise host,
//! `/graphql` on an API host), for what `gh` asks about releases: `gh
//! release view TAG` and `download TAG` race `RepositoryReleaseByTag`
//! against the REST lookup, and `gh release list` sends only
//! `RepositoryReleaseList`.
//!
//! Invariant: every answer comes from the held index, and every field asked
//! is either answered from it or the whole query is refused with GitHub's
//! error shape (`200`, `{"errors": [...]}` naming the field and where it
//! is), so a client never reads a value the mirror made up. Held releases
//! are never drafts or prereleases. A repository with no held release does
//! not exist here (`NOT_FOUND`, as GitHub says it).

use http::HeaderMap;
use llmgw_shared::check_repo_id;
use serde_json::{Map, Value as Json, json};

use crate::serve::github::graphql_parse::{self, Field, Value};
use crate::serve::http::paths::quote_path;
use crate::serve::http::respond;
use crate::serve::index::{AssetEntry, ReleaseEntry};
use crate::serve::request::Req;
use crate::serve::route::{Route, Routed};

/// Most items one connection page gives, as GitHub.
const MAX_FIRST: i64 = 100;

/// One error in GitHub's GraphQL shape.
struct GqlError(Json);

fn error_at(f: &Field, path: &[String], message: String, extensions: Json) -> GqlError {
    GqlError(json!({
        "path": path,
        "extensions": extensions,
        "locations": [{"line": f.line, "column": f.column}],
        "message": message,
    }))
}

fn undefined(f: &Field, path: &[String], type_name: &str) -> GqlError {
    error_at(
        f,
        path,
        format!(
            "Field '{}' doesn't exist on type '{type_name}' (this mirror answers only what it \
             holds about releases)",
            f.name.chars().take(64).collect::<String>()
        ),
        json!({"code": "undefinedField", "typeName": type_name, "fieldName": f.name}),
    )
}

/// What resolving needs: the request (index, base URL) and the variables.
struct Ctx<'a, 'r> {
    req: &'a Req<'r>,
    vars: &'a Map<String, Json>,
    base: String,
}

impl Ctx<'_, '_> {
    /// An argument's value, variables resolved, as JSON.
    fn arg(&self, f: &Field, name: &str) -> Json {
        match f.arg(name) {
            Some(v) => self.value(v),
            None => Json::Null,
        }
    }

    fn value(&self, v: &Value) -> Json {
        match v {
            Value::Var(n) => self.vars.get(n).cloned().unwrap_or(Json::Null),
            Value::Str(s) | Value::Enum(s) => Json::String(s.clone()),
            Value::Int(n) => json!(n),
            Value::Bool(b) => json!(b),
            Value::Null => Json::Null,
            Value::Obj(kv) => {
                Json::Object(kv.iter().map(|(k, v)| (k.clone(), self.value(v))).collect())
            }
            Value::List(items) => Json::Array(items.iter().map(|v| self.value(v)).collect()),
        }
    }
}

/// `POST /api/graphql`: the body is `{"query": ..., "variables": ...}`.
pub fn answer(req: &Req<'_>, body: &[u8]) -> Routed {
    let route = Route::GithubGraphql;
    let reply = |v: Json| (route, respond::json(req.method, &HeaderMap::new(), &v));
    let problem = |message: String| reply(json!({"errors": [{"message": message}]}));
    let parsed: Json = match serde_json::from_slice(body) {
        Ok(v) => v,
        Err(e) => return problem(format!("Problems parsing JSON: {e}")),
    };
    let Some(query) = parsed.get("query").and_then(Json::as_str) else {
        return problem("A query attribute must be specified and must be a string.".into());
    };
    let empty = Map::new();
    let vars = parsed
        .get("variables")
        .and_then(Json::as_object)
        .unwrap_or(&empty);
    let op = match graphql_parse::parse(query) {
        Ok(op) => op,
        Err(e) => {
            return reply(json!({"errors": [{
                "message": e.message,
                "locations": [{"line": e.line, "column": e.column}],
            }]}));
        }
    };
    if op.mutation {
        return problem("This mirror is read-only: mutations are not served.".into());
    }
    let ctx = Ctx {
        req,
        vars,
        base: req.base_url(),
    };
    let mut errors = Vec::new();
    let mut data = Map::new();
    for f in &op.selection {
        let path = vec![f.key().to_string()];
        match f.name.as_str() {
            "__typename" => {
                data.insert(f.key().into(), json!("Query"));
            }
            "repository" => match repository(&ctx, f, &path) {
                Ok(v) => {
                    data.insert(f.key().into(), v);
                }
                Err(GqlError(e)) if e["type"] == "NOT_FOUND" => {
                    data.insert(f.key().into(), Json::Null);
                    errors.push(e);
                }
                Err(GqlError(e)) => return reply(json!({"errors": [e]})),
            },
            _ => {
                let GqlError(e) = undefined(f, &path, "Query");
                return reply(json!({"errors": [e]}));
            }
        }
    }
    let mut out = json!({"data": data});
    if !errors.is_empty() {
        out["errors"] = Json::Array(errors);
    }
    reply(out)
}

fn repository(ctx: &Ctx<'_, '_>, f: &Field, path: &[String]) -> Result<Json, GqlError> {
    let owner = ctx.arg(f, "owner");
    let name = ctx.arg(f, "name");
    let (Some(owner), Some(name)) = (owner.as_str(), name.as_str()) else {
        return Err(error_at(
            f,
            path,
            "repository needs the string arguments owner and name".into(),
            json!({"code": "missingRequiredArguments"}),
        ));
    };
    let id = format!("{owner}/{name}");
    let releases = if check_repo_id("repository", &id).is_ok() {
        ctx.req.index.releases_of(&id)
    } else {
        Vec::new()
    };
    let Some(first) = releases.first() else {
        let shown: String = id.chars().filter(|c| !c.is_control()).take(200).collect();
        let mut e = error_at(
            f,
            path,
            format!("Could not resolve to a Repository with the name '{shown}'."),
            Json::Null,
        );
        e.0["type"] = json!("NOT_FOUND");
        if let Some(o) = e.0.as_object_mut() {
            o.remove("extensions");
        }
        return Err(e);
    };
    // The name as held (GitHub answers with the canonical case).
    let repo = first.repo.clone();
    let mut out = Map::new();
    for s in &f.selection {
        let p = child(path, s);
        let v = match s.name.as_str() {
            "__typename" => json!("Repository"),
            "id" => json!(format!(
                "R_llmgw{}",
                crate::serve::index::stable_id(&[&repo])
            )),
            "name" => json!(repo.split('/').nth(1).unwrap_or("")),
            "nameWithOwner" => json!(repo),
            "url" => json!(format!("{}/{repo}", ctx.base)),
            "owner" => owner_json(s, &p, repo.split('/').next().unwrap_or(""))?,
            "release" => {
                let tag = ctx.arg(s, "tagName");
                let found = tag
                    .as_str()
                    .and_then(|t| releases.iter().find(|r| r.tag == t));
                match found {
                    Some(r) => release(ctx, s, &p, r, r.id == first.id)?,
                    None => Json::Null,
                }
            }
            "latestRelease" => release(ctx, s, &p, first, true)?,
            "releases" => {
                let mut list = releases.clone();
                let order = ctx.arg(s, "orderBy");
                if order["field"] == "NAME" {
                    list.sort_by(|a, b| b.tag.cmp(&a.tag));
                }
                if order["direction"] == "ASC" {
                    list.reverse();
                }
                connection(ctx, s, &p, &list, |ctx, n, p, r| {
                    release(ctx, n, p, r, r.id == first.id)
                })?
            }
            _ => return Err(undefined(s, &p, "Repository")),
        };
        out.insert(s.key().into(), v);
    }
    Ok(Json::Object(out))
}

fn child(path: &[String], f: &Field) -> Vec<String> {
    let mut p = path.to_vec();
    p.push(f.key().to_string());
    p
}

fn owner_json(f: &Field, path: &[String], login: &str) -> Result<Json, GqlError> {
    let mut out = Map::new();
    for s in &f.selection {
        let v = match s.name.as_str() {
            "__typename" => json!("Organization"),
            "login" => json!(login),
            _ => return Err(undefined(s, &child(path, s), "RepositoryOwner")),
        };
        out.insert(s.key().into(), v);
    }
    Ok(Json::Object(out))
}

fn release(
    ctx: &Ctx<'_, '_>,
    f: &Field,
    path: &[String],
    r: &ReleaseEntry,
    latest: bool,
) -> Result<Json, GqlError> {
    let mut out = Map::new();
    for s in &f.selection {
        let p = child(path, s);
        let v = match s.name.as_str() {
            "__typename" => json!("Release"),
            "id" => json!(format!("RE_llmgw{}", r.id)),
            "databaseId" => json!(r.id),
            "name" | "tagName" => json!(r.tag),
            "isDraft" | "isPrerelease" => json!(false),
            "isLatest" => json!(latest),
            "createdAt" | "publishedAt" | "updatedAt" => json!(r.created),
            "description" => json!(format!(
                "{} {} ({}), mirrored by llmgw",
                r.engine, r.version, r.repo
            )),
            "url" => json!(format!(
                "{}/{}/releases/tag/{}",
                ctx.base,
                r.repo,
                quote_path(&r.tag)
            )),
            "releaseAssets" => {
                let assets: Vec<&AssetEntry> = r.assets.values().collect();
                connection(ctx, s, &p, &assets, |ctx, n, p, a| asset(ctx, n, p, r, a))?
            }
            _ => return Err(undefined(s, &p, "Release")),
        };
        out.insert(s.key().into(), v);
    }
    Ok(Json::Object(out))
}

fn asset(
    ctx: &Ctx<'_, '_>,
    f: &Field,
    path: &[String],
    r: &ReleaseEntry,
    a: &AssetEntry,
) -> Result<Json, GqlError> {
    let mut out = Map::new();
    for s in &f.selection {
        let v = match s.name.as_str() {
            "__typename" => json!("ReleaseAsset"),
            "id" => json!(format!("RA_llmgw{}", a.id)),
            "databaseId" => json!(a.id),
            "name" => json!(a.name),
            "size" => json!(a.blob.size),
            "contentType" => json!(
                a.content_type
                    .as_deref()
                    .unwrap_or("application/octet-stream")
            ),
            "downloadCount" => json!(0),
            "createdAt" | "updatedAt" => json!(r.created),
            "downloadUrl" | "url" => json!(format!(
                "{}/{}/releases/download/{}/{}",
                ctx.base,
                r.repo,
                quote_path(&r.tag),
                quote_path(&a.name)
            )),
            _ => return Err(undefined(s, &child(path, s), "ReleaseAsset")),
        };
        out.insert(s.key().into(), v);
    }
    Ok(Json::Object(out))
}

/// A GitHub connection (`first`, `after`) over `items`: `nodes`, `edges`,
/// `pageInfo`, `totalCount`. Cursors are the offset of the next item.
fn connection<T>(
    ctx: &Ctx<'_, '_>,
    f: &Field,
    path: &[String],
    items: &[T],
    node: impl Fn(&Ctx<'_, '_>, &Field, &[String], &T) -> Result<Json, GqlError>,
) -> Result<Json, GqlError> {
    let (start, first) = page_asked(ctx, f, path)?;
    let page: Vec<(usize, &T)> = items.iter().enumerate().skip(start).take(first).collect();
    let end = start + page.len();
    let mut out = Map::new();
    for s in &f.selection {
        let p = child(path, s);
        let v = match s.name.as_str() {
            "__typename" => json!("Connection"),
            "totalCount" => json!(items.len()),
            "nodes" => Json::Array(
                page.iter()
                    .map(|(_, it)| node(ctx, s, &p, it))
                    .collect::<Result<_, _>>()?,
            ),
            "edges" => edges(ctx, s, &p, &page, &node)?,
            "pageInfo" => page_info(s, &p, start, end, items.len())?,
            _ => return Err(undefined(s, &p, "Connection")),
        };
        out.insert(s.key().into(), v);
    }
    Ok(Json::Object(out))
}

/// The page a connection field asks for: where it starts (after its
/// `after` cursor) and how many (its `first`, required and bounded).
fn page_asked(ctx: &Ctx<'_, '_>, f: &Field, path: &[String]) -> Result<(usize, usize), GqlError> {
    let Some(first) = ctx.arg(f, "first").as_i64() else {
        return Err(error_at(
            f,
            path,
            format!(
                "You must provide a `first` value to properly paginate the `{}` connection \
                 (this mirror does not serve `last`).",
                f.name
            ),
            json!({"code": "argumentLimit"}),
        ));
    };
    if !(0..=MAX_FIRST).contains(&first) {
        return Err(error_at(
            f,
            path,
            format!(
                "Requesting {first} records on the `{}` connection exceeds the `first` limit of \
                 {MAX_FIRST} records.",
                f.name
            ),
            json!({"code": "argumentLimit"}),
        ));
    }
    let start = match ctx.arg(f, "after") {
        Json::String(c) => c
            .strip_prefix("cursor:")
            .and_then(|n| n.parse::<usize>().ok())
            .ok_or_else(|| {
                error_at(
                    f,
                    path,
                    "`after` is not a cursor this mirror gave".into(),
                    json!({"code": "badCursor"}),
                )
            })?,
        _ => 0,
    };
    // In 0..=MAX_FIRST, checked above.
    Ok((start, first as usize))
}

/// A connection's `edges`: each item of the page with its cursor, the
/// fields `s` selects of it.
fn edges<T>(
    ctx: &Ctx<'_, '_>,
    s: &Field,
    p: &[String],
    page: &[(usize, &T)],
    node: &impl Fn(&Ctx<'_, '_>, &Field, &[String], &T) -> Result<Json, GqlError>,
) -> Result<Json, GqlError> {
    let mut edges = Vec::new();
    for (i, it) in page {
        let mut e = Map::new();
        for x in &s.selection {
            let v = match x.name.as_str() {
                "cursor" => json!(format!("cursor:{}", i + 1)),
                "node" => node(ctx, x, &child(p, x), it)?,
                _ => return Err(undefined(x, &child(p, x), "Edge")),
            };
            e.insert(x.key().into(), v);
        }
        edges.push(Json::Object(e));
    }
    Ok(Json::Array(edges))
}

/// A connection's `pageInfo` for the page `start..end` of `total` items.
fn page_info(
    s: &Field,
    p: &[String],
    start: usize,
    end: usize,
    total: usize,
) -> Result<Json, GqlError> {
    let mut pi = Map::new();
    for x in &s.selection {
        let v = match x.name.as_str() {
            "hasNextPage" => json!(end < total),
            "hasPreviousPage" => json!(start > 0),
            "endCursor" => json!(format!("cursor:{end}")),
            "startCursor" => json!(format!("cursor:{start}")),
            _ => return Err(undefined(x, &child(p, x), "PageInfo")),
        };
        pi.insert(x.key().into(), v);
    }
    Ok(Json::Object(pi))
}

/// The answer for another method on the GraphQL path.
pub fn not_post() -> Routed {
    (Route::GithubGraphql, respond::method_not_allowed("POST"))
}
