//! The Hugging Face Hub routes, judged by the real Python clients:
//! huggingface_hub 2.4.0 (`hf` CLI and Python API) and 0.36.2, from the
//! pinned venvs scripts/setup.sh makes.

use llmgw_shared::sha256_hex;

use crate::common::*;

/// A Rust string as a Python string literal (the two agree for the
/// ASCII these tests quote).
fn py_quote(s: &str) -> String {
    format!("{s:?}")
}

#[test]
fn hf_cli_240_download_and_cache_verify() {
    let (d, store, _) = store_with_main_bundle();
    let srv = serve(&store);
    let py = hf24();
    let hf = venv_bin(&py, "hf");
    let cache = d.path().join("cache");
    let home = d.path().join("home");
    let run = |args: &[&str]| {
        let out = std::process::Command::new(&hf)
            .args(args)
            .arg("--cache-dir")
            .arg(&cache)
            .env("HF_ENDPOINT", &srv.url)
            .env("HF_HOME", &home)
            .env("HF_HUB_DISABLE_TELEMETRY", "1")
            .env_remove("HF_TOKEN")
            .output()
            .unwrap();
        let text = format!(
            "{}{}",
            String::from_utf8_lossy(&out.stdout),
            String::from_utf8_lossy(&out.stderr)
        );
        assert!(out.status.success(), "hf {args:?} failed:\n{text}");
        text
    };
    run(&["download", "acme/tiny"]);
    let snap = cache
        .join("models--acme--tiny")
        .join("snapshots")
        .join(COMMIT);
    for (p, (b, _)) in model_files() {
        assert_eq!(std::fs::read(snap.join(&p)).unwrap(), b, "{p}");
    }
    let out = run(&["cache", "verify", "acme/tiny"]);
    assert!(out.to_lowercase().contains("verified"), "{out}");
    run(&[
        "download",
        "acme/data",
        "--repo-type",
        "dataset",
        "--revision",
        "v1.0",
    ]);
    let out = run(&[
        "cache",
        "verify",
        "acme/data",
        "--repo-type",
        "dataset",
        "--revision",
        "v1.0",
    ]);
    assert!(out.to_lowercase().contains("verified"), "{out}");
}

#[test]
fn hf_python_240_api() {
    let (d, store, _) = store_with_main_bundle();
    let srv = serve(&store);
    let py = hf24();
    let files = model_files();
    let script = r#"
import hashlib, os
from huggingface_hub import snapshot_download, model_info, file_exists, HfFileSystem, hf_hub_download
p = snapshot_download("acme/tiny", allow_patterns=["*.json", "sub/*"])
got = sorted(os.path.relpath(os.path.join(r, f), p) for r, _, fs in os.walk(p) for f in fs)
print("SNAP", got)
info = model_info("acme/tiny", files_metadata=True)
print("SHA", info.sha)
for s in info.siblings:
    if s.lfs:
        print("LFS", s.rfilename, s.lfs.sha256, s.lfs.size)
fs = HfFileSystem()
print("LS", sorted(e["name"] for e in fs.ls("acme/tiny", detail=True)))
print("LSSUB", fs.ls("acme/tiny/sub/dir", detail=False))
print("MISSING", file_exists("acme/tiny", "missing.bin"))
print("PRESENT", file_exists("acme/tiny", "config.json"))
f = hf_hub_download("acme/data", "data/train.parquet", repo_type="dataset", revision="v1.0")
print("DATA", hashlib.sha256(open(f, "rb").read()).hexdigest())
"#;
    let out = python(&py, &srv.url, &d.path().join("home"), script);
    assert!(
        out.contains("SNAP ['config.json', 'sub/dir/vocab.txt']"),
        "{out}"
    );
    assert!(out.contains(&format!("SHA {COMMIT}")), "{out}");
    let q4 = sha256_hex(&files["tiny-Q4_K_M.gguf"].0);
    assert!(
        out.contains(&format!("LFS tiny-Q4_K_M.gguf {q4} 300000")),
        "{out}"
    );
    assert!(out.contains("'acme/tiny/sub'"), "{out}");
    assert!(out.contains("'acme/tiny/config.json'"), "{out}");
    assert!(
        out.contains("LSSUB ['acme/tiny/sub/dir/vocab.txt']"),
        "{out}"
    );
    assert!(out.contains("MISSING False"), "{out}");
    assert!(out.contains("PRESENT True"), "{out}");
    let data = sha256_hex(&dataset_files()["data/train.parquet"].0);
    assert!(out.contains(&format!("DATA {data}")), "{out}");
}

#[test]
fn hf_python_036_snapshot_and_pinned_download() {
    let (d, store, _) = store_with_main_bundle();
    let srv = serve(&store);
    let py = hf036();
    let script = format!(
        r#"
import hashlib, os, huggingface_hub
from huggingface_hub import snapshot_download, hf_hub_download
assert huggingface_hub.__version__ == "0.36.2", huggingface_hub.__version__
p = snapshot_download("acme/tiny")
for r, _, fs in os.walk(p):
    for f in fs:
        full = os.path.join(r, f)
        print("FILE", os.path.relpath(full, p), hashlib.sha256(open(full, "rb").read()).hexdigest())
f = hf_hub_download("acme/tiny", "tiny-Q8_0.gguf", revision={commit})
print("PINNED", hashlib.sha256(open(f, "rb").read()).hexdigest(), {commit} in f)
"#,
        commit = py_quote(COMMIT)
    );
    let out = python(&py, &srv.url, &d.path().join("home"), &script);
    for (p, (b, _)) in model_files() {
        assert!(
            out.contains(&format!("FILE {p} {}", sha256_hex(&b))),
            "{p}: {out}"
        );
    }
    let q8 = sha256_hex(&model_files()["tiny-Q8_0.gguf"].0);
    assert!(out.contains(&format!("PINNED {q8} True")), "{out}");
}
