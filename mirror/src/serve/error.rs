//! The server's errors: why `mirror serve` cannot start or stopped, and
//! why a route refuses a request (each of those is its own response, in
//! the shape the protocol's clients read).

use std::net::SocketAddr;
use std::path::PathBuf;

use axum::response::{IntoResponse, Response};
use http::StatusCode;
use thiserror::Error;

use super::paths::BadPath;
use super::respond::{github_not_found, hub_error, method_not_allowed, text};
use crate::store::StoreError;

#[derive(Debug, Error)]
pub enum ServeError {
    #[error(
        "the store {0} does not exist or is not a folder; import a bundle into it first \
         (`llmgw bundle import --store {0} ...`) or pass the right --store"
    )]
    NoStore(PathBuf),
    #[error(
        "cannot read the store {path}; check that --store names the mirror's folder and that \
         this user may read it"
    )]
    Unreadable {
        path: PathBuf,
        #[source]
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
    #[error(transparent)]
    Token(#[from] TokenError),
    /// The store's bundles cannot be listed for another reason than the
    /// filesystem's (which is [`ServeError::Unreadable`]).
    #[error("cannot list the bundles of the store")]
    Bundles(#[source] crate::store::StoreError),
    #[error("cannot copy the store's manifests and state from the bucket")]
    Remote(#[source] crate::store::StoreError),
    /// The value given, which is not a URL (no cause: the value is what
    /// is wrong).
    #[error(
        "--public-url {0:?} is not an http:// or https:// URL; give the base URL nodes use, \
         e.g. https://mirror.example:8443"
    )]
    PublicUrl(String),
    #[error(
        "cannot load TLS certificate {cert} and key {key}; give PEM files (a certificate chain \
         and its private key)"
    )]
    Tls {
        cert: PathBuf,
        key: PathBuf,
        #[source]
        source: std::io::Error,
    },
    #[error("cannot listen on {addr}; pick another --listen address or stop what uses it")]
    Bind {
        addr: SocketAddr,
        #[source]
        source: std::io::Error,
    },
    #[error("the server stopped")]
    Serve(#[source] std::io::Error),
}

/// Why `--token-file` cannot be used.
#[derive(Debug, Error)]
pub enum TokenError {
    #[error("cannot read the token file")]
    Read(#[source] StoreError),
    #[error("the token file {} is not text (UTF-8)", path.display())]
    NotText { path: PathBuf },
    #[error(
        "the token file {} is empty; put the token clients will send in it",
        path.display()
    )]
    Empty { path: PathBuf },
    #[error(
        "the token file {} holds more than one word; a token is one line without spaces",
        path.display()
    )]
    NotOneWord { path: PathBuf },
}

/// Why a Hub route refuses a request, each as the Hub answers it: the
/// misses with the `X-Error-Code` `huggingface_hub` keys off (and the commit
/// on an entry miss, so clients cache it), a bad name as plain 400.
#[derive(Debug, Error)]
pub enum HubError {
    /// A name in the URL no repository, revision or file could have.
    #[error(transparent)]
    BadName(#[from] BadPath),
    #[error("quant tag {0:?} is not a tag")]
    BadTag(String),
    #[error("Repository not found: {plural}/{id} is not held by this mirror")]
    RepoNotFound { plural: &'static str, id: String },
    #[error("Invalid rev id: {rev} is not held by this mirror for {id}")]
    RevisionNotFound { id: String, rev: String },
    #[error("Entry not found: {path} is not held by this mirror for {id} at {commit}")]
    EntryNotFound {
        id: String,
        path: String,
        commit: String,
    },
    #[error("no GGUF file of {id} matches the tag {tag}")]
    NoQuant {
        id: String,
        tag: String,
        commit: String,
    },
    /// A path under a Hub route that names nothing.
    #[error("not found")]
    NotFound,
    /// A path no Hub route takes (plain text, as any unknown path).
    #[error("not found")]
    NoRoute,
    #[error("method not allowed")]
    Method { allow: &'static str },
}

impl IntoResponse for HubError {
    fn into_response(self) -> Response {
        let message = self.to_string();
        match self {
            HubError::BadName(_) | HubError::BadTag(_) => {
                text(StatusCode::BAD_REQUEST, format!("{message}\n"))
            }
            HubError::RepoNotFound { .. } => {
                hub_error(StatusCode::NOT_FOUND, Some("RepoNotFound"), &message, None)
            }
            HubError::RevisionNotFound { .. } => hub_error(
                StatusCode::NOT_FOUND,
                Some("RevisionNotFound"),
                &message,
                None,
            ),
            HubError::EntryNotFound { commit, .. } | HubError::NoQuant { commit, .. } => hub_error(
                StatusCode::NOT_FOUND,
                Some("EntryNotFound"),
                &message,
                Some(&commit),
            ),
            HubError::NotFound => hub_error(StatusCode::NOT_FOUND, None, &message, None),
            HubError::NoRoute => text(StatusCode::NOT_FOUND, "not found\n"),
            HubError::Method { allow } => method_not_allowed(allow),
        }
    }
}

/// Why a GitHub release route refuses a request, as GitHub answers it.
#[derive(Debug, Error)]
pub enum GithubError {
    /// A name in the URL no repository, tag or asset could have.
    #[error(transparent)]
    BadName(#[from] BadPath),
    /// Nothing held under this API path: GitHub's JSON 404.
    #[error("Not Found")]
    NotFound,
    /// No such asset to download: a plain 404, as github.com's.
    #[error("Not Found")]
    NoAsset,
    #[error("method not allowed")]
    Method,
}

impl IntoResponse for GithubError {
    fn into_response(self) -> Response {
        match self {
            GithubError::BadName(e) => text(StatusCode::BAD_REQUEST, format!("{e}\n")),
            GithubError::NotFound => github_not_found(),
            GithubError::NoAsset => text(StatusCode::NOT_FOUND, "Not Found\n"),
            GithubError::Method => method_not_allowed("GET, HEAD"),
        }
    }
}
