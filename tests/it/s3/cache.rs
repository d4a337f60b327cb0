//! `mirror serve --cache-dir`: a replica keeps a whole blob once read from
//! the bucket, checked, and serves it from there (whole and by range) even
//! when the bucket no longer answers for it.

use super::import::{import, model_bundle};
use super::replicas::Replica;
use super::server::on_each;

#[test]
fn a_blob_read_once_is_served_from_the_replicas_cache() {
    on_each(|s3| {
        let dir = tempfile::tempdir().unwrap();
        let url = s3.url("cached");
        let (kit, bundle) = model_bundle(dir.path(), "c", &[9 << 20]);
        let o = import(s3, &url, &bundle, &kit.sha256());
        assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
        let sha = kit.manifest.repos[0].files[0].sha256.clone();
        let big = kit.blobs[sha.as_str()].clone();
        let cache = tempfile::tempdir().unwrap();
        let r = Replica::start_with(s3, &url, &["--cache-dir", cache.path().to_str().unwrap()]);
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
    });
}

/// The cached copy of blob `sha` in `cache`, if there.
fn cached(cache: &std::path::Path, sha: &str) -> std::path::PathBuf {
    cache.join(format!("blobs/sha256/{}/{sha}", &sha[..2]))
}

/// Waits until `done` holds (a fill runs on a thread of its own).
fn until(what: &str, done: impl Fn() -> bool) {
    for _ in 0..200 {
        if done() {
            return;
        }
        std::thread::sleep(std::time::Duration::from_millis(50));
    }
    panic!("{what}: not after 10 s");
}

#[test]
fn a_bounded_cache_keeps_the_most_recently_used_blob_and_serves_one_being_evicted() {
    on_each(|s3| {
        let dir = tempfile::tempdir().unwrap();
        let url = s3.url("bounded");
        // Two blobs that do not fit together in 20 MiB, and one larger than it.
        let (kit, bundle) = model_bundle(dir.path(), "b", &[12 << 20, 12 << 20, 21 << 20]);
        let o = import(s3, &url, &bundle, &kit.sha256());
        assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
        let files = &kit.manifest.repos[0].files;
        let (a, b, c) = (&files[0].sha256, &files[1].sha256, &files[2].sha256);
        let cache = tempfile::tempdir().unwrap();
        let r = Replica::start_with(
            s3,
            &url,
            &[
                "--cache-dir",
                cache.path().to_str().unwrap(),
                "--cache-size",
                "20M",
            ],
        );
        let path = |i: usize| format!("/acme/b/resolve/main/part-{i}.bin");
        r.wait_for(&path(0), "200");
        let get = |i: usize| {
            let (h, body) = r.ask(&[], &path(i));
            assert!(h.starts_with("HTTP/1.1 200"), "{h}");
            assert!(
                body == kit.blobs[files[i].sha256.as_str()],
                "part-{i} differs"
            );
        };
        let holds = |sha: &str| cached(cache.path(), sha).exists();

        // A, then B: B needs A's room, so A goes.
        get(0);
        until("A cached", || holds(a));
        get(1);
        until("B cached and A evicted", || holds(b) && !holds(a));
        // A again: served right (from the bucket), and now B, the least
        // recently used, makes room for it.
        get(0);
        until("A cached again and B evicted", || holds(a) && !holds(b));
        get(0);
        assert!(std::fs::read(cached(cache.path(), a)).unwrap() == kit.blobs[a.as_str()]);

        // Larger than the whole bound: served whole, never cached.
        get(2);
        get(2);
        std::thread::sleep(std::time::Duration::from_millis(500));
        assert!(!holds(c), "a blob larger than --cache-size was cached");
        assert!(holds(a), "refusing C evicted A");

        // A slow download of A, from the cache, while B's fill evicts A: it
        // still ends whole (an unlinked file stays readable through the
        // descriptor already open).
        let slow_out = dir.path().join("slow.bin");
        let mut slow = std::process::Command::new("curl")
            .args(["-s", "--limit-rate", "2M", "-o"])
            .arg(&slow_out)
            .arg(format!("{}{}", r.url, path(0)))
            .spawn()
            .unwrap();
        std::thread::sleep(std::time::Duration::from_millis(500));
        get(1);
        until("B cached and A evicted", || holds(b) && !holds(a));
        assert!(
            slow.try_wait().unwrap().is_none(),
            "the slow download ended before A was evicted: the test proves nothing"
        );
        assert!(slow.wait().unwrap().success());
        assert!(
            std::fs::read(&slow_out).unwrap() == kit.blobs[a.as_str()],
            "the download of an evicted blob differs"
        );
        assert!(
            std::fs::read_dir(cache.path().join("tmp"))
                .unwrap()
                .next()
                .is_none(),
            "a fill left its temporary file"
        );
    });
}
