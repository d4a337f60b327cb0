//! `llmgw mirror have --store s3://…`: what a store in a bucket holds, as
//! the list the connected side builds a differential bundle from — its id
//! made once and kept in the bucket, the held manifests, and every named
//! blob the bucket has at its size (one deleted behind the mirror's back is
//! not claimed).

use llmgw_shared::HaveList;

use super::import::{import, model_bundle};
use super::server::{S3, on_each};
use crate::bundle_kit::*;

fn have(s3: &S3, url: &str, out: &std::path::Path) -> (String, Vec<u8>) {
    let o = s3
        .llmgw()
        .args(["mirror", "have", "--store", url, "--out"])
        .arg(out)
        .output()
        .unwrap();
    assert!(o.status.success(), "{}", stderr(&o));
    (stdout(&o), std::fs::read(out).unwrap())
}

#[test]
fn a_bucket_says_what_it_holds() {
    on_each(|s3| {
        let dir = tempfile::tempdir().unwrap();
        let url = s3.url("held");
        let out = dir.path().join("have.json");

        // Nothing under the prefix: not a store, and nothing is made there.
        let o = s3
            .llmgw()
            .args(["mirror", "have", "--store", &url, "--out"])
            .arg(&out)
            .output()
            .unwrap();
        assert_eq!(o.status.code(), Some(1), "{}", stderr(&o));
        assert!(
            stderr(&o).contains("is not a mirror store"),
            "{}",
            stderr(&o)
        );
        assert!(s3.keys("held").is_empty(), "{:?}", s3.keys("held"));

        let (kit, bundle) = model_bundle(dir.path(), "h", &[9 << 20, 500]);
        let o = import(s3, &url, &bundle, &kit.sha256());
        assert!(o.status.success(), "{}", stderr(&o));

        let (printed, bytes) = have(s3, &url, &out);
        assert_eq!(printed.trim(), llmgw_shared::sha256_hex(&bytes));
        let list = HaveList::from_json_bytes(&bytes).unwrap();
        assert_eq!(list.manifests, vec![kit.sha256()]);
        assert_eq!(list.blob_map(), kit.manifest.blobs());
        // The id went up with the state, and is the same next time.
        let id = s3.object("held", "state/store-id");
        assert_eq!(list.store_id, String::from_utf8_lossy(&id).trim());
        assert_eq!(have(s3, &url, &out).1, bytes, "made once");
        assert!(!s3.keys("held").iter().any(|k| k == "lock"));

        // A blob gone from the bucket is not claimed: the next bundle
        // carries it again.
        let gone = &kit.manifest.repos[0].files[1].sha256;
        s3.delete("held", &format!("blobs/sha256/{}/{gone}", &gone[..2]));
        let list = HaveList::from_json_bytes(&have(s3, &url, &out).1).unwrap();
        let mut want = kit.manifest.blobs();
        want.remove(gone);
        assert_eq!(list.blob_map(), want);
    });
}
