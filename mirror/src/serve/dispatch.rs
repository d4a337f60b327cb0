//! The entry handler: every request comes here, is split into raw path
//! segments and sent to the route that answers it.
//!
//! Invariant: the probes and `/metrics` answer without the token and
//! before the store is read; every other route answers only once the store
//! was read, from the one index loaded for the request; HEAD answers GET's
//! headers exactly, on every route ([`headers_only`]). Nothing here
//! touches the filesystem.

use std::sync::Arc;

use axum::extract::Request;
use axum::response::Response;
use http::{HeaderValue, Method, StatusCode, header};

use super::github::{self, graphql, graphql_parse};
use super::http::{paths, respond};
use super::ops::metrics::RouteLabel;
use super::ops::{metrics, track, v1_index};
use super::refresh::CHECK_EVERY;
use super::request::Req;
use super::route::{Route, Routed};
use super::state::{AppState, Readiness};
use super::{auth, cache_key, hub, oci, pypi};

/// Largest `paths-info` form accepted.
const MAX_FORM_BYTES: usize = 1024 * 1024;

/// `/readyz`: 200 once the store was read (saying what it holds, and so
/// that an empty store is empty), else 503 with why not.
fn readyz(state: &AppState) -> Response {
    let store = state.store.root().display();
    match state.readiness() {
        Readiness::Ready { bundles: 0 } => respond::text(
            StatusCode::OK,
            format!(
                "ready: the store {store} holds no bundles yet; import one with `llmgw bundle \
                 import BUNDLE --store {store}` (served without a restart)\n"
            ),
        ),
        Readiness::Ready { bundles } => {
            let noun = if bundles == 1 { "bundle" } else { "bundles" };
            respond::text(StatusCode::OK, format!("ready: {bundles} {noun}\n"))
        }
        Readiness::Reading => {
            respond::text(StatusCode::SERVICE_UNAVAILABLE, "the store is being read\n")
        }
        Readiness::HashingModels => respond::text(
            StatusCode::SERVICE_UNAVAILABLE,
            "the models' images are being hashed (bundles imported before import recorded \
             their layer digests): /v2/models/... answers NAME_UNKNOWN for them until then\n",
        ),
        Readiness::Failing(why) => respond::text(
            StatusCode::SERVICE_UNAVAILABLE,
            format!(
                "the store cannot be read: {why}; trying again every {} ms\n",
                CHECK_EVERY.as_millis()
            ),
        ),
    }
}

/// `GET /-/misses`: the want-list of every replica sharing the store (their
/// saved files, read on the blocking pool) merged with this server's own
/// misses, which may be newer than its file.
async fn misses(r: &Req<'_>) -> Response {
    if r.method != Method::GET && r.method != Method::HEAD {
        return respond::method_not_allowed("GET, HEAD");
    }
    let state_dir = r.state.store.state_dir();
    let own = super::misses::file_name(&r.state.instance);
    let others = tokio::task::spawn_blocking(move || {
        let mut all = super::misses::read_all_but(&state_dir, &own);
        std::mem::take(&mut all.misses)
    })
    .await
    .unwrap_or_default();
    let list = super::misses::WantList::merge([others, r.state.misses.misses()]);
    let value = serde_json::to_value(&list).unwrap_or_default();
    let mut resp = respond::json(r.method, r.headers, &value);
    // Misses change without a new index: never kept in the answer cache.
    resp.extensions_mut().remove::<respond::CachedJson>();
    resp
}

/// `GET /-/env`: the settings a node uses for what this mirror serves,
/// at the URL the client reached it by.
fn node_env(r: &Req<'_>) -> Response {
    if r.method != Method::GET && r.method != Method::HEAD {
        return respond::method_not_allowed("GET, HEAD");
    }
    let holds = super::node::Holds::of_index(&r.index);
    let env = super::node::node_env(&holds, &r.base_url());
    respond::json(
        r.method,
        r.headers,
        &serde_json::to_value(&env).unwrap_or_default(),
    )
}

pub(super) async fn entry(state: Arc<AppState>, req: Request) -> Response {
    let tracker = track::Tracker::start(&state.metrics, req.method(), req.uri());
    let ns = super::misses::registry_of(req.uri().query());
    let head = req.method() == Method::HEAD;
    let (route, resp) = dispatch(&state, req).await;
    if let Some(hub::NodeMiss(what)) = resp.extensions().get::<hub::NodeMiss>() {
        // A listing answered, but nothing in it loads on the node.
        state.misses.record("hub_kernel_build", what, unix_now());
    }
    if resp.status() == StatusCode::NOT_FOUND && route.counts_misses() {
        let what = super::misses::with_registry(route, tracker.path(), ns.as_deref());
        state.misses.record(route.label(), &what, unix_now());
        state
            .metrics
            .misses
            .get_or_create(&RouteLabel { route })
            .inc();
    }
    tracker.finish(route, if head { headers_only(resp) } else { resp })
}

