//! The S3 backend of [`BlobStore`]: blobs and manifests as objects under
//! `s3://BUCKET/PREFIX/`, with the keys of [`super::layout`], through the
//! `object_store` crate (no S3 code of our own).
//!
//! Invariant: a blob object appears under its key only when the bytes sent
//! hashed to that sha256 and numbered exactly its size: a small blob is
//! held in memory, checked, then put in one request; a large one streams
//! into a multipart upload that is completed only after the check and
//! aborted otherwise (an uncompleted upload is not an object). Callers on
//! plain threads use the blocking methods (they run the request on the
//! runtime given at [`S3Blobs::connect`]); the server streams with
//! [`S3Blobs::stream`] from inside that runtime.

use std::io::Read;
use std::ops::Range;
use std::sync::Arc;

use bytes::Bytes;
use futures_util::StreamExt as _;
use futures_util::stream::BoxStream;
use llmgw_shared::Sha256;
use object_store::aws::{AmazonS3, AmazonS3Builder};
use object_store::path::Path as ObjPath;
use object_store::{
    GetOptions, GetRange, ObjectStore, ObjectStoreExt as _, PutMode, PutOptions, PutPayload,
    WriteMultipart,
};
use sha2::Digest as _;
use tokio::runtime::Handle;

use super::backend::{BlobMeta, BlobStore, Put, hex_of};
use super::{StoreError, layout};

/// Blobs up to this size are checked in memory and put in one request;
/// larger ones go up as a multipart upload of parts this size (S3 wants
/// every part but the last to be at least 5 MiB).
pub const PART: usize = 8 << 20;

/// Parts of one blob in flight at once.
const PARTS_IN_FLIGHT: usize = 4;

/// Where an S3 store is and how to reach it. Credentials and anything
/// not given here come from the usual `AWS_*` variables.
#[derive(Debug, Clone, Default)]
pub struct S3Config {
    /// `s3://BUCKET/PREFIX` (the prefix may be empty).
    pub url: String,
    /// The server's URL (`http://rgw.example:8080`); path-style requests
    /// are always used, as on-site servers (Ceph RGW, Garage, MinIO) want.
    pub endpoint: Option<String>,
    pub region: Option<String>,
    /// An access key id and secret, for callers that hold them (a test);
    /// the CLI leaves them to `AWS_ACCESS_KEY_ID` and `AWS_SECRET_ACCESS_KEY`.
    pub credentials: Option<(String, String)>,
    /// `--blob-delivery presigned`: the S3 endpoint nodes reach (it may
    /// differ from the one the mirror uses), and how long a URL lasts.
    pub presign: Option<(String, std::time::Duration)>,
}

/// The bucket and prefix of an `s3://` URL, checked.
fn parse_url(url: &str) -> Result<(String, String), StoreError> {
    let bad = |reason: &'static str| StoreError::S3Url {
        url: url.to_string(),
        reason,
    };
    let rest = url
        .strip_prefix("s3://")
        .ok_or_else(|| bad("it does not start with s3://"))?;
    let (bucket, prefix) = rest.split_once('/').unwrap_or((rest, ""));
    if bucket.is_empty()
        || !bucket
            .bytes()
            .all(|b| b.is_ascii_lowercase() || b.is_ascii_digit() || b == b'-' || b == b'.')
    {
        return Err(bad(
            "the bucket name is empty or has characters other than a-z, 0-9, '-' and '.'",
        ));
    }
    let prefix = prefix.trim_end_matches('/');
    if !prefix.is_empty()
        && !prefix.split('/').all(|p| {
            !p.is_empty()
                && p != "."
                && p != ".."
                && p.bytes()
                    .all(|b| b.is_ascii_alphanumeric() || matches!(b, b'-' | b'_' | b'.'))
        })
    {
        return Err(bad(
            "the prefix has an empty, '.' or '..' part, or characters other than \
             A-Z, a-z, 0-9, '-', '_' and '.'",
        ));
    }
    Ok((bucket.to_string(), prefix.to_string()))
}

/// A store's blobs and manifests in a bucket.
#[derive(Debug, Clone)]
pub struct S3Blobs {
    inner: Arc<AmazonS3>,
    /// `s3://BUCKET/PREFIX` as given, for messages.
    url: String,
    prefix: String,
    rt: Handle,
    /// A client for the public endpoint, used only to sign URLs (signing
    /// sends nothing), and how long they last.
    presign: Option<(Arc<AmazonS3>, std::time::Duration)>,
    /// The replica's read-through cache of whole blobs, if any.
    cache: Option<Arc<super::s3_cache::BlobCache>>,
}

