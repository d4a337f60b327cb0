//! `mirror serve --cache-dir`: a replica keeps a whole blob once read from
//! the bucket, checked, and serves it from there (whole and by range) even
//! when the bucket no longer answers for it.

use super::import::{import, model_bundle};
use super::replicas::Replica;
use super::server::S3;

#[test]
fn a_blob_read_once_is_served_from_the_replicas_cache() {
    let s3 = S3::start();
    let dir = tempfile::tempdir().unwrap();
    let url = s3.url("cached");
    let (kit, bundle) = model_bundle(dir.path(), "c", &[9 << 20]);
    let o = import(&s3, &url, &bundle, &kit.sha256());
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    let sha = kit.manifest.repos[0].files[0].sha256.clone();
    let big = kit.blobs[&sha].clone();
    let cache = tempfile::tempdir().unwrap();
    let r = Replica::start_with(&s3, &url, &["--cache-dir", cache.path().to_str().unwrap()]);
    let file = "/acme/c/resolve/main/part-0.bin";
    r.wait_for(file, "200");
    let (h, body) = r.ask(&[], file);
    assert!(h.starts_with("HTTP/1.1 200"), "{h}");
    assert!(body == big, "the first (streamed) download differs");
    let cached = cache
        .path()
        .join(format!("blobs/sha256/{}/{sha}", &sha[..2]));
    for _ in 0..100 {
        if cached.exists() {
            break;
        }
        std::thread::sleep(std::time::Duration::from_millis(100));
    }
    assert!(
        std::fs::read(&cached).unwrap() == big,
        "the cached copy differs"
    );
    assert!(
        std::fs::read_dir(cache.path().join("tmp"))
            .unwrap()
            .next()
            .is_none(),
        "a fill left its temporary file"
    );
    // The bucket no longer has it: the replica's copy answers.
    s3.delete("cached", &format!("blobs/sha256/{}/{sha}", &sha[..2]));
    let (h, body) = r.ask(&[], file);
    assert!(h.starts_with("HTTP/1.1 200"), "{h}");
    assert!(body == big, "the cached download differs");
    let (h, body) = r.ask(&["-r", "5-9"], file);
    assert!(h.starts_with("HTTP/1.1 206"), "{h}");
    assert_eq!(body, &big[5..10]);
}
