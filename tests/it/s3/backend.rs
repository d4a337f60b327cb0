//! The S3 backend keeps every promise of the blob-store layer (the same
//! check the folder backend passes), and the lock object is written only
//! once — on both servers. Garage 2.5 ignores `If-None-Match: *` on PUT
//! and overwrites; the lock holds there because it is also looked for
//! before and read back after its write (`Remote::lock`).

use super::server::on_each;

#[test]
fn the_bucket_backend_keeps_the_promises() {
    on_each(|s3| {
        let rt = tokio::runtime::Runtime::new().unwrap();
        let blobs = s3.blobs("conformance", &rt);
        llmgw_mirror::conformance::exercise(&blobs);
    });
}

#[test]
fn a_large_blob_goes_up_in_parts_and_a_wrong_one_is_never_an_object() {
    use llmgw_mirror::BlobStore as _;
    use std::io::Read as _;
    on_each(|s3| {
        let rt = tokio::runtime::Runtime::new().unwrap();
        let blobs = s3.blobs("large", &rt);
        let part = llmgw_mirror::S3_PART;
        let bytes: Vec<u8> = (0..(2 * part + 12345) as u64)
            .map(|i| (i.wrapping_mul(2654435761) >> 13) as u8)
            .collect();
        let sha = llmgw_shared::Sha256::of(&bytes);
        let size = bytes.len() as u64;
        // The right size, one byte changed at the end: refused after every
        // part went up, and no object is left.
        let mut bad = bytes.clone();
        *bad.last_mut().unwrap() ^= 1;
        let err = blobs.put_blob(&sha, size, &mut &bad[..]).unwrap_err();
        assert!(err.to_string().contains("nothing was stored"), "{err}");
        assert_eq!(blobs.head(&sha).unwrap(), None);
        assert!(s3.keys("large").is_empty(), "{:?}", s3.keys("large"));

        blobs.put_blob(&sha, size, &mut &bytes[..]).unwrap();
        assert_eq!(blobs.head(&sha).unwrap().map(|m| m.size), Some(size));
        let mut back = Vec::new();
        blobs
            .read(&sha, 0..size)
            .unwrap()
            .read_to_end(&mut back)
            .unwrap();
        assert!(back == bytes, "the blob read back differs");
    });
}

#[test]
fn the_lock_object_is_written_once() {
    on_each(|s3| {
        let rt = tokio::runtime::Runtime::new().unwrap();
        let blobs = s3.blobs("locked", &rt);
        let work = tempfile::tempdir().unwrap();
        let remote = llmgw_mirror::Remote::new(blobs.clone(), work.path());
        let held = remote.lock("the first importer").unwrap();
        let err = remote.lock("the second").unwrap_err().to_string();
        assert!(err.contains("the first importer"), "{err}");
        assert!(err.contains(&format!("{}/lock", s3.url("locked"))), "{err}");
        drop(held);
        drop(remote.lock("the second, later").unwrap());
    });
}
