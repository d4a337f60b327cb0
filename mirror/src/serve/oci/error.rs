//! Why the OCI registry routes refuse a request: the distribution spec's
//! error codes and the body its clients read.

use axum::response::{IntoResponse, Response};
use http::StatusCode;
use thiserror::Error;

use crate::serve::http::respond::oci_error;

/// The error codes of the OCI distribution spec, in the order spec.md's
/// table lists them (code-1 to code-14). A read-only registry sends only
/// some of them; the rest are listed so the table stays the spec's.
#[allow(dead_code)]
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum OciCode {
    BlobUnknown,
    BlobUploadInvalid,
    BlobUploadUnknown,
    DigestInvalid,
    ManifestBlobUnknown,
    ManifestInvalid,
    ManifestUnknown,
    NameInvalid,
    NameUnknown,
    SizeInvalid,
    Unauthorized,
    Denied,
    Unsupported,
    TooManyRequests,
}

impl OciCode {
    /// The identifier in the error body's `code`.
    pub const fn as_str(self) -> &'static str {
        match self {
            OciCode::BlobUnknown => "BLOB_UNKNOWN",
            OciCode::BlobUploadInvalid => "BLOB_UPLOAD_INVALID",
            OciCode::BlobUploadUnknown => "BLOB_UPLOAD_UNKNOWN",
            OciCode::DigestInvalid => "DIGEST_INVALID",
            OciCode::ManifestBlobUnknown => "MANIFEST_BLOB_UNKNOWN",
            OciCode::ManifestInvalid => "MANIFEST_INVALID",
            OciCode::ManifestUnknown => "MANIFEST_UNKNOWN",
            OciCode::NameInvalid => "NAME_INVALID",
            OciCode::NameUnknown => "NAME_UNKNOWN",
            OciCode::SizeInvalid => "SIZE_INVALID",
            OciCode::Unauthorized => "UNAUTHORIZED",
            OciCode::Denied => "DENIED",
            OciCode::Unsupported => "UNSUPPORTED",
            OciCode::TooManyRequests => "TOOMANYREQUESTS",
        }
    }
}

/// Why the OCI registry routes refuse a request, each answered with the
/// spec's error body (`{"errors":[{"code","message"}]}`). Names in the
/// messages are escaped ([`llmgw_shared::shown`]) where they come from the
/// URL unchecked.
#[derive(Debug, Error)]
pub enum OciError {
    #[error(
        "repository name {0} does not match the OCI name grammar \
         ([a-z0-9]+((.|_|__|-+)[a-z0-9]+)* components joined by /, at most 255 bytes)"
    )]
    BadName(String),
    #[error(
        "reference {0} is neither a tag ([a-zA-Z0-9_][a-zA-Z0-9._-]{{0,127}}) nor a digest \
         (sha256:<64 hex>)"
    )]
    BadReference(String),
    #[error("{0} is not a digest (sha256:<64 lower-case hex>)")]
    BadDigest(String),
    #[error("repository {name} is not held by this mirror; GET /v2/_catalog lists the names held")]
    NameUnknown { name: String },
    #[error(
        "repository {name} is held for several registries ({held}); say which with \
         ?ns=REGISTRY, as containerd's mirror requests do"
    )]
    Ambiguous { name: String, held: String },
    #[error("repository {name} is not held for registry {ns}; it is held for: {held}")]
    NotFrom {
        name: String,
        ns: String,
        held: String,
    },
    #[error("manifest {reference} of {name} is not held by this mirror")]
    ManifestUnknown { name: String, reference: String },
    #[error(
        "manifest {reference} of {name} is a {media_type}, which the request's Accept \
         header does not list"
    )]
    NotAccepted {
        name: String,
        reference: String,
        media_type: String,
    },
    #[error("blob {digest} is not held under {name}")]
    BlobUnknown { name: String, digest: String },
    #[error(
        "this mirror is a read-only registry: {0} is not served here; push to the upstream \
         registry and carry the image across in a bundle (`llmgw bundle create --image`)"
    )]
    Unsupported(String),
}

impl OciError {
    /// The spec's code and the status it goes with.
    pub fn code(&self) -> (OciCode, StatusCode) {
        match self {
            OciError::BadName(_) => (OciCode::NameInvalid, StatusCode::BAD_REQUEST),
            OciError::BadReference(_) => (OciCode::ManifestInvalid, StatusCode::BAD_REQUEST),
            OciError::BadDigest(_) => (OciCode::DigestInvalid, StatusCode::BAD_REQUEST),
            OciError::NameUnknown { .. }
            | OciError::Ambiguous { .. }
            | OciError::NotFrom { .. } => (OciCode::NameUnknown, StatusCode::NOT_FOUND),
            OciError::ManifestUnknown { .. } | OciError::NotAccepted { .. } => {
                (OciCode::ManifestUnknown, StatusCode::NOT_FOUND)
            }
            OciError::BlobUnknown { .. } => (OciCode::BlobUnknown, StatusCode::NOT_FOUND),
            OciError::Unsupported(_) => (OciCode::Unsupported, StatusCode::METHOD_NOT_ALLOWED),
        }
    }
}

impl IntoResponse for OciError {
    fn into_response(self) -> Response {
        let (code, status) = self.code();
        oci_error(status, code.as_str(), &self.to_string())
    }
}