fn unix_now() -> u64 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |d| d.as_secs())
}

/// HEAD answers exactly GET's headers, on every route: a route answers
/// HEAD as it answers GET (or with GET's headers and no body, where the
/// body would cost a read), and here a body it built anyway becomes its
/// `Content-Length` and is dropped, never sent. (Left to itself, the HTTP
/// layer would send `Content-Length: 0` for a body emptied by the route.)
fn headers_only(mut resp: Response) -> Response {
    use http_body::Body as _;
    let h = resp.headers();
    if !h.contains_key(header::CONTENT_LENGTH)
        && !h.contains_key(header::TRANSFER_ENCODING)
        && let Some(n) = resp.body().size_hint().exact()
        && !matches!(
            resp.status(),
            StatusCode::NOT_MODIFIED | StatusCode::NO_CONTENT
        )
    {
        resp.headers_mut()
            .insert(header::CONTENT_LENGTH, HeaderValue::from(n));
    }
    *resp.body_mut() = axum::body::Body::empty();
    resp
}

async fn dispatch(state: &Arc<AppState>, req: Request) -> Routed {
    let (parts, body) = req.into_parts();
    let raw_path = parts.uri.path();
    if let Err(e) = paths::check_length(raw_path) {
        return (
            Route::BadRequest,
            respond::text(StatusCode::URI_TOO_LONG, format!("{e}\n")),
        );
    }
    // The probes are one segment each: told apart without splitting the
    // path, which only a request the cache does not answer needs.
    match raw_path.strip_prefix('/').unwrap_or(raw_path) {
        "healthz" => return (Route::Healthz, respond::text(StatusCode::OK, "ok\n")),
        "readyz" => return (Route::Readyz, readyz(state)),
        "metrics" => {
            return (
                Route::Metrics,
                metrics::answer(&state.metrics, &state.registry),
            );
        }
        _ => {}
    }
    // Probes and metrics above stay open: the kubelet and Prometheus
    // scrape them without the token.
    // A Xet xorb URL the mirror signed is its own capability: the client
    // fetches xorbs without its token, as from the Hub's storage.
    if let Some(expected) = &state.token_sha256
        && !auth::authorized(expected, &parts.headers)
        && !super::xet::signed_xorb_url(expected, raw_path, parts.uri.query())
    {
        let mut r = respond::hub_error(
            StatusCode::UNAUTHORIZED,
            None,
            "Invalid credentials in Authorization header: this mirror needs its bearer token",
            None,
        );
        r.headers_mut().insert(
            header::WWW_AUTHENTICATE,
            HeaderValue::from_static("Bearer realm=\"llmgw mirror\""),
        );
        return (Route::Unauthorized, r);
    }
    let query = paths::query_pairs(parts.uri.query());
    let r = Req {
        state,
        index: state.index(),
        method: &parts.method,
        headers: &parts.headers,
        query,
        authority: parts.uri.authority().map(|a| a.as_str()),
    };
    if !state.is_ready() {
        return (Route::NotReady, readyz(state));
    }
    // A JSON answer built before from the same index is sent as it is,
    // under the route that built it.
    let cache_key = (r.method == Method::GET || r.method == Method::HEAD)
        .then(|| cache_key::Key::of(raw_path, &r.query, r.base_url_parts(), r.headers));
    if let Some(key) = &cache_key
        && let Some((route, hit)) = state.json_cache.get_key(&r.index, key)
    {
        return (route, respond::reply(r.method, r.headers, &hit));
    }
    // Missed: the key as text, to wait for a build under and keep by.
    let cache_key = cache_key.map(|k| k.text());
    let segs = paths::split(raw_path);
    // One build per key: wait for a request already building it, and take
    // what it built.
    let _flight = match &cache_key {
        Some(key) if builds_json(&segs) => {
            let flight = state.json_cache.join_flight(key).await;
            if let Some((route, hit)) = state.json_cache.get(&r.index, key) {
                return (route, respond::reply(r.method, r.headers, &hit));
            }
            Some(flight)
        }
        _ => None,
    };
    let (route, mut resp) = route(&r, &segs, raw_path, body).await;
    if let Some(built) = resp.extensions_mut().remove::<respond::CachedJson>()
        && let Some(key) = cache_key
    {
        state
            .metrics
            .json_builds
            .get_or_create(&RouteLabel { route })
            .inc();
        state.json_cache.put(&r.index, key, route, built);
    }
    (route, resp)
}

