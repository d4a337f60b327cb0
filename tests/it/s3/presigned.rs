//! `mirror serve --blob-delivery presigned`: a GET of a file is a 307 to a
//! short-lived presigned URL on the public S3 endpoint (here `localhost`,
//! another origin than the mirror's `127.0.0.1`); HEAD and JSON are
//! answered by the mirror and never redirected; curl and the real
//! huggingface_hub clients (2.4.0 and 0.36.2) follow and get the bytes,
//! without sending an Authorization header on.

use std::path::PathBuf;
use std::process::Command;

use super::import::{import, model_bundle};
use super::replicas::Replica;
use super::server::on_each;

fn curl(args: &[&str]) -> (String, Vec<u8>) {
    let head = tempfile::NamedTempFile::new().unwrap();
    let o = Command::new("curl")
        .args(["-s", "-D"])
        .arg(head.path())
        .args(args)
        .output()
        .expect("curl");
    (std::fs::read_to_string(head.path()).unwrap(), o.stdout)
}

fn venv_python(var: &str) -> PathBuf {
    let dir = std::env::var_os(var).unwrap_or_else(|| {
        panic!("{var} is not set: it names a huggingface_hub venv (scripts/setup.sh makes it)")
    });
    let p = PathBuf::from(dir).join("bin").join("python");
    assert!(
        p.exists(),
        "{} is missing: run scripts/setup.sh",
        p.display()
    );
    p
}

#[test]
fn get_redirects_to_a_presigned_url_and_head_never_does() {
    on_each(|s3| {
        let dir = tempfile::tempdir().unwrap();
        let url = s3.url("pre");
        let (kit, bundle) = model_bundle(dir.path(), "pre", &[3 << 20, 77]);
        let o = import(s3, &url, &bundle, &kit.sha256());
        assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
        let big = kit.blobs[kit.manifest.repos[0].files[0].sha256.as_str()].clone();

        // Nodes reach the S3 server as `localhost`, the mirror as 127.0.0.1,
        // through a strict front that refuses any request with an
        // Authorization header (as AWS refuses a second auth mechanism;
        // s3s-fs alone does not).
        let strict = Strict::start(&s3.endpoint);
        let public = format!("http://localhost:{}", strict.port);
        let replica = Replica::start_with(
            s3,
            &url,
            &[
                "--blob-delivery",
                "presigned",
                "--s3-public-endpoint",
                &public,
            ],
        );
        let mirror = &replica.url;
        let file = format!("{mirror}/acme/pre/resolve/main/part-0.bin");

        // HEAD: the mirror's own answer, with the size; never a redirect.
        let (h, _) = curl(&["-I", &file]);
        assert!(h.starts_with("HTTP/1.1 200"), "{h}");
        assert!(h.contains(&format!("content-length: {}", big.len())), "{h}");
        assert!(!h.to_ascii_lowercase().contains("location:"), "{h}");

        // GET: 307 to the public endpoint, signed, not cacheable.
        let (h, _) = curl(&[&file]);
        assert!(h.starts_with("HTTP/1.1 307"), "{h}");
        let location = h
            .lines()
            .find_map(|l| l.strip_prefix("location: "))
            .unwrap_or_else(|| panic!("no location in {h}"))
            .trim()
            .to_string();
        assert!(
            location.starts_with(&format!("{public}/{}/pre/blobs/sha256/", s3.server.bucket)),
            "{location}"
        );
        assert!(location.contains("X-Amz-Signature="), "{location}");
        assert!(h.contains("cache-control: no-store"), "{h}");

        // Followed: the bytes, whole and by range.
        let (_, body) = curl(&["-L", &file]);
        assert!(body == big, "the redirected download differs");
        let (h, body) = curl(&["-L", "-r", "100-199", &file]);
        assert!(h.contains("HTTP/1.1 206"), "{h}");
        assert!(body == big[100..200], "the redirected range differs");

        // The strict front refuses a presigned URL that also carries an
        // Authorization header; a client following the redirect with its
        // token would fail there.
        let (h, _) = curl(&["-H", "Authorization: Bearer node-token", &location]);
        assert!(h.starts_with("HTTP/1.1 400"), "{h}");
        let (h, _) = curl(&["-L", "-H", "Authorization: Bearer node-token", &file]);
        assert!(
            h.contains("HTTP/1.1 200"),
            "curl sent its token across origins: {h}"
        );
        let refused = strict.refused();

        // The real huggingface_hub clients, old and new, follow the redirect
        // across origins and check what they got.
        let script = r#"
import sys
from huggingface_hub import hf_hub_download
url, cache = sys.argv[1:3]
path = hf_hub_download("acme/pre", "part-0.bin", revision="main", cache_dir=cache, endpoint=url)
sys.stdout.write(open(path, "rb").read().hex())
"#;
        for var in ["LLMGW_VENV", "LLMGW_VENV_HF036"] {
            let cache = dir.path().join(format!("cache-{var}"));
            let o = Command::new(venv_python(var))
                .args(["-c", script, mirror])
                .arg(&cache)
                .env("HF_HOME", dir.path().join(format!("home-{var}")))
                .env("HF_HUB_DISABLE_TELEMETRY", "1")
                .env("HF_TOKEN", "node-token")
                // The plain download is what is redirected: Xet's token
                // route is at the public URL this test cannot reach.
                .env("HF_HUB_DISABLE_XET", "1")
                .env_remove("HF_ENDPOINT")
                .output()
                .unwrap();
            assert!(
                o.status.success(),
                "{var}: {}",
                String::from_utf8_lossy(&o.stderr)
            );
            assert!(
                o.stdout == hex::encode(&big).into_bytes(),
                "{var}: the download differs"
            );
        }
        assert_eq!(
            strict.refused(),
            refused,
            "a client forwarded its token to S3"
        );
    });
}

