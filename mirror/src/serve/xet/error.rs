//! The refusals of the Xet routes, as a content server answers them: a
//! status `hf_xet` acts on (404: fall back or fail naming the file; 416:
//! nothing in that range) and one line of text for a person.
//!
//! Invariant: every text names what was asked as the mirror read it
//! (hashes are hex by type, so nothing a client sent is echoed raw).

use axum::response::{IntoResponse, Response};
use http::StatusCode;

use crate::serve::error::BlobError;
use crate::serve::respond::text;
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
    fn into_response(self) -> Response {
        let status = match &self {
            XetError::BadHash => StatusCode::BAD_REQUEST,
            XetError::FileUnknown(_) | XetError::XorbUnknown { .. } | XetError::NoRoute => {
                StatusCode::NOT_FOUND
            }
            XetError::Unsatisfiable { .. } => StatusCode::RANGE_NOT_SATISFIABLE,
            XetError::Method => StatusCode::METHOD_NOT_ALLOWED,
            XetError::Blob(_) => return self.into_blob_response(),
            XetError::Record(e) => {
                tracing::error!(error = %llmgw_shared::chain(e), "Xet record unusable");
                StatusCode::INTERNAL_SERVER_ERROR
            }
        };
        let mut resp = text(status, format!("{}\n", llmgw_shared::chain(&self)));
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