fn remote(op: &'static str, url: String) -> impl FnOnce(object_store::Error) -> StoreError {
    move |source| StoreError::Remote { op, url, source }
}

impl S3Blobs {
    /// A client for the store at `cfg.url`; nothing is sent yet. Requests
    /// run on `rt`.
    pub fn connect(cfg: &S3Config, rt: Handle) -> Result<Self, StoreError> {
        let (bucket, prefix) = parse_url(&cfg.url)?;
        let mut b = AmazonS3Builder::from_env()
            .with_bucket_name(bucket)
            .with_virtual_hosted_style_request(false);
        if let Some(e) = &cfg.endpoint {
            // An on-site server on plain HTTP is the operator's choice:
            // the endpoint's scheme says it.
            b = b.with_allow_http(e.starts_with("http://")).with_endpoint(e);
        }
        if let Some(r) = &cfg.region {
            b = b.with_region(r);
        }
        if let Some((id, secret)) = &cfg.credentials {
            b = b.with_access_key_id(id).with_secret_access_key(secret);
        }
        let presign = match &cfg.presign {
            None => None,
            Some((public, ttl)) => {
                let signer = b
                    .clone()
                    .with_allow_http(public.starts_with("http://"))
                    .with_endpoint(public)
                    .build()
                    .map_err(remote("configuring", public.clone()))?;
                Some((Arc::new(signer), *ttl))
            }
        };
        let inner = b.build().map_err(remote("configuring", cfg.url.clone()))?;
        Ok(Self {
            inner: Arc::new(inner),
            url: cfg.url.trim_end_matches('/').to_string(),
            prefix,
            rt,
            presign,
            cache: None,
        })
    }

    /// `s3://BUCKET/PREFIX`.
    pub fn url(&self) -> &str {
        &self.url
    }

    /// The object path of a store key.
    fn path(&self, key: &str) -> ObjPath {
        if self.prefix.is_empty() {
            ObjPath::from(key)
        } else {
            ObjPath::from(format!("{}/{key}", self.prefix))
        }
    }

    /// The store key of an object path, when it is under the prefix.
    fn key_of(&self, path: &ObjPath) -> Option<String> {
        let p = path.as_ref();
        if self.prefix.is_empty() {
            return Some(p.to_string());
        }
        p.strip_prefix(&self.prefix)?
            .strip_prefix('/')
            .map(str::to_string)
    }

    /// The URL of a store key, for messages.
    pub fn key_url(&self, key: &str) -> String {
        format!("{}/{key}", self.url)
    }

    fn block_on<F: std::future::Future>(&self, f: F) -> F::Output {
        self.rt.block_on(f)
    }

    /// Every object under `dir/` (a store folder's key; `""` for the whole
    /// store), with its store key, size and time, sorted by key.
    pub fn list_keys(&self, dir: &str) -> Result<Vec<(String, BlobMeta)>, StoreError> {
        let prefix = match (dir.is_empty(), self.prefix.is_empty()) {
            (true, true) => ObjPath::default(),
            (true, false) => ObjPath::from(self.prefix.as_str()),
            (false, _) => self.path(dir),
        };
        let mut out = self.block_on(async {
            let mut items = Vec::new();
            let mut s = self.inner.list(Some(&prefix));
            while let Some(m) = s.next().await {
                let m = m.map_err(remote("listing", self.key_url(dir)))?;
                if let Some(k) = self.key_of(&m.location) {
                    items.push((
                        k,
                        BlobMeta {
                            size: m.size,
                            modified: Some(m.last_modified.into()),
                        },
                    ));
                }
            }
            Ok::<_, StoreError>(items)
        })?;
        out.sort_by(|a, b| a.0.cmp(&b.0));
        Ok(out)
    }

    /// A small object's bytes, at most `max` of them; `None` when absent.
    pub fn get_small(&self, key: &str, max: u64) -> Result<Option<Vec<u8>>, StoreError> {
        let url = self.key_url(key);
        let got = self.block_on(async {
            match self.inner.get(&self.path(key)).await {
                Err(object_store::Error::NotFound { .. }) => Ok(None),
                Err(e) => Err(remote("reading", url.clone())(e)),
                Ok(r) if r.meta.size > max => Err(StoreError::TooLarge {
                    path: url.clone().into(),
                    max,
                }),
                Ok(r) => r
                    .bytes()
                    .await
                    .map(|b| Some(b.to_vec()))
                    .map_err(remote("reading", url.clone())),
            }
        })?;
        Ok(got)
    }

