//! Why a Hub route refuses a request, each answered as the Hub answers it.

use axum::response::{IntoResponse, Response};
use http::StatusCode;
use thiserror::Error;

use crate::serve::http::paths::BadPath;
use crate::serve::http::respond::{hub_error, method_not_allowed, text};

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
    /// A tree listing's `cursor` that no page of this mirror wrote.
    #[error("cursor {0:?} is not one this mirror gave: list the tree again from its first page")]
    BadCursor(String),
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
    /// A path under a repository's Hub API that the mirror does not serve
    /// (discussions, commits, uploads…), or that names nothing.
    #[error(
        "llmgw mirror: this Hub route is not served offline, or names nothing held (served: \
         revision, tree, paths-info, refs, resolve and Xet downloads of the repositories held)"
    )]
    NotFound,
    /// A Hub API path the mirror does not serve (discussions, commits,
    /// whoami, listings, uploads…): answered as a miss in the Hub's shape,
    /// so a client falls back as it does when the Hub lacks something.
    #[error(
        "llmgw mirror: this Hub route is not served offline (served: revision, tree, \
         paths-info, refs, resolve and Xet downloads of the repositories held)"
    )]
    NoRoute,
    #[error("method not allowed")]
    Method { allow: &'static str },
}

impl IntoResponse for HubError {
    fn into_response(self) -> Response {
        let message = self.to_string();
        match self {
            HubError::BadName(_) | HubError::BadTag(_) | HubError::BadCursor(_) => {
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
            HubError::NotFound | HubError::NoRoute => {
                hub_error(StatusCode::NOT_FOUND, Some("EntryNotFound"), &message, None)
            }
            HubError::Method { allow } => method_not_allowed(allow),
        }
    }
}
