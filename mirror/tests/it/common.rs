//! Test helpers: a store populated exactly as `llmgw bundle import` leaves
//! it (blobs at `blobs/sha256/<2>/<64>`, canonical manifests at
//! `bundles/<sha>.json`), an in-process server on 127.0.0.1, the real
//! huggingface_hub venvs, and a raw HTTP/1.1 client that sends paths
//! byte for byte.

#![allow(dead_code)]

use std::collections::BTreeMap;
use std::io::{Read, Write};
use std::net::{SocketAddr, TcpStream};
use std::path::{Path, PathBuf};
use std::process::Command;
use std::time::Duration;

use llmgw_mirror::Store;
use llmgw_mirror::{Running, ServeConfig, TlsFiles, start};
use llmgw_shared::manifest::*;
use llmgw_shared::sha256_hex;

pub const COMMIT: &str = "0123456789abcdef0123456789abcdef01234567";
pub const COMMIT2: &str = "89abcdef0123456789abcdef0123456789abcdef";
pub const DATA_COMMIT: &str = "fedcba9876543210fedcba9876543210fedcba98";

/// Deterministic bytes of a given size.
pub fn bytes(seed: u8, n: usize) -> Vec<u8> {
    let mut x: u32 = 0x9e37_79b9 ^ u32::from(seed);
    (0..n)
        .map(|_| {
            x ^= x << 13;
            x ^= x >> 17;
            x ^= x << 5;
            (x >> 24) as u8
        })
        .collect()
}

/// The files of the tiny model repo, by path: (content, lfs).
pub fn model_files() -> BTreeMap<String, (Vec<u8>, bool)> {
    let mut m = BTreeMap::new();
    m.insert(
        "config.json".into(),
        (b"{\"model_type\": \"llama\"}\n".to_vec(), false),
    );
    m.insert("sub/dir/vocab.txt".into(), (b"a\nb\nc\n".to_vec(), false));
    m.insert("a b+c.txt".into(), (b"spaces and plus\n".to_vec(), false));
    m.insert("README.md".into(), (b"# tiny\n".to_vec(), false));
    m.insert("tiny-Q4_K_M.gguf".into(), (bytes(1, 300_000), true));
    m.insert("tiny-Q8_0.gguf".into(), (bytes(2, 1_100_000), true));
    m.insert("model.safetensors".into(), (bytes(3, 70_000), true));
    m
}

pub fn dataset_files() -> BTreeMap<String, (Vec<u8>, bool)> {
    let mut m = BTreeMap::new();
    m.insert("data/train.csv".into(), (b"x,y\n1,2\n".to_vec(), false));
    m.insert("data/train.parquet".into(), (bytes(4, 50_000), true));
    m
}

/// Release assets: (repo, tag, engine, [(name, bytes)]).
pub fn llama_assets() -> Vec<(String, Vec<u8>)> {
    vec![
        ("llama-b6123-bin-ubuntu-x64.zip".into(), bytes(5, 600_000)),
        ("llama-b6123-bin-ubuntu-arm64.zip".into(), bytes(6, 1000)),
    ]
}

pub fn llmgw_assets() -> Vec<(String, Vec<u8>)> {
    let bin = bytes(7, 4096);
    let sums = format!("{}  llmgw-linux-amd64.tar.gz\n", sha256_hex(&bin));
    vec![
        ("llmgw-linux-amd64.tar.gz".into(), bin),
        ("SHA256SUMS".into(), sums.into_bytes()),
        (
            "SHA256SUMS.minisig".into(),
            b"untrusted comment: test\nRWQ=\ntrusted comment: t\nAA==\n".to_vec(),
        ),
    ]
}

pub fn hf_file(path: &str, body: &[u8], lfs: bool) -> HfFile {
    HfFile::describing(path, body, lfs)
}

