//! A real S3 server for one test — the fixture's [`S3Server`], Garage and
//! s3s-fs in turn ([`on_each`]) — and the `llmgw` commands and a client
//! pointed at it.

use std::process::Command;

use llmgw_fixture::{S3Kind, S3Server};
use llmgw_mirror::BlobMeta;
use llmgw_mirror::{S3Blobs, S3Config};

/// Runs `test` on a fresh server of each kind ([`S3Kind::ALL`]: Garage and
/// s3s-fs), one after the other; a failure names the server it failed on.
/// A test whose promise one server cannot keep says so where it picks one.
pub fn on_each(test: impl Fn(&S3)) {
    for kind in S3Kind::ALL {
        let s3 = S3::start_kind(kind);
        if let Err(panic) = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| test(&s3))) {
            let what = panic
                .downcast_ref::<String>()
                .cloned()
                .or_else(|| panic.downcast_ref::<&str>().map(|s| s.to_string()))
                .unwrap_or_default();
            panic!("on {kind:?}: {what}");
        }
    }
}

/// A running S3 server with one bucket, and a client runtime.
pub struct S3 {
    pub server: S3Server,
    pub endpoint: String,
    rt: tokio::runtime::Runtime,
    /// The commands' temporary and cache folder: a killed import's work
    /// folder (its staging) goes with the test.
    scratch: tempfile::TempDir,
}

impl S3 {
    pub fn start_kind(kind: S3Kind) -> Self {
        let server = S3Server::start(kind).unwrap_or_else(|e| panic!("{e}"));
        Self {
            endpoint: server.endpoint.clone(),
            server,
            rt: tokio::runtime::Runtime::new().unwrap(),
            scratch: tempfile::tempdir().unwrap(),
        }
    }

    /// `s3://BUCKET/PREFIX`.
    pub fn url(&self, prefix: &str) -> String {
        format!("s3://{}/{prefix}", self.server.bucket)
    }

    /// `llmgw` with the S3 endpoint and credentials in its environment,
    /// as an operator sets them.
    pub fn llmgw(&self) -> Command {
        let mut c = crate::bundle_kit::llmgw();
        c.envs(self.server.aws_env())
            .env_remove("LLMGW_WORK_DIR")
            .env("TMPDIR", self.scratch.path())
            // A writer's work folder kept between runs goes there too,
            // never into the user's own cache folder.
            .env("XDG_CACHE_HOME", self.scratch.path());
        c
    }

    /// The folder `XDG_CACHE_HOME` names for the `llmgw` commands.
    pub fn cache_home(&self) -> &std::path::Path {
        self.scratch.path()
    }

    /// A client of the store at `prefix`, its requests on `rt`.
    pub fn blobs(&self, prefix: &str, rt: &tokio::runtime::Runtime) -> S3Blobs {
        let cfg = S3Config {
            url: self.url(prefix),
            endpoint: Some(self.endpoint.clone()),
            region: Some(self.server.region.clone()),
            credentials: Some((
                self.server.access_key.clone(),
                self.server.secret_key.clone(),
            )),
            presign: None,
        };
        S3Blobs::connect(&cfg, rt.handle().clone()).unwrap()
    }

    fn own(&self, prefix: &str) -> S3Blobs {
        self.blobs(prefix, &self.rt)
    }

    /// Every object key under `prefix/`, listed through S3.
    pub fn keys(&self, prefix: &str) -> Vec<String> {
        self.listed(prefix).into_iter().map(|(k, _)| k).collect()
    }

    /// Every object under `prefix/` with its size and time.
    pub fn listed(&self, prefix: &str) -> Vec<(String, BlobMeta)> {
        self.own(prefix).list_keys("").unwrap()
    }

    /// The bytes of the object `prefix/key`.
    pub fn object(&self, prefix: &str, key: &str) -> Vec<u8> {
        self.own(prefix)
            .get_small(key, 1 << 30)
            .unwrap()
            .unwrap_or_else(|| panic!("no object {prefix}/{key}"))
    }

    /// Writes `bytes` as the object `prefix/key`, a plain PUT: what anyone
    /// with the bucket's credentials can do behind the mirror's back.
    pub fn put(&self, prefix: &str, key: &str, bytes: &[u8]) {
        self.own(prefix).put_small(key, bytes.to_vec()).unwrap();
    }

    /// Deletes the object `prefix/key`.
    pub fn delete(&self, prefix: &str, key: &str) {
        self.own(prefix).delete_key(key).unwrap();
    }
}
