//! What every create test uses: the fixture upstream, the command with its
//! flags, and readers of what create wrote.

pub use crate::bundle_kit::{fails, ok, text};
use assert_cmd::cargo::CommandCargoExt;
use llmgw_fixture::{Fixture, FixtureOptions, TINY_COMMIT};
use llmgw_shared::manifest::Manifest;
use sha2::{Digest, Sha256};
use std::fs;
use std::io::Read;
use std::path::{Path, PathBuf};
use std::process::{Command, Output};

pub fn fixture() -> Fixture {
    fixture_with(FixtureOptions::default())
}

pub fn fixture_with(opts: FixtureOptions) -> Fixture {
    Fixture::start_blocking(opts).expect("start the fixture upstream")
}

/// `llmgw bundle create` with the fixture's URLs and a cache in `dir`, and
/// nothing from the environment that could change the run.
pub fn create(fx: &Fixture, dir: &Path) -> Command {
    create_cache(fx, &dir.join("cache"))
}

pub fn create_cache(fx: &Fixture, cache: &Path) -> Command {
    let mut c = Command::cargo_bin("llmgw").unwrap();
    c.args(["bundle", "create"])
        .arg("--github-api")
        .arg(fx.github_api_url())
        .arg("--hf-endpoint")
        .arg(fx.hf_endpoint())
        .arg("--cache")
        .arg(cache)
        .env_remove("HF_TOKEN")
        .env_remove("HF_ENDPOINT")
        .env_remove("SOURCE_DATE_EPOCH")
        .env("RUST_LOG", "warn");
    c
}

/// Everything at once: llmgw's release, llama.cpp and uv for both arches,
/// a model and a dataset.
pub fn everything(c: &mut Command, fx: &Fixture) {
    c.args(["--arch", "amd64,arm64", "--llmgw", "v0.5.0", "--llmgw-api"])
        .arg(fx.llmgw_api_url())
        .arg("--trust")
        .arg(fx.trust_key_path())
        .args([
            "--engine",
            "llamacpp=b6123",
            "--engine",
            "uv=0.12.20",
            "--model",
            "acme/tiny@main",
            "--dataset",
            "acme/data",
        ]);
}

pub fn run(c: &mut Command) -> Output {
    c.output().expect("run llmgw")
}

pub fn sha256_file(p: &Path) -> String {
    let mut h = Sha256::new();
    let mut f = fs::File::open(p).unwrap();
    let mut buf = vec![0u8; 1 << 16];
    loop {
        let n = f.read(&mut buf).unwrap();
        if n == 0 {
            break;
        }
        h.update(&buf[..n]);
    }
    hex::encode(h.finalize())
}

pub fn tool(cmd: &str, args: &[&str], cwd: &Path) -> String {
    let o = Command::new(cmd)
        .args(args)
        .current_dir(cwd)
        .output()
        .unwrap_or_else(|e| panic!("{cmd}: {e}; run scripts/setup.sh"));
    assert!(o.status.success(), "{cmd} {args:?}: {}", text(&o.stderr));
    text(&o.stdout)
}

/// Names in `dir` (the output folder), to prove nothing was left behind.
pub fn listing(dir: &Path) -> Vec<String> {
    let mut v: Vec<String> = fs::read_dir(dir)
        .unwrap()
        .flatten()
        .map(|e| e.file_name().to_string_lossy().into_owned())
        .filter(|n| n != "cache")
        .collect();
    v.sort();
    v
}

pub fn manifest_of_dir(dir: &Path) -> Manifest {
    Manifest::from_json_bytes(&fs::read(dir.join("manifest.json")).unwrap()).unwrap()
}

pub fn walk(dir: &Path) -> Vec<PathBuf> {
    let mut out = Vec::new();
    for e in fs::read_dir(dir).unwrap().flatten() {
        let p = e.path();
        if p.is_dir() {
            out.extend(walk(&p));
        } else {
            out.push(p);
        }
    }
    out
}

/// Where blob `sha`'s data starts in a tar written so far, if its header is there.
pub fn data_offset(tar: &[u8], sha: &str) -> Option<usize> {
    let name = format!("blobs/sha256/{sha}");
    (0..tar.len() / 512)
        .map(|i| i * 512)
        .find(|&at| tar[at..].starts_with(name.as_bytes()))
        .map(|at| at + 512)
}

pub fn tiny_lfs_sha(fx: &Fixture) -> String {
    fx.catalog()
        .hub
        .iter()
        .find(|r| r.id == "acme/tiny")
        .and_then(|r| r.commits.iter().find(|c| c.sha == TINY_COMMIT))
        .and_then(|c| c.files.iter().find(|f| f.path == "model.safetensors"))
        .map(|f| f.blob.sha256.clone())
        .unwrap()
}
