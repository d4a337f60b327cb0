//! Why a store operation failed. The enum lives apart from the store so
//! that the file helpers below the store ([`crate::store::fsutil`]) can answer
//! with it without importing the store that uses them.
//!
//! Invariant: each variant names the path or URL it is about and what to
//! do; a cause is a `#[source]`, printed by the chain, never pasted in.

use std::path::PathBuf;

use llmgw_shared::manifest::ManifestError;
use thiserror::Error;

use super::state_file::{StateFault, StateFile};

#[derive(Debug, Error)]
pub enum StoreError {
    /// The cause is printed after the path by the chain (`path: cause`).
    #[error("{path}")]
    Io {
        path: PathBuf,
        #[source]
        source: std::io::Error,
    },
    /// The parser's message is printed (escaped) by the chain.
    #[error("{path}")]
    BadManifest {
        path: PathBuf,
        #[source]
        source: ManifestError,
    },
    #[error(
        "{path} is named for manifest sha256 {expected} but its bytes hash to {actual}; \
         the store was changed by hand or the disk is damaged: run `llmgw mirror verify`"
    )]
    ManifestHash {
        path: PathBuf,
        expected: String,
        actual: String,
    },
    #[error(
        "the store is busy: another llmgw import, gc, remove, trust change or mirror verify \
         holds {path}; wait for it to finish and run {what} again"
    )]
    Busy { path: PathBuf, what: String },
    #[error(
        "{path} is larger than {max} bytes (or has no end, like /dev/zero); it is not the small \
         file expected here"
    )]
    TooLarge { path: PathBuf, max: u64 },
    #[error(
        "{key} was refused: it should be {expected_size} bytes with sha256 {expected} but \
         {actual_size} bytes hashing to {actual} were read; nothing was stored under that name"
    )]
    BlobMismatch {
        key: String,
        expected: String,
        expected_size: u64,
        actual: String,
        actual_size: u64,
    },
    #[error("{op} {url}")]
    Remote {
        op: &'static str,
        url: String,
        #[source]
        source: object_store::Error,
    },
    #[error("{url:?} is not an S3 store address ({reason}); give s3://BUCKET/PREFIX")]
    S3Url { url: String, reason: &'static str },
    #[error(
        "the store {url} is busy: {holder} holds its lock object {lock}; wait for it to finish \
         (a holder renews it while it works: if that process is gone, its lock is taken over \
         once it has gone {lease_seconds} s without renewal; or delete {lock} and run the \
         command again)"
    )]
    RemoteBusy {
        url: String,
        lock: String,
        holder: String,
        lease_seconds: u64,
    },
    /// serde_json's words, where it has any, are printed by the chain.
    #[error("{path} is damaged: {fault}; {}", file.remedy())]
    BadState {
        path: PathBuf,
        file: StateFile,
        fault: StateFault,
        #[source]
        cause: Option<serde_json::Error>,
    },
}

impl StoreError {
    pub fn io(path: impl Into<PathBuf>, source: std::io::Error) -> Self {
        StoreError::Io {
            path: path.into(),
            source,
        }
    }
}
