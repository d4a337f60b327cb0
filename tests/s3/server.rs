//! A real S3 server for one test: s3s-fs on a free loopback port over a
//! temporary folder, with a bucket, stopped when dropped; and the `llmgw`
//! commands pointed at it.

use std::net::TcpStream;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

pub const ACCESS_KEY: &str = "llmgw-test";
pub const SECRET_KEY: &str = "llmgw-test-secret";
pub const BUCKET: &str = "models";

/// s3s-fs running, with the bucket [`BUCKET`].
pub struct S3 {
    child: Child,
    pub endpoint: String,
    /// The folder s3s-fs keeps the buckets in.
    pub root: tempfile::TempDir,
}

fn binary() -> PathBuf {
    let Some(p) = std::env::var_os("LLMGW_S3S_FS") else {
        panic!(
            "LLMGW_S3S_FS is not set: these tests need the s3s-fs binary (a real S3 server). \
             Run scripts/setup.sh once, then scripts/test.sh (which sets it), or export \
             LLMGW_S3S_FS=/path/to/s3s-fs"
        );
    };
    let p = PathBuf::from(p);
    assert!(
        p.is_file(),
        "LLMGW_S3S_FS={} is not a file: run scripts/setup.sh to build s3s-fs",
        p.display()
    );
    p
}

impl S3 {
    pub fn start() -> Self {
        let root = tempfile::tempdir().unwrap();
        std::fs::create_dir(root.path().join(BUCKET)).unwrap();
        // A free port: bound, read, released, then given to s3s-fs.
        let port = std::net::TcpListener::bind("127.0.0.1:0")
            .unwrap()
            .local_addr()
            .unwrap()
            .port();
        let child = Command::new(binary())
            .args(["--host", "127.0.0.1", "--port", &port.to_string()])
            .args(["--access-key", ACCESS_KEY, "--secret-key", SECRET_KEY])
            .arg(root.path())
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .spawn()
            .unwrap();
        let deadline = Instant::now() + Duration::from_secs(10);
        while TcpStream::connect(("127.0.0.1", port)).is_err() {
            assert!(Instant::now() < deadline, "s3s-fs never listened on {port}");
            std::thread::sleep(Duration::from_millis(20));
        }
        Self {
            child,
            endpoint: format!("http://127.0.0.1:{port}"),
            root,
        }
    }

    /// `s3://models/PREFIX`.
    pub fn url(&self, prefix: &str) -> String {
        format!("s3://{BUCKET}/{prefix}")
    }

    /// The folder s3s-fs keeps the object `key` of the bucket in.
    pub fn object_path(&self, key: &str) -> PathBuf {
        self.root.path().join(BUCKET).join(key)
    }

    /// `llmgw` with the S3 endpoint and credentials in its environment,
    /// as an operator sets them.
    pub fn llmgw(&self) -> Command {
        let mut c = crate::bundle_kit::llmgw();
        self.env(&mut c);
        c
    }

    pub fn env(&self, c: &mut Command) {
        c.env("AWS_ACCESS_KEY_ID", ACCESS_KEY)
            .env("AWS_SECRET_ACCESS_KEY", SECRET_KEY)
            .env("AWS_ENDPOINT_URL", &self.endpoint)
            .env("AWS_REGION", "us-east-1")
            .env_remove("LLMGW_WORK_DIR");
    }

    /// A client of the store at `prefix`, its requests on `rt`.
    pub fn blobs(&self, prefix: &str, rt: &tokio::runtime::Runtime) -> llmgw_mirror::s3::S3Blobs {
        let cfg = llmgw_mirror::s3::S3Config {
            url: self.url(prefix),
            endpoint: Some(self.endpoint.clone()),
            region: Some("us-east-1".into()),
            credentials: Some((ACCESS_KEY.into(), SECRET_KEY.into())),
            presign: None,
        };
        llmgw_mirror::s3::S3Blobs::connect(&cfg, rt.handle().clone()).unwrap()
    }

    /// Every object key under the bucket's `prefix/`, as the folder holds them.
    pub fn keys(&self, prefix: &str) -> Vec<String> {
        let base = self.object_path(prefix);
        let mut out: Vec<String> = walk(&base)
            .into_iter()
            .map(|p| {
                p.strip_prefix(&base)
                    .unwrap()
                    .to_string_lossy()
                    .into_owned()
            })
            .collect();
        out.sort();
        out
    }
}

fn walk(dir: &Path) -> Vec<PathBuf> {
    let mut out = Vec::new();
    let Ok(rd) = std::fs::read_dir(dir) else {
        return out;
    };
    for e in rd.flatten() {
        let p = e.path();
        if p.is_dir() {
            out.extend(walk(&p));
        } else {
            out.push(p);
        }
    }
    out
}

impl Drop for S3 {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}
