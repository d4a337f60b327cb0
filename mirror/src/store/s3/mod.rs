//! A store's blobs and manifests as objects under `s3://BUCKET/PREFIX/`,
//! with the keys of [`super::layout`], through the `object_store` crate (no
//! S3 code of our own). The client and how store keys become object paths
//! are here; [`config`] reads the address, [`objects`] works on objects by
//! key, [`read`] takes blobs out, [`blobs`] is the [`super::backend::BlobStore`]
//! backend and its hashed upload.
//!
//! Invariant: every object this client touches is named by a store key
//! under its prefix ([`S3Blobs::path`]), and only objects under the prefix
//! are read back as keys ([`S3Blobs::key_of`]). Callers on plain threads
//! use the blocking methods (they run the request on the runtime given at
//! [`S3Blobs::connect`]); the server streams with [`S3Blobs::stream`] from
//! inside that runtime.

mod blobs;
mod config;
mod objects;
mod read;

use std::sync::Arc;

use object_store::aws::{AmazonS3, AmazonS3Builder};
use object_store::path::Path as ObjPath;
use tokio::runtime::Handle;

use super::StoreError;

pub use config::S3Config;
pub use read::BlobStream;

/// Blobs up to this size are checked in memory and put in one request;
/// larger ones go up as a multipart upload of parts this size (S3 wants
/// every part but the last to be at least 5 MiB).
pub const PART: usize = 8 << 20;

/// Parts of one blob in flight at once.
const PARTS_IN_FLIGHT: usize = 4;

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
        let (bucket, prefix) = config::parse_url(&cfg.url)?;
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

    /// Serves blobs through a read-through cache in `dir`, of at most
    /// `limit` bytes when given. Blocking: what the folder holds is counted
    /// (`BlobCache::open_dir`).
    pub fn with_cache(
        mut self,
        dir: impl Into<std::path::PathBuf>,
        limit: Option<u64>,
    ) -> Result<Self, StoreError> {
        let cache = super::s3_cache::BlobCache::open_dir(dir, limit)?;
        self.cache = Some(Arc::new(cache));
        Ok(self)
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
}
