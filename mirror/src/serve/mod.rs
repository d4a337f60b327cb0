//! `llmgw mirror serve`: the store over GitHub-release and Hugging Face Hub
//! compatible HTTP, so nodes and stock clients need only a base URL.
//!
//! One entry handler splits the raw path itself (see [`paths`]) rather than
//! using a router: the Hub's revisions and tree paths carry `%2F`, which a
//! router would decode into extra segments, and owning the split keeps
//! every name's decoding and checking in one place. Routes only look names
//! up in the [`index::Index`]; the one thing that reaches the filesystem is
//! a blob's sha256 from that index.

pub mod auth;
pub mod cache;
pub mod conn;
pub mod files;
pub mod freshness;
pub mod graphql;
pub mod graphql_parse;
pub mod index;
pub mod index_pypi;
pub mod metrics;
pub mod paths;
pub mod respond;
pub mod routes_github;
pub mod routes_hub;
pub mod routes_index;
pub mod routes_pypi;
pub mod state;
pub mod store_check;
mod track;

use std::net::SocketAddr;
use std::path::PathBuf;
use std::sync::Arc;
use std::time::Duration;

use axum::Router;
use axum::extract::{Request, State};
use axum::response::Response;
use http::{HeaderMap, HeaderValue, Method, StatusCode, header};
use thiserror::Error;

use crate::store::Store;
use state::{AppState, Readiness};

/// Largest `paths-info` form accepted.
const MAX_FORM_BYTES: usize = 1024 * 1024;

/// What `llmgw mirror serve` was asked to do.
#[derive(Debug, Clone)]
pub struct ServeConfig {
    pub store: PathBuf,
    pub listen: SocketAddr,
    /// The URL clients reach this server at, for URLs in JSON answers;
    /// else taken from `X-Forwarded-Proto`/`X-Forwarded-Host`, else `Host`.
    pub public_url: Option<String>,
    pub tls: Option<TlsFiles>,
    pub token_file: Option<PathBuf>,
    /// How many connections, and how long each may stall.
    pub limits: conn::ConnLimits,
}

/// PEM files for TLS.
#[derive(Debug, Clone)]
pub struct TlsFiles {
    pub cert: PathBuf,
    pub key: PathBuf,
}

#[derive(Debug, Error)]
pub enum ServeError {
    #[error(
        "the store {0} does not exist or is not a folder; import a bundle into it first \
         (`llmgw bundle import --store {0} ...`) or pass the right --store"
    )]
    NoStore(PathBuf),
    #[error(
        "cannot read the store {path}: {source}; check that --store names the mirror's folder \
         and that this user may read it"
    )]
    Unreadable {
        path: PathBuf,
        source: std::io::Error,
    },
    #[error(
        "{path} is not a mirror store: it has no bundles/ folder and holds other things ({found}); {hint}"
    )]
    NotAStore {
        path: PathBuf,
        found: String,
        hint: String,
    },
    #[error("{0}")]
    Token(String),
    #[error(
        "--public-url {0:?} is not an http:// or https:// URL; give the base URL nodes use, \
         e.g. https://mirror.example:8443"
    )]
    PublicUrl(String),
    #[error(
        "cannot load TLS certificate {cert} and key {key}: {source}; give PEM files \
         (a certificate chain and its private key)"
    )]
    Tls {
        cert: PathBuf,
        key: PathBuf,
        source: std::io::Error,
    },
    #[error(
        "cannot listen on {addr}: {source}; pick another --listen address or stop what uses it"
    )]
    Bind {
        addr: SocketAddr,
        source: std::io::Error,
    },
    #[error("the server stopped: {0}")]
    Serve(std::io::Error),
}

/// A running server.
pub struct Running {
    pub addr: SocketAddr,
    pub scheme: &'static str,
    pub state: Arc<AppState>,
    /// What the store held when the server started.
    pub held: store_check::Held,
    /// The connections open and their limits.
    pub conns: Arc<conn::Conns>,
    handle: axum_server::Handle<conn::ConnAddr>,
    task: tokio::task::JoinHandle<std::io::Result<()>>,
    reaper: tokio::task::JoinHandle<()>,
}

impl Running {
    /// `http://127.0.0.1:PORT`.
    pub fn url(&self) -> String {
        format!("{}://{}", self.scheme, self.addr)
    }

    /// Stops accepting, lets requests in flight finish for up to `grace`.
    pub async fn shutdown(self, grace: Duration) -> Result<(), ServeError> {
        self.handle.graceful_shutdown(Some(grace));
        let done = self.task.await;
        self.reaper.abort();
        match done {
            Ok(r) => r.map_err(ServeError::Serve),
            Err(e) => Err(ServeError::Serve(std::io::Error::other(e))),
        }
    }
}