pub fn asset(name: &str, body: &[u8]) -> Asset {
    let sha = sha256_hex(body);
    Asset {
        name: name.into(),
        size: body.len() as u64,
        sha256: sha.parse().unwrap(),
        publisher_digests: vec![PublisherDigest {
            source: DigestSource::GithubAssetDigest,
            value: sha,
        }],
        content_type: Some("application/zip".into()),
    }
}

/// Writes blobs and a manifest into a store as import does; returns the
/// bundle id.
pub fn import(store: &Path, m: &Manifest, blobs: &[&[u8]]) -> String {
    let s = Store::at(store);
    s.create_dirs().unwrap();
    for b in blobs {
        let p = s.blob_file(&llmgw_shared::Sha256::of(b));
        std::fs::create_dir_all(p.parent().unwrap()).unwrap();
        std::fs::write(&p, b).unwrap();
    }
    let bytes = m.to_canonical_json();
    let id = llmgw_shared::BundleId::of(&bytes);
    let tmp = s.tmp_dir().join(format!("{id}.json"));
    std::fs::write(&tmp, &bytes).unwrap();
    std::fs::rename(&tmp, s.bundle_file(&id)).unwrap();
    id.to_string()
}

/// The main test bundle: model acme/tiny at `main` = COMMIT, dataset
/// acme/data, llama.cpp b6123 and llmgw v0.1.0.
pub fn main_bundle() -> (Manifest, Vec<Vec<u8>>) {
    let mut m = Manifest::new(vec!["amd64".into(), "arm64".into()], 1_780_000_000);
    let mut blobs = Vec::new();
    let mut files = Vec::new();
    for (p, (b, lfs)) in model_files() {
        files.push(hf_file(&p, &b, lfs));
        blobs.push(b);
    }
    m.repos.push(HfRepo {
        kind: RepoKind::Model,
        id: "acme/tiny".parse().unwrap(),
        revision: "main".into(),
        ref_kind: None,
        commit: COMMIT.into(),
        patterns: vec![],
        files,
        kernel: None,
    });
    let mut files = Vec::new();
    for (p, (b, lfs)) in dataset_files() {
        files.push(hf_file(&p, &b, lfs));
        blobs.push(b);
    }
    m.repos.push(HfRepo {
        kind: RepoKind::Dataset,
        id: "acme/data".parse().unwrap(),
        revision: "v1.0".into(),
        ref_kind: None,
        commit: DATA_COMMIT.into(),
        patterns: vec![],
        files,
        kernel: None,
    });
    let mut assets = Vec::new();
    for (n, b) in llama_assets() {
        assets.push(asset(&n, &b));
        blobs.push(b);
    }
    m.releases.push(Release {
        repo: "ggml-org/llama.cpp".parse().unwrap(),
        tag: "b6123".into(),
        engine: "llamacpp".into(),
        version: "b6123".into(),
        builds: vec![],
        assets,
        signature: None,
    });
    let mut assets = Vec::new();
    for (n, b) in llmgw_assets() {
        assets.push(asset(&n, &b));
        blobs.push(b);
    }
    m.releases.push(Release {
        repo: "llmgw/llmgw".parse().unwrap(),
        tag: "v0.1.0".into(),
        engine: LLMGW_ENGINE.into(),
        version: "0.1.0".into(),
        builds: vec![],
        assets,
        signature: Some(ReleaseSignature {
            sums: "SHA256SUMS".into(),
            minisig: "SHA256SUMS.minisig".into(),
            key_id: "FDC2A80904DE4D".into(),
        }),
    });
    (m, blobs)
}

/// A store holding [`main_bundle`].
pub fn store_with_main_bundle() -> (tempfile::TempDir, PathBuf, String) {
    let dir = tempfile::tempdir().unwrap();
    let store = dir.path().join("store");
    let (m, blobs) = main_bundle();
    let refs: Vec<&[u8]> = blobs.iter().map(|b| b.as_slice()).collect();
    let id = import(&store, &m, &refs);
    (dir, store, id)
}

