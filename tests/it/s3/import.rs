//! `llmgw bundle import --store s3://…`: every blob checked on its way into
//! the bucket, the manifest last; a rerun is a no-op; a second importer is
//! refused by the lock object; a killed import leaves no bundle, and a
//! rerun completes it, sending only what the bucket lacks.

use std::path::Path;
use std::process::{Command, Output};

use super::server::{S3, on_each};
use crate::bundle_kit::*;

/// A bundle of model files of these sizes (distinct bytes each), as a tar.
pub fn model_bundle(dir: &Path, name: &str, sizes: &[usize]) -> (Kit, std::path::PathBuf) {
    let mut kit = Kit::new();
    for (i, size) in sizes.iter().enumerate() {
        let body: Vec<u8> = (0..*size as u64)
            .map(|j| ((j ^ (i as u64 * 7919)).wrapping_mul(2654435761) >> 11) as u8)
            .collect();
        kit.model_file(&format!("acme/{name}"), &format!("part-{i}.bin"), &body);
    }
    let p = dir.join(format!("{name}.tar"));
    write_tar(&p, &kit.entries());
    (kit, p)
}

/// `llmgw bundle import BUNDLE --sha256 SHA --store URL`, to run as the
/// test needs (waited for, spawned, with a lease of its own).
pub fn import_cmd(s3: &S3, url: &str, bundle: &Path, sha: &str) -> Command {
    let mut c = s3.llmgw();
    c.args(["bundle", "import"])
        .arg(bundle)
        .args(["--sha256", sha, "--store", url]);
    c
}

/// [`import_cmd`], run to its end.
pub fn import(s3: &S3, url: &str, bundle: &Path, sha: &str) -> Output {
    import_cmd(s3, url, bundle, sha).output().unwrap()
}

#[test]
fn imports_into_the_bucket_manifest_last_and_again_is_a_no_op() {
    on_each(|s3| {
        let dir = tempfile::tempdir().unwrap();
        let (kit, bundle) = model_bundle(dir.path(), "one", &[20 << 20, 1000, 7]);
        let sha = kit.sha256();
        let url = s3.url("site");
        let o = import(s3, &url, &bundle, &sha);
        assert!(o.status.success(), "{}", stderr(&o));
        let out = stdout(&o);
        assert!(out.contains(&sha), "{out}");
        assert!(out.contains("3 blobs"), "{out}");
        let keys = s3.keys("site");
        for blob in kit.blobs.keys() {
            let key = format!("blobs/sha256/{}/{blob}", &blob[..2]);
            assert!(keys.contains(&key), "{key} not in {keys:?}");
            assert_eq!(s3.object("site", &key), kit.blobs[blob], "{key}");
        }
        assert!(keys.contains(&format!("bundles/{sha}.json")), "{keys:?}");
        assert!(keys.contains(&"state/imports.json".to_string()), "{keys:?}");
        assert!(
            !keys.iter().any(|k| k == "lock"),
            "the lock is released: {keys:?}"
        );
        assert!(!keys.iter().any(|k| k.starts_with("tmp")), "{keys:?}");

        let again = import(s3, &url, &bundle, &sha);
        assert!(again.status.success(), "{}", stderr(&again));
        assert!(
            stdout(&again).contains("already imported"),
            "{}",
            stdout(&again)
        );
    });
}

#[test]
fn a_second_importer_is_refused_by_the_lock_object_naming_the_first() {
    on_each(|s3| {
        let dir = tempfile::tempdir().unwrap();
        let (kit, bundle) = model_bundle(dir.path(), "locked", &[1000]);
        let rt = tokio::runtime::Runtime::new().unwrap();
        let remote = llmgw_mirror::Remote::new(s3.blobs("site", &rt), dir.path().join("w"));
        let _held = remote.lock("an import still running").unwrap();
        let o = import(s3, &s3.url("site"), &bundle, &kit.sha256());
        assert_eq!(o.status.code(), Some(1), "{}", stderr(&o));
        let err = stderr(&o);
        assert!(err.contains("an import still running"), "{err}");
        assert!(err.contains(&format!("{}/lock", s3.url("site"))), "{err}");
        assert!(!s3.keys("site").iter().any(|k| k.starts_with("bundles/")));
    });
}