/// Checks the settings, binds, and starts serving on the current tokio
/// runtime. The store is read by the state's own thread; `/readyz` says
/// when.
pub async fn start(cfg: ServeConfig) -> Result<Running, ServeError> {
    let held = store_check::check(&cfg.store)?;
    if let Some(u) = &cfg.public_url
        && !(u.starts_with("http://") || u.starts_with("https://"))
    {
        return Err(ServeError::PublicUrl(u.clone()));
    }
    let token = match &cfg.token_file {
        Some(p) => Some(auth::read_token_file(p).map_err(ServeError::Token)?),
        None => None,
    };
    let tls = match &cfg.tls {
        Some(t) => Some(
            axum_server::tls_rustls::RustlsConfig::from_pem_file(&t.cert, &t.key)
                .await
                .map_err(|source| ServeError::Tls {
                    cert: t.cert.clone(),
                    key: t.key.clone(),
                    source,
                })?,
        ),
        None => None,
    };
    let state = AppState::new(
        Store::at(&cfg.store),
        token.as_deref(),
        cfg.public_url.clone(),
        tls.is_some(),
    );
    let listener = std::net::TcpListener::bind(cfg.listen).map_err(|source| ServeError::Bind {
        addr: cfg.listen,
        source,
    })?;
    let bind_err = |source| ServeError::Bind {
        addr: cfg.listen,
        source,
    };
    listener.set_nonblocking(true).map_err(bind_err)?;
    let addr = listener.local_addr().map_err(bind_err)?;
    let listener = tokio::net::TcpListener::from_std(listener).map_err(bind_err)?;
    let conns = conn::Conns::new(cfg.limits);
    let reaper = conn::spawn_reaper(&conns);
    let limits = conns.limits();
    tracing::info!(
        max_connections = limits.max_connections,
        header_timeout_s = limits.header_timeout.as_secs_f64(),
        idle_timeout_s = limits.idle_timeout.as_secs_f64(),
        send_timeout_s = limits.send_timeout.as_secs_f64(),
        "connection limits"
    );

    let app = router(state.clone());
    let handle = axum_server::Handle::new();
    let server = axum_server::Server::<conn::ConnAddr>::from_listener(conn::Listener::new(
        listener,
        conns.clone(),
    ))
    .handle(handle.clone());
    let (scheme, task) = match tls {
        Some(config) => {
            let server = server.acceptor(axum_server::tls_rustls::RustlsAcceptor::new(config));
            ("https", tokio::spawn(server.serve(app.into_make_service())))
        }
        None => ("http", tokio::spawn(server.serve(app.into_make_service()))),
    };
    Ok(Running {
        addr,
        scheme,
        state,
        held,
        conns,
        handle,
        task,
        reaper,
    })
}

/// The whole HTTP surface: one entry handler.
pub fn router(state: Arc<AppState>) -> Router {
    Router::new().fallback(entry).with_state(state)
}

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
            respond::text(StatusCode::OK, format!("ready: {bundles} bundles\n"))
        }
        Readiness::Reading => {
            respond::text(StatusCode::SERVICE_UNAVAILABLE, "the store is being read\n")
        }
        Readiness::Failing(why) => respond::text(
            StatusCode::SERVICE_UNAVAILABLE,
            format!(
                "the store cannot be read: {why}; trying again every {} ms\n",
                state::CHECK_EVERY.as_millis()
            ),
        ),
    }
}

/// What a route needs to know about the request.
pub struct Req<'a> {
    pub state: &'a AppState,
    pub index: Arc<index::Index>,
    pub method: &'a Method,
    pub headers: &'a HeaderMap,
    pub query: Vec<(String, String)>,
    authority: Option<&'a str>,
}

impl Req<'_> {
    /// The base URL clients reach this mirror at: `--public-url`, else
    /// `X-Forwarded-Proto` + `X-Forwarded-Host` (an ingress), else `Host`.
    pub fn base_url(&self) -> String {
        if let Some(u) = &self.state.public_url {
            return u.clone();
        }
        let first = |name: &str| {
            self.headers
                .get(name)
                .and_then(|v| v.to_str().ok())
                .and_then(|v| v.split(',').next())
                .map(str::trim)
                .filter(|v| !v.is_empty())
        };
        let proto = match first("x-forwarded-proto") {
            Some(p) if p.eq_ignore_ascii_case("https") => "https",
            Some(p) if p.eq_ignore_ascii_case("http") => "http",
            _ if self.state.tls => "https",
            _ => "http",
        };
        let host = first("x-forwarded-host")
            .or_else(|| first("host"))
            .or(self.authority)
            .filter(|h| {
                h.len() <= 255
                    && h.chars()
                        .all(|c| c.is_ascii_alphanumeric() || "-.:[]_".contains(c))
            })
            .unwrap_or("localhost");
        format!("{proto}://{host}")
    }
}

async fn entry(State(state): State<Arc<AppState>>, req: Request) -> Response {
    let tracker = track::Tracker::start(&state, req.method(), req.uri().path());
    let (route, resp) = dispatch(&state, req).await;
    tracker.finish(route, resp)
}