/// A server running on its own runtime, stopped on drop.
pub struct Server {
    pub rt: tokio::runtime::Runtime,
    pub running: Option<Running>,
    pub addr: SocketAddr,
    pub url: String,
}

impl Drop for Server {
    fn drop(&mut self) {
        if let Some(r) = self.running.take() {
            let _ = self.rt.block_on(r.shutdown(Duration::from_millis(100)));
        }
    }
}

pub fn config(store: &Path) -> ServeConfig {
    ServeConfig {
        store: store.to_path_buf().into(),
        bucket: Default::default(),
        listen: "127.0.0.1:0".parse().unwrap(),
        public_url: None,
        tls: None,
        token_file: None,
        limits: Default::default(),
    }
}

pub fn serve(store: &Path) -> Server {
    serve_with(config(store))
}

pub fn serve_with(cfg: ServeConfig) -> Server {
    let rt = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .unwrap();
    let running = rt.block_on(start(cfg)).unwrap();
    let addr = running.addr;
    let url = running.url();
    let s = Server {
        rt,
        running: Some(running),
        addr,
        url,
    };
    // Wait until the store is read, then (a little longer) until the
    // models' layers a store written without `bundle import` leaves to the
    // server are hashed: `/readyz` says 503 while they are (#47 item 5).
    let state = s.running.as_ref().unwrap().state.clone();
    for _ in 0..200 {
        if state.is_ready() {
            // The hashing thread starts right after the index is published.
            std::thread::sleep(Duration::from_millis(20));
            for _ in 0..200 {
                if state.readiness() != llmgw_mirror::Readiness::HashingModels {
                    break;
                }
                std::thread::sleep(Duration::from_millis(10));
            }
            return s;
        }
        std::thread::sleep(Duration::from_millis(10));
    }
    panic!("the server did not read its store within 2 s");
}

pub fn tls(cert: PathBuf, key: PathBuf) -> Option<TlsFiles> {
    Some(TlsFiles { cert, key })
}

/// A raw HTTP/1.1 exchange: the request line's target is sent as given.
pub struct Reply {
    pub status: u16,
    pub headers: Vec<(String, String)>,
    pub body: Vec<u8>,
}

impl Reply {
    pub fn header(&self, name: &str) -> Option<&str> {
        self.headers
            .iter()
            .find(|(k, _)| k.eq_ignore_ascii_case(name))
            .map(|(_, v)| v.as_str())
    }
    pub fn text(&self) -> String {
        String::from_utf8_lossy(&self.body).into_owned()
    }
    pub fn json(&self) -> serde_json::Value {
        serde_json::from_slice(&self.body)
            .unwrap_or_else(|e| panic!("not JSON ({e}): {}", self.text()))
    }
}

pub fn raw(addr: SocketAddr, method: &str, target: &[u8], headers: &[(&str, &str)]) -> Reply {
    raw_with_body(addr, method, target, headers, b"")
}

