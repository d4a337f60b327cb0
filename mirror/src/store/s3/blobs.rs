//! The S3 backend of [`BlobStore`]: what the trait asks, as object
//! requests, and the hashed upload of a blob.
//!
//! Invariant: a blob object appears under its key only when the bytes sent
//! hashed to that sha256 and numbered exactly its size: a small blob is
//! held in memory, checked, then put in one request; a large one streams
//! into a multipart upload that is completed only after the check and
//! aborted otherwise (an uncompleted upload is not an object).

use std::io::Read;
use std::ops::Range;

use llmgw_shared::{BundleId, HashReader, Sha256};
use object_store::{ObjectStoreExt as _, WriteMultipart};
use sha2::Digest as _;

use super::super::backend::{BlobMeta, BlobStore, hex_of};
use super::super::{StoreError, layout};
use super::{PART, PARTS_IN_FLIGHT, S3Blobs, remote};

impl S3Blobs {
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
        let mut buf = vec![0u8; 1 << 20];
        let mut hashed = HashReader::new(reader.take(size + 1), sha2::Sha256::new());
        let read: Result<(), StoreError> = async {
            loop {
                // A plain thread blocked on this future: reading here
                // blocks no runtime worker.
                let k = match hashed.read(&mut buf) {
                    Ok(0) => return Ok(()),
                    Ok(k) => k,
                    Err(e) if e.kind() == std::io::ErrorKind::Interrupted => continue,
                    Err(e) => return Err(StoreError::io(url.clone(), e)),
                };
                w.wait_for_capacity(PARTS_IN_FLIGHT)
                    .await
                    .map_err(remote("uploading", url.clone()))?;
                w.write(&buf[..k]);
            }
        }
        .await;
        let n = hashed.len();
        let actual = hex_of(hashed.into_hasher());
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
        self.reader(sha256, Some(range))
    }

    fn read_whole(&self, sha256: &Sha256) -> Result<Box<dyn Read + Send>, StoreError> {
        self.reader(sha256, None)
    }

    fn blob_location(&self, sha256: &Sha256) -> String {
        self.key_url(&layout::blob_key(sha256))
    }

    fn manifest_location(&self, manifest_sha256: &BundleId) -> String {
        self.key_url(&layout::bundle_key(manifest_sha256))
    }

    fn add_blob(&self, sha256: &Sha256, size: u64, from: &mut dyn Read) -> Result<(), StoreError> {
        let key = layout::blob_key(sha256);
        if size > PART as u64 {
            return self.block_on(self.put_large(sha256, size, from));
        }
        let mut bytes = Vec::new();
        from.take(size + 1)
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
        self.put_small(&key, bytes)
    }

    fn list_blobs(&self) -> Result<Vec<(Sha256, BlobMeta)>, StoreError> {
        Ok(self
            .list_keys(layout::BLOBS)?
            .into_iter()
            .filter_map(|(k, m)| layout::blob_of_key(&k).map(|s| (s, m)))
            .collect())
    }

    fn list_strays(&self) -> Result<Vec<String>, StoreError> {
        Ok(self
            .list_keys(layout::BLOBS)?
            .into_iter()
            .filter(|(k, _)| layout::blob_of_key(k).is_none())
            // A key nobody checked: escaped, as it is printed.
            .map(|(k, _)| self.key_url(&llmgw_shared::shown(&k).to_string()))
            .collect())
    }

    fn delete_blob(&self, sha256: &Sha256) -> Result<(), StoreError> {
        self.delete_key(&layout::blob_key(sha256))
    }

    fn list_bundles(&self) -> Result<Vec<BundleId>, StoreError> {
        Ok(self
            .list_keys(layout::BUNDLES)?
            .into_iter()
            .filter_map(|(k, _)| layout::bundle_of_key(&k))
            .collect())
    }

    fn put_manifest(&self, manifest_sha256: &BundleId, bytes: &[u8]) -> Result<(), StoreError> {
        self.put_small(&layout::bundle_key(manifest_sha256), bytes.to_vec())
    }
}
