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
            HubError::NotFound => hub_error(StatusCode::NOT_FOUND, None, &message, None),
            HubError::NoRoute => text(StatusCode::NOT_FOUND, "not found\n"),
            HubError::Method { allow } => method_not_allowed(allow),
        }
    }
}