    /// Writes a small object whole (one request: it is visible complete
    /// or not at all).
    pub fn put_small(&self, key: &str, bytes: Vec<u8>) -> Result<(), StoreError> {
        self.block_on(self.inner.put(&self.path(key), PutPayload::from(bytes)))
            .map(drop)
            .map_err(remote("writing", self.key_url(key)))
    }

    /// Writes a small object only if none is there: `Ok(false)` when one
    /// is (S3's `If-None-Match: *`).
    pub fn create_small(&self, key: &str, bytes: Vec<u8>) -> Result<bool, StoreError> {
        let opts = PutOptions {
            mode: PutMode::Create,
            ..Default::default()
        };
        match self.block_on(
            self.inner
                .put_opts(&self.path(key), PutPayload::from(bytes), opts),
        ) {
            Ok(_) => Ok(true),
            Err(object_store::Error::AlreadyExists { .. })
            | Err(object_store::Error::Precondition { .. }) => Ok(false),
            Err(e) => Err(remote("creating", self.key_url(key))(e)),
        }
    }

    /// How long ago the object was last written (by the S3 server's clock
    /// against this machine's), or `None` when it is not there.
    pub fn key_age(&self, key: &str) -> Result<Option<std::time::Duration>, StoreError> {
        match self.block_on(self.inner.head(&self.path(key))) {
            Ok(m) => {
                let written: std::time::SystemTime = m.last_modified.into();
                Ok(Some(written.elapsed().unwrap_or_default()))
            }
            Err(object_store::Error::NotFound { .. }) => Ok(None),
            Err(e) => Err(remote("looking up", self.key_url(key))(e)),
        }
    }

    /// Removes an object; one already gone is not an error.
    pub fn delete_key(&self, key: &str) -> Result<(), StoreError> {
        match self.block_on(self.inner.delete(&self.path(key))) {
            Ok(()) | Err(object_store::Error::NotFound { .. }) => Ok(()),
            Err(e) => Err(remote("deleting", self.key_url(key))(e)),
        }
    }

