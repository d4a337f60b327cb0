//! What every [`BlobStore`] backend must do, as one check both backends'
//! tests run (the folder's in this crate, the bucket's against a real S3
//! server in `tests/s3.rs`).
//!
//! Invariant: each step asserts a promise of [`BlobStore`](crate::BlobStore); a backend
//! that passes never shows a blob whose bytes do not hash to its key.

use std::io::Read;
use std::time::{Duration, SystemTime};

use llmgw_shared::Sha256;

use super::StoreError;
use super::backend::{BlobStore, Put};

/// Runs every promise against `store`, which must start empty; panics on
/// the first one broken, naming it.
pub fn exercise(store: &dyn BlobStore) {
    let bytes: Vec<u8> = (0..300_000u32).map(|i| (i % 251) as u8).collect();
    let sha = Sha256::of(&bytes);
    let size = bytes.len() as u64;
    put_and_read(store, &sha, &bytes);
    wrong_bytes_refused(store);
    listed_and_aged(store, &sha, size);
    manifests(store);
    store.delete_blob(&sha).expect("delete");
    assert_eq!(store.head(&sha).expect("head"), None);
    store.delete_blob(&sha).expect("delete what is gone");
}

/// A blob put is held, read by range and whole, at its key; put again,
/// nothing is read.
fn put_and_read(store: &dyn BlobStore, sha: &Sha256, bytes: &[u8]) {
    let size = bytes.len() as u64;
    assert_eq!(store.head(sha).expect("head"), None, "an empty store");
    assert_eq!(
        store.put_blob(sha, size, &mut &bytes[..]).expect("put"),
        Put::Added
    );
    assert_eq!(store.head(sha).expect("head").map(|m| m.size), Some(size));
    let mut part = Vec::new();
    store
        .read(sha, 1000..1010)
        .expect("read")
        .read_to_end(&mut part)
        .expect("read range");
    assert_eq!(part, &bytes[1000..1010], "a range reads those bytes");
    let mut whole = Vec::new();
    store
        .read_whole(sha)
        .expect("read whole")
        .read_to_end(&mut whole)
        .expect("read whole");
    assert!(whole == bytes, "read_whole reads every byte");
    assert!(
        store
            .blob_location(sha)
            .ends_with(&crate::store::layout::blob_key(sha)),
        "{}",
        store.blob_location(sha)
    );
    // Held: nothing is read (an empty reader would not hash to it).
    assert_eq!(
        store.put_blob(sha, size, &mut &[][..]).expect("put again"),
        Put::Held
    );
}

/// Wrong bytes, too few, too many: refused, and nothing is visible.
fn wrong_bytes_refused(store: &dyn BlobStore) {
    let other = Sha256::of(b"the bytes promised");
    for (given, what) in [
        (&b"other bytes entirely"[..], "other bytes"),
        (&b"the bytes"[..], "a short reader"),
        (&b"the bytes promised, and more"[..], "a long reader"),
    ] {
        let err = store.put_blob(&other, 18, &mut &given[..]).expect_err(what);
        assert!(
            matches!(err, StoreError::BlobMismatch { .. }),
            "{what}: {err}"
        );
        assert_eq!(
            store.head(&other).expect("head"),
            None,
            "{what} left a blob"
        );
    }
}

/// The one blob held is listed as a blob (no stray), with its size and age.
fn listed_and_aged(store: &dyn BlobStore, sha: &Sha256, size: u64) {
    assert!(
        store.list_strays().expect("list strays").is_empty(),
        "blobs put through the trait are filed as blobs"
    );
    let listed = store.list_blobs().expect("list blobs");
    assert_eq!(
        listed
            .iter()
            .map(|(s, m)| (s.clone(), m.size))
            .collect::<Vec<_>>(),
        vec![(sha.clone(), size)]
    );
    let age = store
        .blob_age(sha, SystemTime::now() + Duration::from_secs(3600))
        .expect("age")
        .expect("a time");
    assert!(age > Duration::from_secs(3000), "{age:?}");
}

/// A manifest put is listed, at its key.
fn manifests(store: &dyn BlobStore) {
    let manifest = b"{\"format_version\":1}";
    let msha = llmgw_shared::BundleId::of(manifest);
    assert!(
        store
            .manifest_location(&msha)
            .ends_with(&crate::store::layout::bundle_key(&msha)),
        "{}",
        store.manifest_location(&msha)
    );
    assert!(store.list_bundles().expect("list bundles").is_empty());
    store.put_manifest(&msha, manifest).expect("put manifest");
    assert_eq!(store.list_bundles().expect("list bundles"), vec![msha]);
}
