//! How create downloads: a 503 retried, a cut body resumed with Range, a
//! killed run resumed from its bundle, each byte written once without a
//! cache, and free space checked before anything is fetched.

use super::common::*;
use assert_cmd::cargo::CommandCargoExt;
use llmgw_fixture::TINY_COMMIT;
use std::fs;
use std::path::PathBuf;
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

#[test]
fn a_503_is_retried() {
    let fx = fixture();
    let d = tempfile::tempdir().unwrap();
    let path = "/astral-sh/uv/releases/download/0.12.20/uv-x86_64-unknown-linux-gnu.tar.gz";
    fx.faults().status_once(path, 503);
    let mut c = create(&fx, d.path());
    c.args(["--arch", "amd64", "--engine", "uv=0.12.20"]);
    let o = run(c.arg("--out").arg(d.path().join("b.tar")));
    ok(&o);
    assert!(text(&o.stderr).contains("503"), "{}", text(&o.stderr));
    let gets = fx
        .requests()
        .iter()
        .filter(|r| r.path_only() == path && r.method == "GET")
        .count();
    assert_eq!(gets, 2, "one 503, then the retry");
}

#[test]
fn a_cut_body_resumes_with_range() {
    let fx = fixture();
    let d = tempfile::tempdir().unwrap();
    let path = format!("/acme/tiny/resolve/{TINY_COMMIT}/model.safetensors");
    fx.faults().cut_once(&path, 100_000);
    let mut c = create(&fx, d.path());
    c.args([
        "--arch",
        "amd64",
        "--model",
        "acme/tiny:model.safetensors",
        "--json",
    ]);
    let report: serde_json::Value =
        serde_json::from_str(&ok(&run(c.arg("--out").arg(d.path().join("b.tar"))))).unwrap();
    // The resumed request asked for the rest only, and no byte came twice.
    let ranges: Vec<String> = fx
        .requests()
        .iter()
        .filter_map(|r| r.header("range").map(String::from))
        .collect();
    assert!(ranges.contains(&"bytes=100000-".to_string()), "{ranges:?}");
    assert_eq!(report["bytes_downloaded"].as_u64(), Some(300_000));
}

#[test]
fn a_killed_run_resumes_from_its_bundle() {
    let fx = fixture();
    let d = tempfile::tempdir().unwrap();
    let sha = tiny_lfs_sha(&fx);
    let path = format!("/acme/tiny/resolve/{TINY_COMMIT}/model.safetensors");
    // The first body is cut after 100000 bytes and every answer waits 2 s:
    // the run sits in its retry with exactly that much written. Kill it there.
    fx.faults().cut_once(&path, 100_000);
    fx.faults().delay(&path, 2000);
    let out = d.path().join("b.tar");
    let temp = d.path().join(".b.tar.partial");
    let mut c = create(&fx, d.path());
    c.args(["--arch", "amd64", "--model", "acme/tiny", "--json"])
        .arg("--out")
        .arg(&out)
        .stdout(Stdio::null())
        .stderr(Stdio::null());
    let mut child = c.spawn().unwrap();
    let start = Instant::now();
    loop {
        // The bundle being written holds the file's header and 100000 bytes.
        let bytes = fs::read(&temp).unwrap_or_default();
        if let Some(at) = data_offset(&bytes, &sha)
            && bytes.len() == at + 100_000
        {
            break;
        }
        assert!(
            start.elapsed() < Duration::from_secs(30),
            "never saw the partial bundle"
        );
        std::thread::sleep(Duration::from_millis(20));
    }
    child.kill().unwrap();
    child.wait().unwrap();
    assert!(!out.exists());
    fx.faults().clear();
    fx.clear_requests();

    let mut c = create(&fx, d.path());
    c.args(["--arch", "amd64", "--model", "acme/tiny", "--json"]);
    let report: serde_json::Value =
        serde_json::from_str(&ok(&run(c.arg("--out").arg(&out)))).unwrap();
    let ranges: Vec<String> = fx
        .requests()
        .iter()
        .filter_map(|r| r.header("range").map(String::from))
        .collect();
    // Asked once (the Hub's resolve, then its storage), for the rest only.
    assert!(
        !ranges.is_empty() && ranges.iter().all(|r| r == "bytes=100000-"),
        "{ranges:?}"
    );
    // Every other file of the repo came from the bundle the killed run
    // wrote, or over the network now; the big one only from byte 100000 on.
    let total = report["bytes"].as_u64().unwrap();
    let fetched = report["bytes_downloaded"].as_u64().unwrap();
    let reused = report["bytes_reused"].as_u64().unwrap();
    assert!(fetched <= total - 100_000, "{report}");
    // The 100000 bytes the killed run wrote count as reused: the counts add up.
    assert!(reused >= 100_000, "{report}");
    // The SBOM (#33) is made here: neither downloaded nor reused.
    let listed_manifest = tool("tar", &["-xOf", "b.tar", "manifest.json"], d.path());
    let m = llmgw_shared::manifest::Manifest::from_json_bytes(listed_manifest.as_bytes()).unwrap();
    let made = m.evidence.map_or(0, |e| e.sbom.size);
    assert_eq!(fetched + reused + made, total, "{report}");
    assert!(!temp.exists());
    let listed = tool("tar", &["-tf", "b.tar"], d.path());
    assert_eq!(
        listed.lines().count() as u64,
        report["blobs"].as_u64().unwrap() + 1
    );

    // --cache was given: the cache kept every blob, so a third run fetches
    // nothing at all, and writes the same bundle.
    fx.clear_requests();
    let mut c = create(&fx, d.path());
    c.args(["--arch", "amd64", "--model", "acme/tiny", "--json"]);
    let report: serde_json::Value =
        serde_json::from_str(&ok(&run(c.arg("--out").arg(d.path().join("c.tar"))))).unwrap();
    assert_eq!(report["bytes_downloaded"].as_u64(), Some(0));
    assert!(!fx.requests().iter().any(|r| r.path.contains("/resolve/")));
    assert!(
        d.path().join("cache/blobs/sha256").join(&sha).is_file(),
        "the resumed blob was kept in the cache too"
    );
}

