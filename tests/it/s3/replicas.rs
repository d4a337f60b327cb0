//! Two `llmgw mirror serve` replicas over one bucket: the same answers
//! byte for byte (JSON, HEAD, whole files and ranges), and both learn of a
//! bundle imported while they run by polling the manifests.

use std::process::{Child, Stdio};

use crate::bundle_kit::{serve_args, spawn_serve};

use super::import::{import, model_bundle};
use super::server::{S3, on_each};

/// `llmgw mirror serve --store s3://…` on a free port, stopped when dropped.
pub struct Replica {
    child: Child,
    pub url: String,
    _work: tempfile::TempDir,
}

impl Replica {
    fn start(s3: &S3, store: &str) -> Self {
        Self::start_with(s3, store, &[])
    }

    pub fn start_with(s3: &S3, store: &str, extra: &[&str]) -> Self {
        let work = tempfile::tempdir().unwrap();
        let mut command = s3.llmgw();
        serve_args(&mut command, "127.0.0.1:0", store.as_ref())
            // Behind one Service, replicas are given the one URL nodes use:
            // JSON answers point there, not at each replica's own port.
            .args(["--public-url", "http://mirror.example:8080"])
            .args(extra)
            .args(["--s3-poll-seconds", "1", "--work-dir"])
            .arg(work.path())
            .env("RUST_LOG", "warn")
            .stderr(Stdio::inherit());
        let (child, url) = spawn_serve(&mut command);
        Self {
            child,
            url,
            _work: work,
        }
    }

    /// curl: the status line and headers but the date, and the body.
    pub fn ask(&self, args: &[&str], path: &str) -> (String, Vec<u8>) {
        let head = tempfile::NamedTempFile::new().unwrap();
        let o = std::process::Command::new("curl")
            .args(["-s", "-D"])
            .arg(head.path())
            .args(args)
            .arg(format!("{}{path}", self.url))
            .output()
            .expect("curl");
        let headers: String = std::fs::read_to_string(head.path())
            .unwrap()
            .lines()
            .filter(|l| !l.to_ascii_lowercase().starts_with("date:"))
            .map(|l| format!("{l}\n"))
            .collect();
        // With -I curl writes the headers to stdout as well, Date and all
        // (two answers a second apart differ there): they are compared
        // above, without it; a HEAD has no body.
        let body = if args.contains(&"-I") {
            Vec::new()
        } else {
            o.stdout
        };
        (headers, body)
    }

    pub fn wait_for(&self, path: &str, status: &str) {
        for _ in 0..100 {
            if self
                .ask(&[], path)
                .0
                .starts_with(&format!("HTTP/1.1 {status}"))
            {
                return;
            }
            std::thread::sleep(std::time::Duration::from_millis(100));
        }
        panic!("{path} never answered {status}");
    }
}

impl Drop for Replica {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

#[test]
fn two_replicas_answer_byte_for_byte_alike_and_learn_new_bundles() {
    on_each(|s3| {
        let dir = tempfile::tempdir().unwrap();
        let url = s3.url("shared");
        let (kit, bundle) = model_bundle(dir.path(), "first", &[10 << 20, 999]);
        let o = import(s3, &url, &bundle, &kit.sha256());
        assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));

        let a = Replica::start(s3, &url);
        let b = Replica::start(s3, &url);
        let file = "/acme/first/resolve/main/part-0.bin";
        let big = &kit.blobs[kit.manifest.repos[0].files[0].sha256.as_str()];
        for r in [&a, &b] {
            r.wait_for("/v1/index", "200");
        }
        for (args, path) in [
            (&[][..], "/v1/index"),
            (&[][..], "/api/models/acme/first"),
            (&["-I"][..], file),
            (&[][..], file),
            (&["-r", "1000-1999999"][..], file),
            (&["-r", "-10"][..], file),
            (&[][..], "/acme/first/resolve/main/part-1.bin"),
            (&[][..], "/acme/first/resolve/main/nothing-here"),
        ] {
            let (ha, ba) = a.ask(args, path);
            let (hb, bb) = b.ask(args, path);
            assert_eq!(ha, hb, "{args:?} {path}: headers differ");
            assert!(ba == bb, "{args:?} {path}: bodies differ");
            if path == file && args.is_empty() {
                assert!(ha.starts_with("HTTP/1.1 200"), "{ha}");
                assert!(ba == *big, "the whole file differs from the blob");
            }
            if args.first() == Some(&"-r") && args[1].starts_with("1000") {
                assert!(ha.starts_with("HTTP/1.1 206"), "{ha}");
                assert!(ba == big[1000..2_000_000], "the range differs");
            }
            if args == ["-I"] {
                assert!(
                    ha.contains(&format!("content-length: {}", big.len())),
                    "{ha}"
                );
            }
        }

        // A bundle imported while both run is served by both.
        let (kit2, bundle2) = model_bundle(dir.path(), "second", &[4321]);
        let o = import(s3, &url, &bundle2, &kit2.sha256());
        assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
        let second = "/acme/second/resolve/main/part-0.bin";
        for r in [&a, &b] {
            r.wait_for(second, "200");
        }
        assert_eq!(a.ask(&[], "/v1/index"), b.ask(&[], "/v1/index"));
        assert!(
            a.ask(&[], second).1 == kit2.blobs[kit2.manifest.repos[0].files[0].sha256.as_str()]
        );
    });
}
