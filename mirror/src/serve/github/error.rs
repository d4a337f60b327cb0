//! Why a GitHub release route refuses a request, answered as GitHub does.

use axum::response::{IntoResponse, Response};
use http::StatusCode;
use thiserror::Error;

use crate::serve::http::paths::BadPath;
use crate::serve::http::respond::{github_not_found, method_not_allowed, text};

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