    /// The bytes `range` of a blob as a stream, for the server (run it on
    /// the runtime given at [`S3Blobs::connect`]).
    pub async fn stream(
        &self,
        sha256: &Sha256,
        range: Range<u64>,
    ) -> Result<BoxStream<'static, Result<Bytes, StoreError>>, StoreError> {
        let key = layout::blob_key(sha256);
        let url = self.key_url(&key);
        if range.is_empty() {
            return Ok(futures_util::stream::empty().boxed());
        }
        let opts = GetOptions {
            range: Some(GetRange::Bounded(range)),
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

    /// Serves blobs through a read-through cache in `dir`.
    pub fn with_cache(mut self, dir: impl Into<std::path::PathBuf>) -> Self {
        self.cache = Some(Arc::new(super::s3_cache::BlobCache::new(dir)));
        self
    }

    /// The read-through cache, if any.
    pub fn cache(&self) -> Option<&Arc<super::s3_cache::BlobCache>> {
        self.cache.as_ref()
    }

    /// Whether GETs of blobs are answered with a redirect to a presigned
    /// URL ([`S3Blobs::presigned_get`]) rather than streamed.
    pub fn presigns(&self) -> bool {
        self.presign.is_some()
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

    /// Hashes `reader` into a multipart upload, completing it only when
    /// it is `size` bytes hashing to `sha256`.
    async fn put_large(
        &self,
        sha256: &Sha256,
        size: u64,
        reader: &mut dyn Read,
    ) -> Result<(), StoreError> {
        let key = layout::blob_key(sha256);
        let url = self.key_url(&key);
        let upload = self
            .inner
            .put_multipart(&self.path(&key))
            .await
            .map_err(remote("starting the upload of", url.clone()))?;
        let mut w = WriteMultipart::new_with_chunk_size(upload, PART);
        let mut hasher = sha2::Sha256::new();
        let mut n = 0u64;
        let mut buf = vec![0u8; 1 << 20];
        let mut limited = reader.take(size + 1);
        let read: Result<(), StoreError> = async {
            loop {
                // A plain thread blocked on this future: reading here
                // blocks no runtime worker.
                let k = match limited.read(&mut buf) {
                    Ok(0) => return Ok(()),
                    Ok(k) => k,
                    Err(e) if e.kind() == std::io::ErrorKind::Interrupted => continue,
                    Err(e) => return Err(StoreError::io(url.clone(), e)),
                };
                hasher.update(&buf[..k]);
                n += k as u64;
                w.wait_for_capacity(PARTS_IN_FLIGHT)
                    .await
                    .map_err(remote("uploading", url.clone()))?;
                w.write(&buf[..k]);
            }
        }
        .await;
        let actual = hex_of(hasher);
        let checked = read.and_then(|()| {
            if actual == sha256.as_str() && n == size {
                Ok(())
            } else {
                Err(StoreError::BlobMismatch {
                    key: url.clone(),
                    expected: sha256.to_string(),
                    expected_size: size,
                    actual,
                    actual_size: n,
                })
            }
        });
        match checked {
            Ok(()) => w
                .finish()
                .await
                .map(drop)
                .map_err(remote("completing the upload of", url)),
            Err(e) => {
                // Aborted, so no part of it is ever an object; a failed
                // abort leaves parts a lifecycle rule removes, still
                // invisible.
                if let Err(abort) = w.abort().await {
                    tracing::warn!(blob = %sha256, error = %abort, "aborting a refused upload failed");
                }
                Err(e)
            }
        }
    }
}

impl BlobStore for S3Blobs {
    fn head(&self, sha256: &Sha256) -> Result<Option<BlobMeta>, StoreError> {
        let key = layout::blob_key(sha256);
        match self.block_on(self.inner.head(&self.path(&key))) {
            Ok(m) => Ok(Some(BlobMeta {
                size: m.size,
                modified: Some(m.last_modified.into()),
            })),
            Err(object_store::Error::NotFound { .. }) => Ok(None),
            Err(e) => Err(remote("looking up", self.key_url(&key))(e)),
        }
    }

    fn read(&self, sha256: &Sha256, range: Range<u64>) -> Result<Box<dyn Read + Send>, StoreError> {
        let stream = self.block_on(self.stream(sha256, range))?;
        Ok(Box::new(StreamReader {
            stream,
            rt: self.rt.clone(),
            chunk: Bytes::new(),
        }))
    }

    fn put_blob(
        &self,
        sha256: &Sha256,
        size: u64,
        reader: &mut dyn Read,
    ) -> Result<Put, StoreError> {
        if self.head(sha256)?.is_some_and(|m| m.size == size) {
            return Ok(Put::Held);
        }
        let key = layout::blob_key(sha256);
        if size > PART as u64 {
            self.block_on(self.put_large(sha256, size, reader))?;
            return Ok(Put::Added);
        }
        let mut bytes = Vec::new();
        reader
            .take(size + 1)
            .read_to_end(&mut bytes)
            .map_err(|e| StoreError::io(self.key_url(&key), e))?;
        let actual = llmgw_shared::sha256_hex(&bytes);
        if actual != sha256.as_str() || bytes.len() as u64 != size {
            return Err(StoreError::BlobMismatch {
                key: self.key_url(&key),
                expected: sha256.to_string(),
                expected_size: size,
                actual,
                actual_size: bytes.len() as u64,
            });
        }
        self.put_small(&key, bytes)?;
        Ok(Put::Added)
    }

    fn list_blobs(&self) -> Result<Vec<(Sha256, BlobMeta)>, StoreError> {
        Ok(self
            .list_keys(layout::BLOBS)?
            .into_iter()
            .filter_map(|(k, m)| layout::blob_of_key(&k).map(|s| (s, m)))
            .collect())
    }

    fn delete_blob(&self, sha256: &Sha256) -> Result<(), StoreError> {
        self.delete_key(&layout::blob_key(sha256))
    }

    fn list_bundles(&self) -> Result<Vec<Sha256>, StoreError> {
        Ok(self
            .list_keys(layout::BUNDLES)?
            .into_iter()
            .filter_map(|(k, _)| layout::bundle_of_key(&k))
            .collect())
    }

    fn put_manifest(&self, manifest_sha256: &Sha256, bytes: &[u8]) -> Result<(), StoreError> {
        self.put_small(&layout::bundle_key(manifest_sha256), bytes.to_vec())
    }
}

/// A blob's byte stream as a [`Read`], for callers on plain threads.
struct StreamReader {
    stream: BoxStream<'static, Result<Bytes, StoreError>>,
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

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn urls_name_a_bucket_and_a_safe_prefix() {
        assert_eq!(
            parse_url("s3://models/site-a/store/").unwrap(),
            ("models".into(), "site-a/store".into())
        );
        assert_eq!(
            parse_url("s3://models").unwrap(),
            ("models".into(), "".into())
        );
        for bad in [
            "models/x",
            "s3:///x",
            "s3://Models/x",
            "s3://m/../x",
            "s3://m/a//b",
            "s3://m/a b",
        ] {
            assert!(parse_url(bad).is_err(), "{bad}");
        }
    }
}