pub fn raw_with_body(
    addr: SocketAddr,
    method: &str,
    target: &[u8],
    headers: &[(&str, &str)],
    body: &[u8],
) -> Reply {
    let mut s = TcpStream::connect(addr).unwrap();
    s.set_read_timeout(Some(Duration::from_secs(20))).unwrap();
    let mut req = Vec::new();
    req.extend_from_slice(method.as_bytes());
    req.push(b' ');
    req.extend_from_slice(target);
    req.extend_from_slice(b" HTTP/1.1\r\nHost: ");
    req.extend_from_slice(addr.to_string().as_bytes());
    req.extend_from_slice(b"\r\nConnection: close\r\n");
    for (k, v) in headers {
        req.extend_from_slice(format!("{k}: {v}\r\n").as_bytes());
    }
    if !body.is_empty() {
        req.extend_from_slice(format!("Content-Length: {}\r\n", body.len()).as_bytes());
    }
    req.extend_from_slice(b"\r\n");
    req.extend_from_slice(body);
    s.write_all(&req).unwrap();
    let mut buf = Vec::new();
    let _ = s.read_to_end(&mut buf);
    let split = buf
        .windows(4)
        .position(|w| w == b"\r\n\r\n")
        .unwrap_or_else(|| panic!("no response head: {:?}", String::from_utf8_lossy(&buf)));
    let head = String::from_utf8_lossy(&buf[..split]).into_owned();
    let mut lines = head.split("\r\n");
    let status: u16 = lines
        .next()
        .unwrap()
        .split(' ')
        .nth(1)
        .unwrap()
        .parse()
        .unwrap();
    let headers: Vec<(String, String)> = lines
        .filter_map(|l| l.split_once(':'))
        .map(|(k, v)| (k.trim().to_string(), v.trim().to_string()))
        .collect();
    let mut body = buf[split + 4..].to_vec();
    if headers
        .iter()
        .any(|(k, v)| k.eq_ignore_ascii_case("transfer-encoding") && v.contains("chunked"))
    {
        body = dechunk(&body);
    }
    Reply {
        status,
        headers,
        body,
    }
}

fn dechunk(mut b: &[u8]) -> Vec<u8> {
    let mut out = Vec::new();
    loop {
        let Some(i) = b.windows(2).position(|w| w == b"\r\n") else {
            return out;
        };
        let n = usize::from_str_radix(String::from_utf8_lossy(&b[..i]).trim(), 16).unwrap_or(0);
        if n == 0 {
            return out;
        }
        out.extend_from_slice(&b[i + 2..i + 2 + n]);
        b = &b[i + 2 + n + 2..];
    }
}

pub fn get(addr: SocketAddr, target: &str) -> Reply {
    raw(addr, "GET", target.as_bytes(), &[])
}

/// The workspace root (two levels above this crate).
pub fn workspace() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .parent()
        .unwrap()
        .to_path_buf()
}

/// A venv's python: from `var` or `<workspace>/<default>`; fails the test
/// (never skips) when it is missing.
pub fn venv_python(var: &str, default: &str) -> PathBuf {
    let dir = std::env::var_os(var)
        .map(PathBuf::from)
        .unwrap_or_else(|| workspace().join(default));
    let py = dir.join("bin").join("python");
    assert!(
        py.exists(),
        "{} is missing: run scripts/setup.sh (or set {var})",
        py.display()
    );
    py
}

pub fn hf24() -> PathBuf {
    venv_python("LLMGW_VENV", ".venv")
}

pub fn hf036() -> PathBuf {
    venv_python("LLMGW_VENV_HF036", ".venv-hf036")
}

/// Runs a Python script with a real huggingface_hub pointed at the mirror,
/// with a fresh HF_HOME; returns stdout, panicking with stderr on failure.
pub fn python(py: &Path, endpoint: &str, home: &Path, script: &str) -> String {
    python_env(py, endpoint, home, script, &[])
}

pub fn python_env(
    py: &Path,
    endpoint: &str,
    home: &Path,
    script: &str,
    env: &[(&str, &str)],
) -> String {
    let out = Command::new(py)
        .arg("-c")
        .arg(script)
        .env("HF_ENDPOINT", endpoint)
        .env("HF_HOME", home)
        .env("HF_HUB_DISABLE_TELEMETRY", "1")
        .env_remove("HF_TOKEN")
        .env_remove("HF_HUB_OFFLINE")
        .envs(env.iter().copied())
        .output()
        .unwrap();
    let stdout = String::from_utf8_lossy(&out.stdout).into_owned();
    let stderr = String::from_utf8_lossy(&out.stderr).into_owned();
    assert!(
        out.status.success(),
        "python failed ({}):\nstdout:\n{stdout}\nstderr:\n{stderr}",
        out.status
    );
    stdout
}

/// Runs a program from a venv's bin (e.g. `hf`).
pub fn venv_bin(py: &Path, name: &str) -> PathBuf {
    py.parent().unwrap().join(name)
}