async fn route(r: &Req<'_>, segs: &[&str], raw_path: &str, body: axum::body::Body) -> Routed {
    match segs {
        ["-", "misses"] => (Route::Misses, misses(r).await),
        ["-", "env"] => (Route::Env, node_env(r)),
        ["-", "bundles", id, "sbom.cdx.json"] => {
            (Route::BundleSbom, super::sbom::sbom(r, id).await)
        }
        ["-", "bundles", id, "evidence", name] => (
            Route::BundleEvidence,
            super::sbom::evidence(r, id, name).await,
        ),
        ["-", "xet", rest @ ..] => super::xet::xet(r, rest).await,
        [] | [""] | ["-", ..] => super::front::answer(r, segs),
        ["v1", "index"] => v1_index(r, segs).await,
        ["api", "agent-harnesses", ..] => (
            Route::AgentHarnesses,
            respond::hub_error(StatusCode::NOT_FOUND, None, "not served by a mirror", None),
        ),
        ["api", "graphql"] | ["graphql"] => graphql_post(r, body).await,
        ["api", "v3", "repos", rest @ ..] | ["repos", rest @ ..] => {
            github::api(r, rest, raw_path).await
        }
        ["api", plural, ..] => hub_api(r, segs, plural, body).await,
        ["v2", rest @ ..] if oci::is_hub_gguf(&r.index, rest, r.headers) => hub::manifests(r, rest),
        ["v2", rest @ ..] => oci::v2(r, rest, raw_path).await,
        ["charts", rest @ ..] => oci::charts(r, rest).await,
        ["pypi", rest @ ..]
            if matches!(
                rest.get(1),
                Some(&("simple" | "files" | "pylock.toml" | "uv.lock" | "pyproject.toml"))
            ) =>
        {
            pypi::pypi(r, rest).await
        }
        ["uv", "python-downloads.json"] => pypi::python_downloads(r),
        ["extras", host, path @ ..] => (
            Route::Extras,
            super::node::extras::extra(r, host, path).await,
        ),
        [_, _, "releases", "download" | "latest", ..] => github::download(r, segs).await,
        [prefix @ ("datasets" | "spaces" | "kernels"), rest @ ..]
            if rest.get(2) == Some(&"resolve") =>
        {
            let kind = hub::kind_of(prefix).flatten();
            hub::resolve(r, kind, rest).await
        }
        [_, _, "resolve", ..] => {
            hub::resolve(r, Some(llmgw_shared::manifest::RepoKind::Model), segs).await
        }
        _ => (
            Route::NotFound,
            respond::text(StatusCode::NOT_FOUND, "not found\n"),
        ),
    }
}

/// `/v1/index`: everything held, built on the blocking pool (GET, HEAD).
async fn v1_index(r: &Req<'_>, segs: &[&str]) -> Routed {
    if r.method != Method::GET && r.method != Method::HEAD {
        return (Route::Index, respond::method_not_allowed("GET, HEAD"));
    }
    let built = r
        .build_blocking(segs, |r, _| {
            v1_index::answer(&r.index, &r.base_url(), r.method, r.headers)
        })
        .await;
    (Route::Index, built.unwrap_or_else(build_failed))
}

/// GitHub's GraphQL endpoint: a POST whose body is read under its bound.
async fn graphql_post(r: &Req<'_>, body: axum::body::Body) -> Routed {
    if r.method != Method::POST {
        return graphql::not_post();
    }
    match axum::body::to_bytes(body, graphql_parse::MAX_QUERY_BYTES * 2).await {
        Ok(b) => graphql::answer(r, &b),
        Err(_) => (
            Route::GithubGraphql,
            respond::text(
                StatusCode::PAYLOAD_TOO_LARGE,
                "the GraphQL request is larger than 64 KiB\n",
            ),
        ),
    }
}

/// The Hub's `/api/<plural>/…`, built on the blocking pool; a POST's form
/// (paths-info) read first, under its bound.
async fn hub_api(r: &Req<'_>, segs: &[&str], plural: &str, body: axum::body::Body) -> Routed {
    let form = if plural != "v3" && r.method == Method::POST {
        match axum::body::to_bytes(body, MAX_FORM_BYTES).await {
            Ok(b) => Some(b),
            Err(_) => {
                return (
                    Route::HubPathsInfo,
                    respond::text(
                        StatusCode::PAYLOAD_TOO_LARGE,
                        "the form is larger than 1 MiB\n",
                    ),
                );
            }
        }
    } else {
        None
    };
    let built = r
        .build_blocking(segs, move |r, segs| match segs {
            ["api", plural, rest @ ..] => hub::api(r, plural, rest, form.as_deref()),
            _ => (Route::NotFound, build_failed()),
        })
        .await;
    built.unwrap_or_else(|| (Route::NotFound, build_failed()))
}

/// The answer when a build on the blocking pool panicked (logged by the
/// runtime): the server goes on, the client is told to try again.
fn build_failed() -> Response {
    respond::text(
        StatusCode::INTERNAL_SERVER_ERROR,
        "the answer could not be built; try again\n",
    )
}

/// Whether a path is under the routes that build JSON answers (the Hub and
/// GitHub APIs, `/v1/index`), whose builds are worth doing once: a file
/// download's route answers at once and streams, so it never waits.
fn builds_json(segs: &[&str]) -> bool {
    matches!(segs.first(), Some(&("api" | "repos" | "v1")))
}
