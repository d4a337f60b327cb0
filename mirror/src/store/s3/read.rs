//! Reading blobs out of the bucket: streamed for the server, as a plain
//! [`Read`] for callers on threads, or handed to the client as a presigned
//! URL.
//!
//! Invariant: a blob is read in chunks as the server sends them, at most
//! one held at a time by a reader ([`StreamReader`]), so reading a blob of
//! any size takes bounded memory; only a GET is ever presigned.

use std::io::Read;
use std::ops::Range;

use bytes::Bytes;
use futures_util::StreamExt as _;
use futures_util::stream::BoxStream;
use llmgw_shared::Sha256;
use object_store::{GetOptions, GetRange, ObjectStore};
use tokio::runtime::Handle;

use super::super::{StoreError, layout};
use super::{S3Blobs, remote};

/// A blob's bytes as they come from the server.
pub type BlobStream = BoxStream<'static, Result<Bytes, StoreError>>;

impl S3Blobs {
    /// The bytes `range` of a blob as a stream, for the server (run it on
    /// the runtime given at [`S3Blobs::connect`]).
    pub async fn stream(
        &self,
        sha256: &Sha256,
        range: Range<u64>,
    ) -> Result<BlobStream, StoreError> {
        if range.is_empty() {
            return Ok(futures_util::stream::empty().boxed());
        }
        self.get(sha256, Some(GetRange::Bounded(range))).await
    }

    /// The blob's object as a stream, whole, whatever its length.
    async fn get(
        &self,
        sha256: &Sha256,
        range: Option<GetRange>,
    ) -> Result<BlobStream, StoreError> {
        let key = layout::blob_key(sha256);
        let url = self.key_url(&key);
        let opts = GetOptions {
            range,
            ..Default::default()
        };
        let got = self
            .inner
            .get_opts(&self.path(&key), opts)
            .await
            .map_err(remote("reading", url.clone()))?;
        Ok(got
            .into_stream()
            .map(move |c| c.map_err(remote("reading", url.clone())))
            .boxed())
    }

    /// The bytes `range` of a blob, or the whole object when `range` is
    /// `None`, as a [`Read`] for a plain thread (blocking).
    pub(super) fn reader(
        &self,
        sha256: &Sha256,
        range: Option<Range<u64>>,
    ) -> Result<Box<dyn Read + Send>, StoreError> {
        let stream = match range {
            Some(r) => self.block_on(self.stream(sha256, r))?,
            None => self.block_on(self.get(sha256, None))?,
        };
        Ok(Box::new(StreamReader {
            stream,
            rt: self.rt.clone(),
            chunk: Bytes::new(),
        }))
    }

    /// A short-lived presigned GET of a blob on the public endpoint, or
    /// `None` when presigning is off. Only GET is signed: a HEAD sent to it
    /// would be refused, which is why the mirror answers HEAD itself.
    pub async fn presigned_get(&self, sha256: &Sha256) -> Result<Option<String>, StoreError> {
        use object_store::signer::Signer as _;
        let Some((signer, ttl)) = &self.presign else {
            return Ok(None);
        };
        let key = layout::blob_key(sha256);
        signer
            .signed_url(object_store::signer::Method::GET, &self.path(&key), *ttl)
            .await
            .map(|u| Some(u.to_string()))
            .map_err(remote("signing a URL for", self.key_url(&key)))
    }
}

/// A blob's byte stream as a [`Read`], for callers on plain threads.
struct StreamReader {
    stream: BlobStream,
    rt: Handle,
    chunk: Bytes,
}

impl Read for StreamReader {
    fn read(&mut self, buf: &mut [u8]) -> std::io::Result<usize> {
        while self.chunk.is_empty() {
            match self.rt.block_on(self.stream.next()) {
                None => return Ok(0),
                Some(Ok(c)) => self.chunk = c,
                Some(Err(e)) => return Err(std::io::Error::other(e)),
            }
        }
        let n = buf.len().min(self.chunk.len());
        buf[..n].copy_from_slice(&self.chunk.split_to(n));
        Ok(n)
    }
}