/// A loopback front for the S3 server that refuses (400) any request
/// carrying an Authorization header and passes the others on, one
/// request per connection.
struct Strict {
    port: u16,
    refused: std::sync::Arc<std::sync::atomic::AtomicUsize>,
}

impl Strict {
    fn start(backend: &str) -> Self {
        use std::io::{Read, Write};
        use std::sync::atomic::Ordering;
        let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
        let port = listener.local_addr().unwrap().port();
        let backend = backend.trim_start_matches("http://").to_string();
        let refused = std::sync::Arc::new(std::sync::atomic::AtomicUsize::new(0));
        let count = refused.clone();
        std::thread::spawn(move || {
            for conn in listener.incoming() {
                let Ok(mut client) = conn else { return };
                let backend = backend.clone();
                let count = count.clone();
                std::thread::spawn(move || {
                    let mut head = Vec::new();
                    let mut byte = [0u8; 1];
                    while !head.ends_with(b"\r\n\r\n") {
                        if client.read(&mut byte).unwrap_or(0) == 0 {
                            return;
                        }
                        head.push(byte[0]);
                    }
                    let text = String::from_utf8_lossy(&head).into_owned();
                    let lines: Vec<&str> = text.split("\r\n").filter(|l| !l.is_empty()).collect();
                    let has_auth = lines[1..]
                        .iter()
                        .any(|l| l.to_ascii_lowercase().starts_with("authorization:"));
                    if has_auth {
                        count.fetch_add(1, Ordering::SeqCst);
                        let _ = client.write_all(
                            b"HTTP/1.1 400 Bad Request\r\ncontent-length: 0\r\nconnection: close\r\n\r\n",
                        );
                        return;
                    }
                    let mut out = String::new();
                    for l in &lines {
                        if !l.to_ascii_lowercase().starts_with("connection:") {
                            out.push_str(l);
                            out.push_str("\r\n");
                        }
                    }
                    out.push_str("connection: close\r\n\r\n");
                    let mut up = std::net::TcpStream::connect(&backend).unwrap();
                    up.write_all(out.as_bytes()).unwrap();
                    let _ = std::io::copy(&mut up, &mut client);
                });
            }
        });
        Self { port, refused }
    }

    fn refused(&self) -> usize {
        self.refused.load(std::sync::atomic::Ordering::SeqCst)
    }
}