/// Without --cache, a tar bundle is the only place a download is written;
/// a directory bundle's files are the cache's (hard links), so it keeps them.
#[test]
fn without_cache_each_byte_is_written_once() {
    let fx = fixture();
    let d = tempfile::tempdir().unwrap();
    let sha = tiny_lfs_sha(&fx);
    let xdg = d.path().join("xdg");
    let run_to = |out: &str| -> serde_json::Value {
        let mut c = Command::cargo_bin("llmgw").unwrap();
        c.args([
            "bundle",
            "create",
            "--arch",
            "amd64",
            "--model",
            "acme/tiny",
            "--json",
        ])
        .arg("--hf-endpoint")
        .arg(fx.hf_endpoint())
        .arg("--out")
        .arg(d.path().join(out))
        .env("XDG_CACHE_HOME", &xdg)
        .env_remove("HF_TOKEN")
        .env_remove("HF_ENDPOINT")
        .env_remove("SOURCE_DATE_EPOCH");
        serde_json::from_str(&ok(&run(&mut c))).unwrap()
    };
    let cached = xdg.join("llmgw/blobs/sha256").join(&sha);
    for out in ["a.tar", "a.tar.zst"] {
        let r = run_to(out);
        assert!(r["bytes_downloaded"].as_u64().unwrap() >= 300_000, "{r}");
        assert!(!cached.exists(), "{out}: the cache kept a copy");
        assert_eq!(
            fs::read_dir(xdg.join("llmgw/partial")).unwrap().count(),
            0,
            "{out}"
        );
    }
    let r = run_to("dir");
    assert!(r["bytes_downloaded"].as_u64().unwrap() >= 300_000, "{r}");
    use std::os::unix::fs::MetadataExt;
    let linked = d.path().join("dir/blobs/sha256").join(&sha);
    assert_eq!(
        fs::metadata(&linked).unwrap().ino(),
        fs::metadata(&cached).unwrap().ino()
    );
    // What the directory run kept, a later tar run reuses.
    fx.clear_requests();
    let r = run_to("b.tar");
    assert_eq!(r["bytes_downloaded"].as_u64(), Some(0), "{r}");
}

#[test]
fn not_enough_space_is_refused_before_downloading() {
    let fx = fixture();
    let d = tempfile::tempdir().unwrap();
    let small = d.path().join("small");
    fs::create_dir(&small).unwrap();
    let m = Command::new("mount")
        .args(["-t", "tmpfs", "-o", "size=256k", "tmpfs"])
        .arg(&small)
        .output()
        .expect("mount");
    assert!(
        m.status.success(),
        "this test mounts a 256 KiB tmpfs and needs root: {}",
        text(&m.stderr)
    );
    struct Unmount(PathBuf);
    impl Drop for Unmount {
        fn drop(&mut self) {
            let _ = Command::new("umount").arg(&self.0).status();
        }
    }
    let _u = Unmount(small.clone());
    let mut c = create_cache(&fx, &small);
    c.args(["--arch", "amd64", "--model", "acme/tiny"]);
    let err = fails(&run(c.arg("--out").arg(d.path().join("b.tar"))), 1);
    assert!(err.contains("not enough free space"), "{err}");
    assert!(err.contains(&small.display().to_string()), "{err}");
    assert!(err.contains("needs") && err.contains("free"), "{err}");
    assert!(!fx.requests().iter().any(|r| r.path.contains("/resolve/")));
}

