//! `llmgw mirror serve`: the store over GitHub-release and Hugging Face Hub
//! compatible HTTP, so nodes and stock clients need only a base URL.
//!
//! One entry handler splits the raw path itself (see [`http::paths`])
//! rather than using a router: the Hub's revisions and tree paths carry
//! `%2F`, which a router would decode into extra segments, and owning the
//! split keeps every name's decoding and checking in one place. Routes only look names
//! up in the [`index::Index`]; the one thing that reaches the filesystem is
//! a blob's sha256 from that index.

pub mod auth;
pub mod cache;
mod cache_key;
pub mod conn;
mod dispatch;
pub mod error;
pub mod front;
pub mod github;
mod heap;
pub mod http;
pub mod hub;
pub mod index;
pub mod misses;
pub mod node;
pub mod oci;
pub mod ops;
pub mod pypi;
mod refresh;
mod request;
pub mod route;
pub mod sbom;
mod service;
pub mod state;
pub mod xet;

use std::net::SocketAddr;
use std::path::PathBuf;
use std::sync::Arc;
use std::time::Duration;

use axum::Router;

use crate::store::Store;
use crate::store::remote::OwnFile;
use crate::store::session::{BucketServing, Served, SessionError, StoreLocation};
pub use error::ServeError;
use state::AppState;

/// What `llmgw mirror serve` was asked to do.
#[derive(Debug, Clone)]
pub struct ServeConfig {
    /// The store served: a folder, which must exist and look like a
    /// store; or a bucket, followed as `bucket` says.
    pub store: StoreLocation,
    /// How a store in a bucket is followed and cached (unused for a
    /// folder).
    pub bucket: BucketServing,
    /// Where to listen (port 0: any free port, see [`Running::addr`]).
    pub listen: SocketAddr,
    /// The URL clients reach this server at, for URLs in JSON answers;
    /// else taken from `X-Forwarded-Proto`/`X-Forwarded-Host`, else `Host`.
    pub public_url: Option<String>,
    /// Serve HTTPS with these files, else plain HTTP.
    pub tls: Option<TlsFiles>,
    /// A file holding the bearer token every request must carry; none
    /// means no token is asked for.
    pub token_file: Option<PathBuf>,
    /// How many connections, and how long each may stall.
    pub limits: conn::ConnLimits,
}

/// PEM files for TLS.
#[derive(Debug, Clone)]
pub struct TlsFiles {
    /// The certificate chain.
    pub cert: PathBuf,
    /// Its private key.
    pub key: PathBuf,
}

/// A running server.
pub struct Running {
    /// The address bound (the real port when 0 was asked for).
    pub addr: SocketAddr,
    /// `http` or `https`.
    pub scheme: &'static str,
    /// What every request answers from, shared with the server.
    pub state: Arc<AppState>,
    /// What the store held when the server started.
    pub held: ops::store_check::Held,
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

    /// Stops accepting, lets requests in flight finish for up to `grace`,
    /// and writes the misses not written yet (a node's last ask is not
    /// lost to a stop between two of the state thread's writes).
    pub async fn shutdown(self, grace: Duration) -> Result<(), ServeError> {
        self.handle.graceful_shutdown(Some(grace));
        let done = self.task.await;
        self.reaper.abort();
        let state = self.state.clone();
        let _ = tokio::task::spawn_blocking(move || state.save_misses()).await;
        ops::access::flush(Duration::from_secs(2)).await;
        match done {
            Ok(r) => r.map_err(ServeError::Serve),
            Err(e) => Err(ServeError::Serve(std::io::Error::other(e))),
        }
    }
}

/// Opens the store, checks the settings, binds, and starts serving on the
/// current tokio runtime. The store is read by the state's own thread;
/// `/readyz` says when. A store in a bucket is served from a work folder
/// its small files are copied into before the server starts, then every
/// `cfg.bucket.poll` by a thread of their own (so a replica learns of a
/// bundle another one's import added); the index follows the folder as it
/// follows any store's.
pub async fn start(cfg: ServeConfig) -> Result<Running, ServeError> {
    let (store, follow) = cfg
        .store
        .open_served(&cfg.bucket)
        .await
        .map_err(|e| match e {
            SessionError::Pull { source, .. } => ServeError::Remote(*source),
            other => ServeError::Open(Box::new(other)),
        })?;
    let running = start_with(&cfg, store).await?;
    if let Some(follower) = follow {
        let own = own_state_files(&running.state.instance);
        follower
            .start(own, cfg.bucket.poll, Arc::downgrade(&running.state))
            .map_err(|e| ServeError::Serve(std::io::Error::other(e)))?;
    }
    Ok(running)
}

/// A failed copy to or from the bucket counts as a failed reload.
impl Served for AppState {
    fn failed(&self) {
        self.metrics.reload_errors.inc();
    }
}

/// The state files a replica writes: its own miss log, and the layer
/// digests every replica learns (merged with the bucket's copy).
fn own_state_files(instance: &str) -> Vec<OwnFile> {
    vec![
        OwnFile::state(&misses::file_name(instance), None),
        OwnFile::state(
            index::oci::models::FILE,
            Some(index::oci::models::merge_layer_digests),
        ),
    ]
}

/// [`start`] with the store opened.
async fn start_with(cfg: &ServeConfig, store: Store) -> Result<Running, ServeError> {
    let held = ops::store_check::check(store.root())?;
    if let Some(u) = &cfg.public_url
        && !(u.starts_with("http://") || u.starts_with("https://"))
    {
        return Err(ServeError::PublicUrl(u.clone()));
    }
    let token = match &cfg.token_file {
        Some(p) => Some(auth::read_token_file(p)?),
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
        store,
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

    // Served by the entry handler directly: the same answers as `router`'s.
    let app = service::MakeEntry(state.clone());
    let handle = axum_server::Handle::new();
    let server = axum_server::Server::<conn::ConnAddr>::from_listener(conn::Listener::new(
        listener,
        conns.clone(),
    ))
    .handle(handle.clone());
    let (scheme, task) = match tls {
        Some(config) => {
            let server = server.acceptor(axum_server::tls_rustls::RustlsAcceptor::new(config));
            ("https", tokio::spawn(server.serve(app)))
        }
        None => ("http", tokio::spawn(server.serve(app))),
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
    Router::new()
        .fallback(|axum::extract::State(state), req| dispatch::entry(state, req))
        .with_state(state)
}
