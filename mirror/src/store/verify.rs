//! `llmgw mirror verify`: re-hash every blob in the store and check every
//! held manifest, to find disk rot or hand edits after import. Reads only.
//!
//! One walk for both kinds of store, through the blob-store layer
//! ([`BlobStore`]): a folder's blobs are files, a bucket's are objects read
//! as a stream (one chunk in memory at a time), and each is hashed against
//! the sha256 its name is made from. The manifests are read from the store
//! folder (a bucket's work folder holds the copy its caller pulled).
//!
//! It holds the store lock for its whole walk — the folder's shared, and
//! for a bucket also its lock object (taken by the session) — so an import, gc or remove
//! cannot change the store under it: a blob gc'd halfway through is never
//! reported as damage. It is safe while the store is served. Blobs no held
//! manifest names are not damage: they are listed apart as unreferenced (a
//! removed bundle's, or verified blobs an import killed during its commit
//! left behind), for `mirror gc`.

use std::collections::BTreeMap;
use std::io::Read;
use std::path::PathBuf;

use llmgw_shared::{BundleId, HashReader};
use sha2::Digest as _;

use crate::store::backend::{BlobMeta, BlobStore};
use crate::store::fsutil::StoreLock;
use crate::store::{Store, StoreError, layout};
use llmgw_shared::progress::Progress;

/// One thing found wrong.
#[derive(Debug, Clone, serde::Serialize)]
pub struct Damage {
    /// The file, or for a store in a bucket the object's `s3://` URL.
    pub path: PathBuf,
    pub problem: String,
}

/// What `mirror verify` found.
#[derive(Debug, Clone, Default, serde::Serialize)]
pub struct StoreReport {
    pub bundles: usize,
    pub blobs_checked: usize,
    pub bytes_checked: u64,
    pub damaged: Vec<Damage>,
    /// Intact blobs that no held manifest names.
    pub unreferenced: Vec<PathBuf>,
}

/// Re-hashes every blob; checks each manifest's hash and that every blob
/// it names is present with its size. The blobs checked are the store's
/// published ones ([`Store::published`]: a folder's files, a bucket's
/// objects); the manifests are read from the store folder (a bucket
/// store's work folder, which its session copied them into while holding
/// the bucket's lock object).
pub fn verify_store(store: &Store, progress: &dyn Progress) -> Result<StoreReport, StoreError> {
    let _lock = StoreLock::acquire_shared(&store.lock_path(), "`llmgw mirror verify`")?;
    let blobs = store.published();
    let mut report = StoreReport::default();
    let mut named = BTreeMap::new();
    for id in store.bundle_ids()? {
        report.bundles += 1;
        match store.read_bundle(&id) {
            Ok(m) => named.extend(m.blobs()),
            Err(e) => report.damaged.push(Damage {
                path: manifest_location(store, &id),
                problem: llmgw_shared::chain(&e),
            }),
        }
    }
    for stray in blobs.list_strays()? {
        report.damaged.push(Damage {
            path: stray.into(),
            problem: "is not a blob: its name is not the 64-hex sha256 filed under its first \
                      two digits, or it is not a plain file; delete it"
                .into(),
        });
    }
    let listed = blobs.list_blobs()?;
    progress.begin(None, listed.iter().map(|(_, m)| m.size).sum());
    let mut buf = vec![0u8; crate::bundle::reader::CHUNK];
    let mut bad = std::collections::BTreeSet::new();
    for (sha, _) in &listed {
        let location = blobs.blob_location(sha);
        progress.started(&location, 0);
        let checked = rehash(blobs, sha, &mut buf, progress);
        report.blobs_checked += 1;
        let problem = match checked {
            Err(e) => format!(
                "cannot be read ({}); check the disk or the S3 server, then run verify again",
                llmgw_shared::chain(&e)
            ),
            Ok((actual, len)) => {
                report.bytes_checked += len;
                if actual == sha.as_str() {
                    if !named.contains_key(sha.as_str()) {
                        report.unreferenced.push(location.into());
                    }
                    continue;
                }
                format!(
                    "its bytes hash to sha256 {actual} ({len} bytes), expected {sha} (its name); \
                     delete it and import again a bundle that carries it"
                )
            }
        };
        bad.insert(sha.as_str().to_string());
        report.damaged.push(Damage {
            path: location.into(),
            problem,
        });
    }
    progress.finish();
    let held: BTreeMap<&str, &BlobMeta> = listed.iter().map(|(s, m)| (s.as_str(), m)).collect();
    for (sha, size) in &named {
        let Some(digest) = layout::digest(sha) else {
            continue;
        };
        let problem = match held.get(sha.as_str()) {
            // Hashing above already names a damaged blob; a size that
            // differs and still hashes right cannot happen.
            Some(m) if m.size == *size || bad.contains(sha.as_str()) => continue,
            Some(m) => format!("is {} bytes, a held manifest declares {size}", m.size),
            None => "is missing, but a held manifest names it; import again a bundle that \
                     carries it"
                .into(),
        };
        report.damaged.push(Damage {
            path: blobs.blob_location(&digest).into(),
            problem,
        });
    }
    Ok(report)
}

/// The blob's sha256 as its bytes hash now, and how many there are.
fn rehash(
    blobs: &dyn BlobStore,
    sha: &llmgw_shared::Sha256,
    buf: &mut [u8],
    progress: &dyn Progress,
) -> Result<(String, u64), StoreError> {
    let location = blobs.blob_location(sha);
    let mut hashed = HashReader::new(blobs.read_whole(sha)?, sha2::Sha256::new());
    loop {
        match hashed.read(buf) {
            Ok(0) => break,
            Ok(n) => progress.advanced(n as u64),
            Err(e) if e.kind() == std::io::ErrorKind::Interrupted => {}
            Err(e) => return Err(StoreError::io(location, e)),
        }
    }
    let len = hashed.len();
    Ok((hex::encode(hashed.into_hasher().finalize()), len))
}

/// Where a held manifest is: its object in the bucket, or its file.
fn manifest_location(store: &Store, id: &BundleId) -> PathBuf {
    store.published().manifest_location(id).into()
}