/// #53 item 5: a run killed half-way leaves `.b.tar.partial`; a rerun with
/// other flags (one more dataset: another manifest, so the file cannot be
/// carried on from) still takes every whole blob it wants from it, none
/// downloaded again (the bytes fetched counted), and without `--cache`
/// keeps none of them in the cache afterwards.
#[test]
fn a_rerun_with_other_flags_reuses_the_whole_blobs_of_the_partial() {
    let fx = fixture();
    let d = tempfile::tempdir().unwrap();
    let sha = tiny_lfs_sha(&fx);
    let path = format!("/acme/tiny/resolve/{TINY_COMMIT}/model.safetensors");
    fx.faults().cut_once(&path, 100_000);
    fx.faults().delay(&path, 2000);
    let xdg = d.path().join("xdg");
    let out = d.path().join("b.tar");
    let temp = d.path().join(".b.tar.partial");
    let create_no_cache = |extra: &[&str]| {
        let mut c = Command::cargo_bin("llmgw").unwrap();
        c.args(["bundle", "create", "--arch", "amd64", "--json"])
            .args(["--engine", "llamacpp=b6123", "--model", "acme/tiny"])
            .args(extra)
            .arg("--github-api")
            .arg(fx.github_api_url())
            .arg("--hf-endpoint")
            .arg(fx.hf_endpoint())
            .arg("--out")
            .arg(&out)
            .env("XDG_CACHE_HOME", &xdg)
            .env_remove("HF_TOKEN")
            .env_remove("HF_ENDPOINT")
            .env_remove("SOURCE_DATE_EPOCH")
            .env("RUST_LOG", "warn");
        c
    };
    let mut child = create_no_cache(&[])
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()
        .unwrap();
    let start = Instant::now();
    let bytes = loop {
        let bytes = fs::read(&temp).unwrap_or_default();
        if let Some(at) = data_offset(&bytes, &sha)
            && bytes.len() == at + 100_000
        {
            break bytes;
        }
        assert!(
            start.elapsed() < Duration::from_secs(30),
            "never saw the partial bundle"
        );
        std::thread::sleep(Duration::from_millis(20));
    };
    child.kill().unwrap();
    child.wait().unwrap();
    fx.faults().clear();

    // The blobs the killed run wrote whole (the ones before the model's).
    let mut whole: Vec<(String, u64)> = Vec::new();
    let mut tar = tar::Archive::new(&bytes[..]);
    for e in tar.entries().unwrap() {
        let Ok(mut e) = e else { break };
        let name = e.path().unwrap().to_string_lossy().into_owned();
        let size = e.size();
        let mut body = Vec::new();
        if std::io::Read::read_to_end(&mut e, &mut body).is_err() || body.len() as u64 != size {
            break;
        }
        if let Some(hex) = name.strip_prefix("blobs/sha256/") {
            whole.push((hex.to_string(), size));
        }
    }
    let o = run(&mut create_no_cache(&["--dataset", "acme/data"]));
    let err = text(&o.stderr);
    let report: serde_json::Value = serde_json::from_str(&ok(&o)).unwrap();
    assert!(
        err.contains("left by a run for other content; ") && !err.contains("; 0 blobs"),
        "{err}"
    );
    // Of those, the ones the new bundle carries: none fetched again.
    let listed = tool("tar", &["-xOf", "b.tar", "manifest.json"], d.path());
    let m = llmgw_shared::manifest::Manifest::from_json_bytes(listed.as_bytes()).unwrap();
    let carried = m.carried_blobs();
    whole.retain(|(hex, _)| carried.keys().any(|s| s.as_str() == hex));
    let kept: u64 = whole.iter().map(|(_, s)| s).sum();
    // At least one streamed straight into the bundle (a release asset),
    // which no cache held.
    let assets: Vec<&str> = m
        .releases
        .iter()
        .flat_map(|r| &r.assets)
        .map(|a| a.sha256.as_str())
        .collect();
    assert!(
        whole.iter().any(|(hex, _)| assets.contains(&hex.as_str())),
        "the killed run wrote no release asset whole: {whole:?}"
    );
    let total = report["bytes"].as_u64().unwrap();
    let fetched = report["bytes_downloaded"].as_u64().unwrap();
    let reused = report["bytes_reused"].as_u64().unwrap();
    assert!(reused >= kept, "{report}");
    assert!(fetched <= total - kept, "{report}");
    assert!(out.is_file() && !temp.exists());
    // Without --cache, the copies made for this run are gone.
    for (hex, _) in &whole {
        assert!(
            !xdg.join("llmgw/blobs/sha256").join(hex).exists(),
            "{hex} was left in the cache"
        );
    }
}
