//! Why `mirror serve` cannot start or stopped. Why a route refuses a
//! request is its protocol's error (`hub/error.rs`, `github/error.rs`,
//! `oci/error.rs`, `xet/error.rs`), and why a held blob cannot be sent is
//! the HTTP plumbing's (`http/error.rs`): each is its own response, in the
//! shape that protocol's clients read.

use std::net::SocketAddr;
use std::path::PathBuf;

use thiserror::Error;

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
    /// Reaching the bucket, or making its work folder or cache.
    #[error(transparent)]
    Open(Box<crate::store::session::SessionError>),
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
