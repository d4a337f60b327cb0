//! Where a held blob's bytes are sent from, whatever keeps the store: a
//! file (the store's folder, or a replica's cached copy of a bucket's
//! object), the bucket's object streamed through, or a redirect to a
//! presigned URL — as distribution's storage driver answers `RedirectURL`.
//!
//! Invariant: the server never asks which backend a store is; it asks
//! [`Store::open_blob`] and sends what it answers. No file is opened on an
//! async worker: a file is opened (and its size checked against the size
//! the caller knows) on the blocking pool.

use std::fs::File;
use std::io;

use llmgw_shared::Sha256;
use thiserror::Error;

use super::s3::{BlobStream, S3Blobs};
use super::{Store, StoreError};

/// What a blob is opened for.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Ask {
    /// A HEAD: only whether it is there and its size; a cache is not
    /// filled for it.
    Head,
    /// A GET of the blob itself: a store that presigns redirects it (GET
    /// only: clients read metadata from HEAD, and one that follows a
    /// redirect keeping HEAD would be refused by a GET signature).
    Get,
}

/// How a held blob is sent.
pub enum OpenedBlob {
    /// Its bytes, through this server.
    Bytes(BlobBytes),
    /// A short-lived presigned URL to send the client to.
    Redirect(String),
}

/// Where a held blob's bytes come from.
pub enum BlobBytes {
    /// A file of the right size, opened.
    File(File),
    /// The bucket's object, to be streamed.
    Remote(RemoteBlob),
}

/// A blob in a bucket, to be streamed from it.
pub struct RemoteBlob(S3Blobs);

impl RemoteBlob {
    /// The bytes `range` of blob `sha256` as a stream.
    pub async fn stream(
        &self,
        sha256: &Sha256,
        range: std::ops::Range<u64>,
    ) -> Result<BlobStream, StoreError> {
        self.0.stream(sha256, range).await
    }
}

/// Why a held blob cannot be opened.
#[derive(Debug, Error)]
pub enum OpenBlobError {
    /// Asked for a presigned URL of a store that signs none.
    #[error("this store has no presigned delivery configured")]
    NoPresign,
    /// The bucket would not sign a URL for it.
    #[error("cannot presign a URL for the blob")]
    Presign(#[source] StoreError),
    /// Its file is not the size the caller knows.
    #[error("the blob's file is {actual} bytes, not {expected}")]
    WrongSize {
        /// The size the caller knows.
        expected: u64,
        /// The file's size.
        actual: u64,
    },
    /// Its file cannot be opened.
    #[error("the blob's file cannot be read")]
    Unreadable(#[source] io::Error),
}

impl Store {
    /// Opens held blob `sha256` of `size` bytes for `ask`: a redirect to
    /// a presigned URL for a [`Ask::Get`] where the store presigns, else
    /// its bytes ([`Store::blob_bytes`]; a HEAD fills no cache).
    pub async fn open_blob(
        &self,
        sha256: &Sha256,
        size: u64,
        ask: Ask,
    ) -> Result<OpenedBlob, OpenBlobError> {
        if let Some(s3) = &self.bucket
            && ask == Ask::Get
            && s3.presigns()
        {
            let signed = s3
                .presigned_get(sha256)
                .await
                .map_err(OpenBlobError::Presign)?;
            return signed
                .map(OpenedBlob::Redirect)
                .ok_or(OpenBlobError::NoPresign);
        }
        let fill = ask == Ask::Get;
        self.blob_bytes(sha256, size, fill)
            .await
            .map(OpenedBlob::Bytes)
    }

    /// Held blob `sha256`'s bytes, sent through this server whatever the
    /// store (the bytes of one part of a larger answer are never
    /// redirected): in a folder store its file; in a bucket store the
    /// replica's cached copy (a miss starts filling the cache, once per
    /// blob, when `fill`), else the object to stream.
    pub async fn blob_bytes(
        &self,
        sha256: &Sha256,
        size: u64,
        fill: bool,
    ) -> Result<BlobBytes, OpenBlobError> {
        let Some(s3) = &self.bucket else {
            return open_checked(self.blob_file(sha256), size)
                .await
                .map(BlobBytes::File);
        };
        Ok(match cached(s3, sha256, size, fill).await {
            Some(f) => BlobBytes::File(f),
            None => BlobBytes::Remote(RemoteBlob(s3.clone())),
        })
    }
}

/// The replica's cached copy of a blob, opened on the blocking pool; on a
/// miss, `fill` starts filling the cache (once per blob), the blob being
/// streamed from the bucket meanwhile.
async fn cached(s3: &S3Blobs, sha256: &Sha256, size: u64, fill: bool) -> Option<File> {
    let cache = s3.cache()?.clone();
    let (c, h) = (cache.clone(), sha256.clone());
    let hit = tokio::task::spawn_blocking(move || c.open(&h, size))
        .await
        .ok()
        .flatten();
    if hit.is_none() && fill {
        cache.fill(s3, sha256, size);
    }
    hit
}

/// Opens a blob's file on the blocking pool and checks its size.
async fn open_checked(path: std::path::PathBuf, size: u64) -> Result<File, OpenBlobError> {
    let opened = tokio::task::spawn_blocking(move || {
        File::open(&path).and_then(|f| f.metadata().map(|m| (f, m.len())))
    })
    .await
    .unwrap_or_else(|e| Err(io::Error::other(e)));
    match opened {
        Ok((f, len)) if len == size => Ok(f),
        Ok((_, actual)) => Err(OpenBlobError::WrongSize {
            expected: size,
            actual,
        }),
        Err(source) => Err(OpenBlobError::Unreadable(source)),
    }
}