#[test]
fn a_killed_import_leaves_no_bundle_and_a_rerun_sends_only_what_is_missing() {
    on_each(|s3| {
        let dir = tempfile::tempdir().unwrap();
        let (kit, bundle) = model_bundle(dir.path(), "big", &[24 << 20, 24 << 20, 24 << 20]);
        let sha = kit.sha256();
        let url = s3.url("site");
        let mut child = import_cmd(s3, &url, &bundle, &sha)
            .stdout(std::process::Stdio::null())
            .stderr(std::process::Stdio::null())
            .spawn()
            .unwrap();
        // Killed as soon as the first blob is an object: the others, and the
        // manifest, are still to come.
        let deadline = std::time::Instant::now() + std::time::Duration::from_secs(60);
        let first_blob = loop {
            if let Some(k) = s3
                .keys("site")
                .into_iter()
                .find(|k| k.starts_with("blobs/"))
            {
                break k;
            }
            assert!(
                child.try_wait().unwrap().is_none(),
                "the import ended before any blob was an object"
            );
            assert!(std::time::Instant::now() < deadline, "no blob after 60 s");
            std::thread::sleep(std::time::Duration::from_millis(5));
        };
        child.kill().unwrap();
        child.wait().unwrap();
        let keys = s3.keys("site");
        assert!(
            !keys.iter().any(|k| k.starts_with("bundles/")),
            "a killed import left a manifest: {keys:?}"
        );
        let sent = keys.iter().filter(|k| k.starts_with("blobs/")).count();

        // The killed run's lock object is still there: the rerun is refused,
        // naming it, while its lease runs.
        let o = import(s3, &url, &bundle, &sha);
        assert_eq!(o.status.code(), Some(1), "{}", stderr(&o));
        assert!(
            stderr(&o).contains(&format!("{url}/lock")),
            "{}",
            stderr(&o)
        );
        assert!(
            stderr(&o).contains("without renewal"),
            "the refusal says the lock is taken over once not renewed: {}",
            stderr(&o)
        );
        // Nobody renews the killed run's lock: once it has gone a whole lease
        // without renewal (shortened to 1 s here, 10 minutes by default) the
        // rerun takes it over by itself, with no object deleted by hand.
        std::thread::sleep(std::time::Duration::from_millis(2500));
        let o = import_cmd(s3, &url, &bundle, &sha)
            .env("RUST_LOG", "info")
            .env("LLMGW_S3_LOCK_LEASE_SECONDS", "1")
            .output()
            .unwrap();
        assert!(o.status.success(), "{}", stderr(&o));
        assert!(
            stderr(&o).contains("taking over the store's lock object"),
            "{}",
            stderr(&o)
        );
        assert!(
            !s3.keys("site").iter().any(|k| k == "lock"),
            "the rerun released the lock it took over"
        );
        let keys = s3.keys("site");
        assert!(keys.contains(&format!("bundles/{sha}.json")), "{keys:?}");
        for blob in kit.blobs.keys() {
            let key = format!("blobs/sha256/{}/{blob}", &blob[..2]);
            assert!(s3.object("site", &key) == kit.blobs[blob], "{key} differs");
        }
        // What the killed run had sent was found, not sent again.
        let log = stderr(&o);
        assert!(
            log.contains(&format!("blobs_added: {}", 3 - sent)),
            "{first_blob} and {sent} blobs were up; the rerun says: {log}"
        );
    });
}

#[test]
fn trust_list_and_a_signed_release_work_on_a_bucket_too() {
    on_each(|s3| {
        let dir = tempfile::tempdir().unwrap();
        let url = s3.url("signed");
        let key = Key::new();
        let pubf = key.write_pub(dir.path());
        let o = s3
            .llmgw()
            .args([
                "bundle",
                "trust",
                "add",
                pubf.to_str().unwrap(),
                "--store",
                &url,
            ])
            .output()
            .unwrap();
        assert!(o.status.success(), "{}", stderr(&o));
        let trusted = format!("trust/{}.pub", key.id);
        assert!(
            s3.keys("signed").contains(&trusted),
            "{:?}",
            s3.keys("signed")
        );

        // One signed release (a minisign signature differs at each signing),
        // carried by two bundles.
        let assets: &[(&str, &[u8])] = &[("llmgw-linux-amd64.tar.gz", b"llmgw for amd64")];
        let sums = sums_text(assets);
        let sig = key.sign(sums.as_bytes());
        let mut kit = Kit::new();
        kit.llmgw_release_with(assets, sums.as_bytes(), &sig, &key.id);
        kit.model_file("acme/tiny", "config.json", b"{\"hidden\": 8}");
        let bundle = dir.path().join("signed.tar");
        write_tar(&bundle, &kit.entries());
        let o = import(s3, &url, &bundle, &kit.sha256());
        assert!(o.status.success(), "{}", stderr(&o));
        assert!(
            stdout(&o).contains(&format!("signed by trusted key {}", key.id)),
            "{}",
            stdout(&o)
        );
        // A second bundle of the same release: its claims are checked against
        // the held one's SHA256SUMS, read from the bucket.
        let mut again = Kit::new();
        again.llmgw_release_with(assets, sums.as_bytes(), &sig, &key.id);
        again.model_file("acme/other", "config.json", b"{}");
        let bundle2 = dir.path().join("again.tar");
        write_tar(&bundle2, &again.entries());
        let o = import(s3, &url, &bundle2, &again.sha256());
        assert!(o.status.success(), "{}", stderr(&o));

        let o = s3
            .llmgw()
            .args(["mirror", "list", "--json", "--store", &url])
            .output()
            .unwrap();
        assert!(o.status.success(), "{}", stderr(&o));
        let listed = stdout(&o);
        assert!(
            listed.contains(&kit.sha256()) && listed.contains(&again.sha256()),
            "{listed}"
        );
    });
}
