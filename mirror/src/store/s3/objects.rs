//! Objects by store key: listings, the small files a work folder copies
//! (manifests, state, trust), and the lock object.
//!
//! Invariant: a small object is read only up to its bound (its listed size
//! is checked before the body is read) and written whole in one request,
//! so it is visible complete or not at all; an absent object is `None`
//! (or, for a delete, done), never an error.

use futures_util::StreamExt as _;
use object_store::path::Path as ObjPath;
use object_store::{ObjectStore, ObjectStoreExt as _, PutMode, PutOptions, PutPayload};

use super::super::StoreError;
use super::super::backend::BlobMeta;
use super::{S3Blobs, remote};

impl S3Blobs {
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
}