async fn dispatch(state: &Arc<AppState>, req: Request) -> (&'static str, Response) {
    let (parts, body) = req.into_parts();
    let raw_path = parts.uri.path();
    let segs = match paths::raw_segments(raw_path) {
        Ok(s) => s,
        Err(e) => {
            return (
                "bad_request",
                respond::text(StatusCode::URI_TOO_LONG, format!("{e}\n")),
            );
        }
    };
    let first = segs.first().copied().unwrap_or("");
    match (first, segs.len()) {
        ("healthz", 1) => return ("healthz", respond::text(StatusCode::OK, "ok\n")),
        ("readyz", 1) => return ("readyz", readyz(state)),
        ("metrics", 1) => return ("metrics", routes_index::metrics(state)),
        _ => {}
    }
    // Probes and metrics above stay open: the kubelet and Prometheus
    // scrape them without the token.
    if let Some(expected) = &state.token_sha256
        && !auth::authorized(expected, &parts.headers)
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
        return ("unauthorized", r);
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
        return ("not_ready", readyz(state));
    }
    // A JSON answer built before from the same index is sent as it is.
    let cache_key = (r.method == Method::GET || r.method == Method::HEAD)
        .then(|| cache::key(raw_path, &r.query, &r.base_url(), r.headers));
    if let Some(key) = &cache_key
        && let Some(hit) = state.json_cache.get(&r.index, key)
    {
        return (json_route(&segs), cache::reply(r.method, r.headers, &hit));
    }
    let (route, mut resp) = route(&r, &segs, raw_path, body).await;
    if let Some(built) = resp.extensions_mut().remove::<cache::CachedJson>()
        && let Some(key) = cache_key
    {
        state.json_cache.put(&r.index, key, built);
    }
    (route, resp)
}

/// The metrics label of a JSON route, for answers from the cache.
fn json_route(segs: &[&str]) -> &'static str {
    match segs {
        ["v1", "index"] => "index",
        ["api", "v3", "repos", _, _, "releases"] | ["repos", _, _, "releases"] => "github_releases",
        ["api", "v3", "repos", _, _, "releases", "latest"]
        | ["repos", _, _, "releases", "latest"] => "github_latest",
        ["api", "v3", "repos", _, _, "releases", "assets", _]
        | ["repos", _, _, "releases", "assets", _] => "github_asset",
        ["api", "v3", ..] | ["repos", ..] => "github_release",
        ["api", _, _, _] => "hub_info",
        ["api", _, _, _, "revision", ..] => "hub_revision",
        ["api", _, _, _, "tree", ..] => "hub_tree",
        ["api", _, _, _, "refs"] => "hub_refs",
        ["v2", ..] => "hub_manifests",
        ["uv", "python-downloads.json"] => "uv_python_downloads",
        _ => "json",
    }
}

async fn route(
    r: &Req<'_>,
    segs: &[&str],
    raw_path: &str,
    body: axum::body::Body,
) -> (&'static str, Response) {
    match segs {
        ["v1", "index"] => {
            if r.method != Method::GET && r.method != Method::HEAD {
                return ("index", respond::method_not_allowed("GET, HEAD"));
            }
            ("index", routes_index::index(r))
        }
        ["api", "agent-harnesses", ..] => (
            "agent_harnesses",
            respond::hub_error(StatusCode::NOT_FOUND, None, "not served by a mirror", None),
        ),
        ["api", "graphql"] | ["graphql"] => {
            if r.method != Method::POST {
                return graphql::not_post();
            }
            match axum::body::to_bytes(body, graphql_parse::MAX_QUERY_BYTES * 2).await {
                Ok(b) => graphql::answer(r, &b),
                Err(_) => (
                    "github_graphql",
                    respond::text(
                        StatusCode::PAYLOAD_TOO_LARGE,
                        "the GraphQL request is larger than 64 KiB\n",
                    ),
                ),
            }
        }
        ["api", "v3", "repos", rest @ ..] | ["repos", rest @ ..] => {
            routes_github::api(r, rest, raw_path).await
        }
        ["api", plural, rest @ ..] => {
            let form = if *plural != "v3" && r.method == Method::POST {
                match axum::body::to_bytes(body, MAX_FORM_BYTES).await {
                    Ok(b) => Some(b),
                    Err(_) => {
                        return (
                            "hub_paths_info",
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
            routes_hub::api(r, plural, rest, form.as_deref())
        }
        ["v2", rest @ ..] => routes_hub::manifests(r, rest),
        ["pypi", rest @ ..]
            if matches!(rest.get(1), Some(&("simple" | "files" | "pylock.toml"))) =>
        {
            routes_pypi::pypi(r, rest).await
        }
        ["uv", "python-downloads.json"] => routes_pypi::python_downloads(r),
        [_, _, "releases", "download" | "latest", ..] => routes_github::download(r, segs).await,
        [prefix @ ("datasets" | "spaces"), rest @ ..] if rest.get(2) == Some(&"resolve") => {
            let kind = routes_hub::kind_of(prefix).flatten();
            routes_hub::resolve(r, kind, rest).await
        }
        [_, _, "resolve", ..] => {
            routes_hub::resolve(r, Some(llmgw_shared::manifest::RepoKind::Model), segs).await
        }
        _ => (
            "not_found",
            respond::text(StatusCode::NOT_FOUND, "not found\n"),
        ),
    }
}
