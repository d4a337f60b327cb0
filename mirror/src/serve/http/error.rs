//! Why a blob a held bundle names cannot be sent: the store's fault, never
//! the client's, answered as a 500 (or a 404 once its bundle is gone).

use std::io;

use axum::response::{IntoResponse, Response};
use http::StatusCode;
use llmgw_shared::Sha256;
use thiserror::Error;

use super::respond::text;
use crate::store::StoreError;
use crate::store::open_blob::OpenBlobError;

/// Why a blob a held bundle names cannot be sent. Each is the store's
/// fault, never the client's: a 500 whose text names the blob and what to
/// run, logged once, where it becomes the response.
#[derive(Debug, Error)]
pub enum BlobError {
    /// Asked for a presigned URL of a store that signs none (a bug: only
    /// a store that presigns is asked).
    #[error("this store has no presigned delivery configured")]
    NoPresign,
    #[error(
        "blob {sha256} is {actual} bytes in the store but its manifest says {expected}; \
         the store is damaged: run `llmgw mirror verify`"
    )]
    WrongSize {
        sha256: Sha256,
        expected: u64,
        actual: u64,
    },
    #[error("blob {sha256} named by a held bundle cannot be read; run `llmgw mirror verify`")]
    Unreadable {
        sha256: Sha256,
        #[source]
        source: io::Error,
    },
    /// The blob's file is gone and a bundle the index holds was removed
    /// since: the blob went with it (see `files::removed_since`).
    #[error(
        "blob {sha256} is no longer held: a bundle that named it was removed from the store; \
         list what is held with GET / or `llmgw mirror list`"
    )]
    NoLongerHeld { sha256: Sha256 },
    #[error(
        "blob {sha256} named by a held bundle cannot be read from object storage; \
         run `llmgw mirror verify`"
    )]
    Remote {
        sha256: Sha256,
        #[source]
        source: StoreError,
    },
    #[error("cannot presign a URL for blob {sha256}")]
    Presign {
        sha256: Sha256,
        #[source]
        source: StoreError,
    },
}

impl BlobError {
    /// Why the store could not open blob `sha256`, said of it.
    pub(crate) fn opening(sha256: &Sha256, e: OpenBlobError) -> Self {
        let sha256 = sha256.clone();
        match e {
            OpenBlobError::NoPresign => BlobError::NoPresign,
            OpenBlobError::Presign(source) => BlobError::Presign { sha256, source },
            OpenBlobError::WrongSize { expected, actual } => BlobError::WrongSize {
                sha256,
                expected,
                actual,
            },
            OpenBlobError::Unreadable(source) => BlobError::Unreadable { sha256, source },
        }
    }
}

impl IntoResponse for BlobError {
    /// The text clients get puts the cause in brackets before the fix,
    /// where a reader of `curl` output or a client's error looks.
    fn into_response(self) -> Response {
        let body = match &self {
            BlobError::NoPresign => format!("{self}\n"),
            BlobError::WrongSize {
                sha256,
                expected,
                actual,
            } => {
                tracing::error!(blob = %sha256, expected, actual, "blob has the wrong size");
                format!("{self}\n")
            }
            BlobError::Unreadable { sha256, source } => {
                tracing::error!(blob = %sha256, error = %source, "blob unreadable");
                format!(
                    "blob {sha256} named by a held bundle cannot be read ({source}); \
                     run `llmgw mirror verify`\n"
                )
            }
            BlobError::NoLongerHeld { sha256 } => {
                tracing::info!(blob = %sha256, "blob removed with its bundle; index not yet reloaded");
                return text(StatusCode::NOT_FOUND, format!("{self}\n"));
            }
            BlobError::Remote { sha256, source } => {
                let e = llmgw_shared::chain(source);
                tracing::error!(blob = %sha256, error = %e, "blob unreadable in the bucket");
                format!(
                    "blob {sha256} named by a held bundle cannot be read from object storage \
                     ({e}); run `llmgw mirror verify`\n"
                )
            }
            BlobError::Presign { sha256, source } => {
                let e = llmgw_shared::chain(source);
                tracing::error!(blob = %sha256, error = %e, "cannot presign");
                format!("cannot presign a URL for blob {sha256} ({e})\n")
            }
        };
        text(StatusCode::INTERNAL_SERVER_ERROR, body)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn answer(e: BlobError) -> (StatusCode, String) {
        let r = e.into_response();
        let status = r.status();
        let rt = tokio::runtime::Builder::new_current_thread()
            .build()
            .unwrap();
        let body = rt
            .block_on(axum::body::to_bytes(r.into_body(), 1 << 16))
            .unwrap();
        (status, String::from_utf8(body.to_vec()).unwrap())
    }

    #[test]
    fn a_blob_that_cannot_be_sent_is_a_500_naming_it_and_the_fix() {
        let sha = Sha256::of(b"x");
        let (status, body) = answer(BlobError::WrongSize {
            sha256: sha.clone(),
            expected: 10,
            actual: 5,
        });
        assert_eq!(status, StatusCode::INTERNAL_SERVER_ERROR);
        assert_eq!(
            body,
            format!(
                "blob {sha} is 5 bytes in the store but its manifest says 10; the store is \
                 damaged: run `llmgw mirror verify`\n"
            )
        );

        let gone = || io::Error::new(io::ErrorKind::NotFound, "gone");
        let (status, body) = answer(BlobError::Unreadable {
            sha256: sha.clone(),
            source: gone(),
        });
        assert_eq!(status, StatusCode::INTERNAL_SERVER_ERROR);
        assert_eq!(
            body,
            format!(
                "blob {sha} named by a held bundle cannot be read (gone); run `llmgw mirror \
                 verify`\n"
            )
        );
        // As an error, the cause is its source, not in its message.
        let e = BlobError::Unreadable {
            sha256: sha.clone(),
            source: gone(),
        };
        assert!(!e.to_string().contains("gone"), "{e}");
        assert_eq!(
            llmgw_shared::chain(&e),
            format!(
                "blob {sha} named by a held bundle cannot be read; run `llmgw mirror verify`: gone"
            )
        );

        let (status, body) = answer(BlobError::NoPresign);
        assert_eq!(status, StatusCode::INTERNAL_SERVER_ERROR);
        assert_eq!(body, "this store has no presigned delivery configured\n");
    }

    #[test]
    fn a_blob_removed_with_its_bundle_is_a_404_naming_it() {
        let sha = Sha256::of(b"x");
        let (status, body) = answer(BlobError::NoLongerHeld {
            sha256: sha.clone(),
        });
        assert_eq!(status, StatusCode::NOT_FOUND);
        assert!(
            body.contains(&format!("blob {sha} is no longer held")),
            "{body}"
        );
    }
}
