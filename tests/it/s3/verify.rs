//! `llmgw mirror verify --store s3://…`: every object read back, hashed
//! against the sha256 its key is made from, and every held manifest's
//! blobs looked for, on both servers; an object changed, removed or added
//! behind the mirror's back is named with what to do, and doing it makes
//! the bucket verify again.

use super::import::{import, model_bundle};
use super::server::{S3, on_each};
use crate::bundle_kit::*;

fn verify(s3: &S3, url: &str, json: bool) -> std::process::Output {
    let mut c = s3.llmgw();
    c.args(["mirror", "verify", "--store", url]);
    if json {
        c.arg("--json");
    }
    c.output().unwrap()
}

fn key(sha: &str) -> String {
    format!("blobs/sha256/{}/{sha}", &sha[..2])
}

#[test]
fn a_bucket_verifies_and_a_blob_changed_behind_the_mirrors_back_is_named() {
    on_each(|s3| {
        let dir = tempfile::tempdir().unwrap();
        let url = s3.url("checked");
        // One blob large enough to have gone up in parts.
        let (kit, bundle) = model_bundle(dir.path(), "v", &[9 << 20, 1000, 7]);
        let o = import(s3, &url, &bundle, &kit.sha256());
        assert!(o.status.success(), "{}", stderr(&o));

        let o = verify(s3, &url, true);
        assert!(o.status.success(), "{}", stderr(&o));
        let r: serde_json::Value = serde_json::from_slice(&o.stdout).unwrap();
        assert_eq!(r["bundles"], 1, "{r}");
        assert_eq!(r["blobs_checked"], kit.blobs.len(), "{r}");
        let total: usize = kit.blobs.values().map(Vec::len).sum();
        assert_eq!(r["bytes_checked"], total, "{r}");
        assert_eq!(r["damaged"], serde_json::json!([]), "{r}");
        assert_eq!(r["unreferenced"], serde_json::json!([]), "{r}");
        assert!(!s3.keys("checked").iter().any(|k| k == "lock"));

        // Behind the mirror's back, through the S3 API: one object
        // overwritten with other bytes of the same size, one deleted, one
        // added where blobs are kept.
        let files = &kit.manifest.repos[0].files;
        let (changed, gone) = (&files[1].sha256, &files[2].sha256);
        let other = vec![b'x'; kit.blobs[changed.as_str()].len()];
        s3.put("checked", &key(changed), &other);
        s3.delete("checked", &key(gone));
        s3.put("checked", "blobs/sha256/ab/notes.txt", b"hand-made");

        let o = verify(s3, &url, false);
        assert_eq!(o.status.code(), Some(1), "{}", stderr(&o));
        let out = stdout(&o);
        let actual = llmgw_shared::sha256_hex(&other);
        assert!(
            out.contains(&format!(
                "DAMAGED {url}/{}: its bytes hash to sha256 {actual} (1000 bytes), expected \
                 {changed} (its name); delete it and import again a bundle that carries it",
                key(changed)
            )),
            "{out}"
        );
        assert!(
            out.contains(&format!("DAMAGED {url}/{}: is missing", key(gone))),
            "{out}"
        );
        assert!(
            out.contains(&format!(
                "DAMAGED {url}/blobs/sha256/ab/notes.txt: is not a blob"
            )),
            "{out}"
        );
        let err = stderr(&o);
        assert!(err.contains("3 damaged object(s)"), "{err}");
        assert!(err.contains("delete each damaged object"), "{err}");

        // The same, as JSON: the folder verify's shape.
        let o = verify(s3, &url, true);
        assert_eq!(o.status.code(), Some(1), "{}", stderr(&o));
        let r: serde_json::Value = serde_json::from_slice(&o.stdout).unwrap();
        let damaged = r["damaged"].as_array().unwrap();
        assert_eq!(damaged.len(), 3, "{r}");
        assert!(
            damaged
                .iter()
                .any(|d| d["path"] == format!("{url}/{}", key(changed))
                    && d["problem"].as_str().unwrap().contains(&actual)),
            "{r}"
        );

        // What the report says to do: delete the damaged objects, import
        // the bundle again. The bucket verifies again.
        s3.delete("checked", &key(changed));
        s3.delete("checked", "blobs/sha256/ab/notes.txt");
        let o = import(s3, &url, &bundle, &kit.sha256());
        assert!(o.status.success(), "{}", stderr(&o));
        assert!(s3.object("checked", &key(changed)) == kit.blobs[changed.as_str()]);
        let o = verify(s3, &url, false);
        assert!(o.status.success(), "{}{}", stdout(&o), stderr(&o));
        assert!(stdout(&o).contains("all intact"), "{}", stdout(&o));

        // A key someone else chose, with a terminal escape in it: named,
        // never printed raw (the S3 layer percent-encodes what a path may
        // not hold; `shown` would escape anything left).
        let hostile = "blobs/sha256/ab/\u{1b}[2Jred";
        s3.put("checked", hostile, b"hand-made");
        let o = verify(s3, &url, false);
        assert_eq!(o.status.code(), Some(1), "{}", stderr(&o));
        let out = stdout(&o);
        assert!(
            !out.contains('\u{1b}') && !stderr(&o).contains('\u{1b}'),
            "{out:?}"
        );
        assert!(
            out.contains(&format!(
                "DAMAGED {url}/blobs/sha256/ab/%1B%5B2Jred: is not a blob"
            )),
            "{out}"
        );
        s3.delete("checked", hostile);
    });
}
