//! `llmgw mirror gc --store s3://…`: blobs a held manifest names are kept;
//! one no manifest names is kept while younger than the grace period (an
//! import whose manifest is not up yet), and removed after it.

use llmgw_mirror::BlobStore as _;

use super::import::{import, model_bundle};
use super::server::on_each;
use crate::bundle_kit::*;

#[test]
fn gc_keeps_named_and_young_blobs_and_removes_old_orphans() {
    on_each(|s3| {
        let dir = tempfile::tempdir().unwrap();
        let url = s3.url("gc");
        let (kit, bundle) = model_bundle(dir.path(), "kept", &[5000, 60]);
        let o = import(s3, &url, &bundle, &kit.sha256());
        assert!(o.status.success(), "{}", stderr(&o));
        // A blob as a concurrent import leaves it before its manifest is up.
        let rt = tokio::runtime::Runtime::new().unwrap();
        let blobs = s3.blobs("gc", &rt);
        let orphan = b"a blob whose manifest is still to come";
        let orphan_sha = llmgw_shared::Sha256::of(orphan);
        blobs
            .put_blob(&orphan_sha, orphan.len() as u64, &mut &orphan[..])
            .unwrap();

        let gc = |extra: &[&str]| {
            let o = s3
                .llmgw()
                .args(["mirror", "gc", "--store", &url, "--json"])
                .args(extra)
                .output()
                .unwrap();
            assert!(o.status.success(), "{}", stderr(&o));
            serde_json::from_slice::<serde_json::Value>(&o.stdout).unwrap()
        };
        let r = gc(&[]);
        assert_eq!(r["blobs_kept"], 2, "{r}");
        assert_eq!(r["blobs_removed"].as_array().unwrap().len(), 0, "{r}");
        let young = r["blobs_young"].as_array().unwrap();
        assert_eq!(young.len(), 1, "{r}");
        assert!(
            young[0].as_str().unwrap().ends_with(orphan_sha.as_str()),
            "{r}"
        );
        assert!(blobs.head(&orphan_sha).unwrap().is_some());

        let r = gc(&["--grace-hours", "0", "--dry-run"]);
        assert_eq!(r["blobs_removed"].as_array().unwrap().len(), 1, "{r}");
        assert!(
            blobs.head(&orphan_sha).unwrap().is_some(),
            "a dry run removed it"
        );

        let r = gc(&["--grace-hours", "0"]);
        assert_eq!(r["blobs_removed"].as_array().unwrap().len(), 1, "{r}");
        assert_eq!(r["bytes_removed"], orphan.len() as u64, "{r}");
        assert_eq!(blobs.head(&orphan_sha).unwrap(), None);
        for sha in kit.blobs.keys() {
            let sha = llmgw_shared::Sha256::parse("t", sha).unwrap();
            assert!(
                blobs.head(&sha).unwrap().is_some(),
                "a named blob was removed"
            );
        }
        assert!(
            !s3.keys("gc").iter().any(|k| k == "lock"),
            "the lock is released"
        );
    });
}
