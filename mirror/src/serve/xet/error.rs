//! The refusals of the Xet routes, as a content server answers them: a
//! status `hf_xet` acts on (404: fall back or fail naming the file; 416:
//! nothing in that range), with the Hub's `X-Error-Code` and message.
//!
//! Invariant: every text names what was asked as the mirror read it
//! (hashes are hex by type, so nothing a client sent is echoed raw).

use axum::response::{IntoResponse, Response};
use http::StatusCode;

use crate::serve::http::error::BlobError;
use crate::serve::http::respond::hub_error;
use crate::store::xet::XetReadError;

#[derive(Debug, thiserror::Error)]
pub enum XetError {
    /// Not a 64-hex Xet hash.
    #[error("not a Xet hash (64 lower-case hex digits)")]
    BadHash,
    /// No held file has this hash (or its record is not made yet).
    #[error("no file with Xet hash {0} is held by this mirror")]
    FileUnknown(String),
    /// The file has no xorb of this hash.
    #[error("file {file} has no xorb {xorb} on this mirror")]
    XorbUnknown { file: String, xorb: String },
    /// A range past the end.
    #[error("the range asked is past the end of the {size} bytes")]
    Unsatisfiable { size: u64 },
    /// No route takes the path.
    #[error("no Xet route takes this path")]
    NoRoute,
    /// Xet is read with GET (and HEAD).
    #[error("only GET and HEAD are served here")]
    Method,
    #[error(transparent)]
    Record(#[from] XetReadError),
    #[error(transparent)]
    Blob(#[from] Box<BlobError>),
}

impl IntoResponse for XetError {
    /// In the Hub's error shape (`X-Error-Code`, `X-Error-Message`, a JSON
    /// `error`), as the Hub's own content routes answer.
    fn into_response(self) -> Response {
        let (status, code) = match &self {
            XetError::BadHash => (StatusCode::BAD_REQUEST, "BadRequest"),
            XetError::FileUnknown(_) | XetError::XorbUnknown { .. } => {
                (StatusCode::NOT_FOUND, "EntryNotFound")
            }
            XetError::NoRoute => (StatusCode::NOT_FOUND, "NotFound"),
            XetError::Unsatisfiable { .. } => {
                (StatusCode::RANGE_NOT_SATISFIABLE, "RangeNotSatisfiable")
            }
            XetError::Method => (StatusCode::METHOD_NOT_ALLOWED, "MethodNotAllowed"),
            XetError::Blob(_) => return self.into_blob_response(),
            XetError::Record(e) => {
                tracing::error!(error = %llmgw_shared::chain(e), "Xet record unusable");
                (StatusCode::INTERNAL_SERVER_ERROR, "InternalError")
            }
        };
        let mut resp = hub_error(
            status,
            Some(code),
            &llmgw_shared::chain(&self).to_string(),
            None,
        );
        if status == StatusCode::METHOD_NOT_ALLOWED {
            resp.headers_mut().insert(
                http::header::ALLOW,
                http::HeaderValue::from_static("GET, HEAD"),
            );
        }
        resp
    }
}

impl XetError {
    fn into_blob_response(self) -> Response {
        match self {
            XetError::Blob(e) => (*e).into_response(),
            other => other.into_response(),
        }
    }
}
