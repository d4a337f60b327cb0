//! The lock object's lease renewal on its own: with a lease of one second,
//! an import that lasts several leases (a bundle large by its content)
//! keeps its lock — its holder rewrites it every quarter lease — so a
//! second import started in the middle, which would take over a lock not
//! renewed for a whole lease, is refused naming the holder; and the first
//! completes.

use std::time::{Duration, Instant, SystemTime};

use super::import::{import, import_cmd, model_bundle};
use super::server::{S3, on_each};
use crate::bundle_kit::*;

/// The lock object's time, if it is there.
fn lock_time(s3: &S3, prefix: &str) -> Option<SystemTime> {
    s3.listed(prefix)
        .into_iter()
        .find(|(k, _)| k == "lock")
        .and_then(|(_, m)| m.modified)
}

#[test]
fn a_long_import_renews_its_lock_and_a_second_one_is_refused_meanwhile() {
    let dir = tempfile::tempdir().unwrap();
    // Large by content: 8 x 64 MiB, verified into the work folder and then
    // hashed again on its way into the bucket (about 5 s here).
    let (kit, bundle) = model_bundle(dir.path(), "long", &[64 << 20; 8]);
    let (other, other_bundle) = model_bundle(dir.path(), "other", &[100]);
    on_each(|s3| {
        let url = s3.url("leased");
        let started = Instant::now();
        let mut first = import_cmd(s3, &url, &bundle, &kit.sha256())
            .env("LLMGW_S3_LOCK_LEASE_SECONDS", "1")
            .stdout(std::process::Stdio::piped())
            .stderr(std::process::Stdio::piped())
            .spawn()
            .unwrap();
        let deadline = Instant::now() + Duration::from_secs(30);
        let taken = loop {
            if let Some(t) = lock_time(s3, "leased") {
                break t;
            }
            assert!(
                first.try_wait().unwrap().is_none(),
                "the import ended before its lock object was seen"
            );
            assert!(Instant::now() < deadline, "no lock object after 30 s");
            std::thread::sleep(Duration::from_millis(20));
        };
        // Three leases later the first still works, and its lock was
        // rewritten meanwhile. (A lock is taken over once it reads older
        // than a lease and the second of rounding of an object's time: 2 s
        // here. Not renewed, this one would read 3 s old.)
        std::thread::sleep(Duration::from_millis(3000));
        assert!(
            first.try_wait().unwrap().is_none(),
            "the import ended within a lease: make the bundle larger, or this proves nothing"
        );
        let renewed = lock_time(s3, "leased").expect("the lock object is gone mid-import");
        assert!(
            renewed > taken,
            "the lock object was not rewritten: {taken:?} then {renewed:?}"
        );

        // A second import, with the same one-second lease: a lock not
        // renewed for a whole lease would be taken over; this one is not.
        let o = import_cmd(s3, &url, &other_bundle, &other.sha256())
            .env("LLMGW_S3_LOCK_LEASE_SECONDS", "1")
            .output()
            .unwrap();
        assert_eq!(o.status.code(), Some(1), "{}", stderr(&o));
        let err = stderr(&o);
        assert!(err.contains(&format!("{url}/lock")), "{err}");
        assert!(
            err.contains(&format!("llmgw bundle import (process {} on", first.id())),
            "the refusal names the first import as the holder: {err}"
        );
        assert!(
            first.try_wait().unwrap().is_none(),
            "the first import ended before the second was refused: make the bundle larger"
        );

        let done = first.wait_with_output().unwrap();
        eprintln!("the first import took {:?}", started.elapsed());
        assert!(done.status.success(), "{}", stderr(&done));
        let keys = s3.keys("leased");
        assert!(
            keys.contains(&format!("bundles/{}.json", kit.sha256())),
            "{keys:?}"
        );
        assert!(
            !keys.contains(&format!("bundles/{}.json", other.sha256())),
            "{keys:?}"
        );
        assert!(
            !keys.iter().any(|k| k == "lock"),
            "the lock is released: {keys:?}"
        );
        // And once it is, the second goes through.
        let o = import(s3, &url, &other_bundle, &other.sha256());
        assert!(o.status.success(), "{}", stderr(&o));
    });
}
