//! `llmgw bundle create` end to end: the real binary against the loopback
//! fixture upstream (GitHub API + download redirects to another origin, a
//! Gitea-style llmgw release server, a Hub), read back with the real `tar`,
//! `zstd` and `sha256sum`.

use std::fs;
use std::io::Read;
use std::path::{Path, PathBuf};
use std::process::{Command, Output, Stdio};
use std::time::{Duration, Instant};

use assert_cmd::cargo::CommandCargoExt;
use llmgw_fixture::{
    Fixture, FixtureOptions, HF_TOKEN, LlmgwSignature, TINY_COMMIT, UV_BAD_SIDECAR,
};
use llmgw_shared::manifest::{DigestSource, Manifest};
use sha2::{Digest, Sha256};

fn fixture() -> Fixture {
    fixture_with(FixtureOptions::default())
}

fn fixture_with(opts: FixtureOptions) -> Fixture {
    Fixture::start_blocking(opts).expect("start the fixture upstream")
}

/// `llmgw bundle create` with the fixture's URLs and a cache in `dir`, and
/// nothing from the environment that could change the run.
fn create(fx: &Fixture, dir: &Path) -> Command {
    create_cache(fx, &dir.join("cache"))
}

fn create_cache(fx: &Fixture, cache: &Path) -> Command {
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
fn everything(c: &mut Command, fx: &Fixture) {
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

fn run(c: &mut Command) -> Output {
    c.output().expect("run llmgw")
}

fn text(b: &[u8]) -> String {
    String::from_utf8_lossy(b).into_owned()
}

#[track_caller]
fn ok(o: &Output) -> String {
    assert!(
        o.status.success(),
        "exit {:?}\nstdout: {}\nstderr: {}",
        o.status.code(),
        text(&o.stdout),
        text(&o.stderr)
    );
    text(&o.stdout)
}

#[track_caller]
fn fails(o: &Output, code: i32) -> String {
    assert_eq!(
        o.status.code(),
        Some(code),
        "stdout: {}\nstderr: {}",
        text(&o.stdout),
        text(&o.stderr)
    );
    text(&o.stderr)
}

fn sha256_file(p: &Path) -> String {
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

fn tool(cmd: &str, args: &[&str], cwd: &Path) -> String {
    let o = Command::new(cmd)
        .args(args)
        .current_dir(cwd)
        .output()
        .unwrap_or_else(|e| panic!("{cmd}: {e}; run scripts/setup.sh"));
    assert!(o.status.success(), "{cmd} {args:?}: {}", text(&o.stderr));
    text(&o.stdout)
}

/// Names in `dir` (the output folder), to prove nothing was left behind.
fn listing(dir: &Path) -> Vec<String> {
    let mut v: Vec<String> = fs::read_dir(dir)
        .unwrap()
        .flatten()
        .map(|e| e.file_name().to_string_lossy().into_owned())
        .filter(|n| n != "cache")
        .collect();
    v.sort();
    v
}

fn manifest_of_dir(dir: &Path) -> Manifest {
    Manifest::from_json_bytes(&fs::read(dir.join("manifest.json")).unwrap()).unwrap()
}

#[test]
fn happy_path_tar_is_complete_verified_and_read_by_real_tools() {
    let fx = fixture();
    let d = tempfile::tempdir().unwrap();
    let out = d.path().join("site.tar");
    let mut c = create(&fx, d.path());
    everything(&mut c, &fx);
    let stdout = ok(&run(c.arg("--out").arg(&out).arg("--json")));
    let report: serde_json::Value = serde_json::from_str(&stdout).unwrap();
    let sha = report["manifest_sha256"].as_str().unwrap().to_string();

    // The .sha256 file: first token the hex, and `sha256sum -c` passes on
    // the extracted manifest.
    let sums = fs::read_to_string(d.path().join("site.tar.sha256")).unwrap();
    assert_eq!(sums, format!("{sha}  manifest.json\n"));
    let listed = tool("tar", &["-tf", out.to_str().unwrap()], d.path());
    assert_eq!(listed.lines().next(), Some("manifest.json"));
    let x = d.path().join("x");
    fs::create_dir(&x).unwrap();
    tool("tar", &["-xf", out.to_str().unwrap(), "-C", "x"], d.path());
    let check = tool("sha256sum", &["-c", "../site.tar.sha256"], &x);
    assert!(check.contains("manifest.json: OK"), "{check}");

    // Every blob is named by its sha256, once, and the manifest names it.
    let m = manifest_of_dir(&x);
    assert_eq!(sha256_file(&x.join("manifest.json")), sha);
    let blobs: Vec<String> = fs::read_dir(x.join("blobs/sha256"))
        .unwrap()
        .flatten()
        .map(|e| e.file_name().to_string_lossy().into_owned())
        .collect();
    assert_eq!(blobs.len(), m.blobs().len());
    for b in &blobs {
        assert_eq!(&sha256_file(&x.join("blobs/sha256").join(b)), b);
        assert!(m.blobs().contains_key(b));
    }
    assert_eq!(listed.lines().count(), 1 + blobs.len());

    // llama.cpp: exactly the assets the recipe names for amd64 and arm64.
    let llama = m
        .releases
        .iter()
        .find(|r| r.repo == "ggml-org/llama.cpp")
        .unwrap();
    let names: Vec<&str> = llama.assets.iter().map(|a| a.name.as_str()).collect();
    let mut want: Vec<String> = Vec::new();
    for arch in ["amd64", "arm64"] {
        for b in llmgw_shared::recipe::builds("llamacpp", "b6123", arch).unwrap() {
            want.extend(b.assets);
        }
    }
    want.sort();
    want.dedup();
    assert_eq!(names, want);
    for a in &llama.assets {
        assert_eq!(
            a.publisher_digests[0].source,
            DigestSource::GithubAssetDigest,
            "{}",
            a.name
        );
    }
    assert!(
        llama
            .builds
            .iter()
            .any(|b| b.arch == "arm64" && b.variant == "vulkan")
    );

    // uv: the sidecar where GitHub gives no digest, both where both exist.
    let uv = m
        .releases
        .iter()
        .find(|r| r.repo == "astral-sh/uv")
        .unwrap();
    let names: Vec<&str> = uv.assets.iter().map(|a| a.name.as_str()).collect();
    assert_eq!(
        names,
        vec![
            "uv-aarch64-unknown-linux-gnu.tar.gz",
            "uv-x86_64-unknown-linux-gnu.tar.gz"
        ]
    );
    let sources = |i: usize| -> Vec<DigestSource> {
        uv.assets[i]
            .publisher_digests
            .iter()
            .map(|d| d.source)
            .collect()
    };
    assert_eq!(sources(0), vec![DigestSource::Sha256Sidecar]);
    assert_eq!(
        sources(1),
        vec![DigestSource::GithubAssetDigest, DigestSource::Sha256Sidecar]
    );

    // llmgw: signed, its SHA256SUMS and signature carried, no darwin build.
    let l = m.llmgw_release().unwrap();
    let sig = l.signature.as_ref().unwrap();
    assert_eq!(
        (sig.sums.as_str(), sig.minisig.as_str()),
        ("SHA256SUMS", "SHA256SUMS.minisig")
    );
    let names: Vec<&str> = l.assets.iter().map(|a| a.name.as_str()).collect();
    assert!(names.contains(&"SHA256SUMS") && names.contains(&"SHA256SUMS.minisig"));
    assert!(names.iter().any(|n| n.contains("linux-amd64")), "{names:?}");
    assert!(names.iter().any(|n| n.contains("linux-arm64")), "{names:?}");
    assert!(!names.iter().any(|n| n.contains("darwin")), "{names:?}");
    for a in &l.assets {
        let s = a.publisher_digests[0].source;
        assert!(
            matches!(s, DigestSource::Sha256Sums | DigestSource::MinisignVerified),
            "{}: {s:?}",
            a.name
        );
    }

    // The Hub: pinned to the commit; LFS files by sha256, others by git sha1.
    let tiny = m.repos.iter().find(|r| r.id == "acme/tiny").unwrap();
    assert_eq!(tiny.commit, TINY_COMMIT);
    assert!(tiny.files.iter().any(|f| f.path == "sub/dir/vocab.txt"));
    for f in &tiny.files {
        let want = if f.lfs {
            DigestSource::HfLfsSha256
        } else {
            DigestSource::GitBlobSha1
        };
        assert_eq!(f.publisher_digests[0].source, want, "{}", f.path);
    }
    assert!(m.repos.iter().any(|r| r.id == "acme/data"));
    assert!(m.gaps.is_empty());

    // The report agrees.
    assert_eq!(report["blobs"].as_u64().unwrap() as usize, blobs.len());
    assert_eq!(report["bytes"].as_u64().unwrap(), m.total_bytes());
    assert!(report["artifacts"].as_array().unwrap().len() >= blobs.len());
    assert_eq!(listing(d.path()), vec!["site.tar", "site.tar.sha256", "x"]);
}

#[test]
fn zst_and_directory_outputs() {
    let fx = fixture();
    let d = tempfile::tempdir().unwrap();
    let zst = d.path().join("b.tar.zst");
    let mut c = create(&fx, d.path());
    c.args([
        "--arch",
        "amd64",
        "--engine",
        "uv=0.12.20",
        "--model",
        "acme/tiny:*.json,sub/*",
    ]);
    let sha = ok(&run(c.arg("--out").arg(&zst)));
    let sha = sha.trim();
    let raw = d.path().join("raw.tar");
    let o = Command::new("zstd")
        .args(["-d", "-q", "-o"])
        .arg(&raw)
        .arg(&zst)
        .output()
        .expect("zstd: run scripts/setup.sh");
    assert!(o.status.success(), "{}", text(&o.stderr));
    let listed = tool("tar", &["-tf", raw.to_str().unwrap()], d.path());
    assert_eq!(listed.lines().next(), Some("manifest.json"));

    let dir = d.path().join("bundle");
    let mut c = create(&fx, d.path());
    c.args([
        "--arch",
        "amd64",
        "--engine",
        "uv=0.12.20",
        "--model",
        "acme/tiny:*.json,sub/*",
    ]);
    let sha2 = ok(&run(c.arg("--out").arg(&dir)));
    let m = manifest_of_dir(&dir);
    // Globs: only the JSON files and the sub-folder's.
    let tiny = &m.repos[0];
    let paths: Vec<&str> = tiny.files.iter().map(|f| f.path.as_str()).collect();
    assert_eq!(paths, vec!["config.json", "sub/dir/vocab.txt"]);
    assert_eq!(tiny.patterns, vec!["*.json", "sub/*"]);
    assert_eq!(
        fs::read_dir(dir.join("blobs/sha256")).unwrap().count(),
        m.blobs().len()
    );
    // Same inputs, same manifest: the second run came from the cache but the
    // created time differs without SOURCE_DATE_EPOCH, so compare content.
    assert_eq!(sha256_file(&dir.join("manifest.json")), sha2.trim());
    assert_ne!(sha, "");
    let check = tool("sha256sum", &["-c", "../bundle.sha256"], &dir);
    assert!(check.contains("OK"), "{check}");
}

#[test]
fn source_date_epoch_makes_byte_identical_bundles() {
    let fx = fixture();
    let d = tempfile::tempdir().unwrap();
    for name in ["a.tar", "a.tar.zst"] {
        let mut outs = Vec::new();
        for (i, cache) in ["cache", "cache2"].iter().enumerate() {
            let out = d.path().join(format!("{i}-{name}"));
            let mut c = create_cache(&fx, &d.path().join(cache));
            everything(&mut c, &fx);
            c.env("SOURCE_DATE_EPOCH", "1754784000");
            ok(&run(c.arg("--out").arg(&out)));
            outs.push(fs::read(&out).unwrap());
        }
        assert!(outs[0] == outs[1], "{name} differs between two runs");
    }
    let listed = tool("tar", &["-tvf", "0-a.tar"], d.path());
    assert!(listed.contains("2025-08-10"), "{listed}");
    // The plain tar, written in place while downloading, is byte for byte
    // the tar inside the .tar.zst, written in one stream afterwards.
    let o = Command::new("zstd")
        .args(["-d", "-q", "-c", "0-a.tar.zst"])
        .current_dir(d.path())
        .output()
        .expect("zstd: run scripts/setup.sh");
    assert!(o.status.success(), "{}", text(&o.stderr));
    assert!(o.stdout == fs::read(d.path().join("0-a.tar")).unwrap());
}

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
fn wrong_bytes_are_refused_and_nothing_is_left() {
    let fx = fixture();
    let d = tempfile::tempdir().unwrap();
    let name = "uv-x86_64-unknown-linux-gnu.tar.gz";
    fx.faults()
        .wrong_bytes(format!("/astral-sh/uv/releases/download/0.12.20/{name}"));
    let want = fx
        .catalog()
        .github
        .iter()
        .find(|r| r.repo == "astral-sh/uv")
        .and_then(|r| r.assets.iter().find(|a| a.name == name))
        .map(|a| a.blob.sha256.clone())
        .unwrap();
    for out in ["b.tar", "b.tar.zst", "b"] {
        let mut c = create(&fx, d.path());
        c.args(["--arch", "amd64", "--engine", "uv=0.12.20"]);
        let err = fails(&run(c.arg("--out").arg(d.path().join(out))), 1);
        assert!(err.contains(name), "{err}");
        assert!(err.contains(&format!("expected {want}")), "{err}");
        assert!(err.contains("got "), "{err}");
        // No bundle; at most the verified part a rerun carries on from.
        let left: Vec<String> = listing(d.path())
            .into_iter()
            .filter(|n| !(n.starts_with('.') && n.ends_with(".partial")))
            .collect();
        assert_eq!(left, Vec::<String>::new(), "{out}");
    }
    // Nothing unverified entered the cache.
    assert!(!d.path().join("cache/blobs/sha256").join(&want).exists());
    assert_eq!(
        fs::read_dir(d.path().join("cache/partial"))
            .unwrap()
            .count(),
        0
    );
}

#[test]
fn an_asset_without_publisher_digest_is_refused_by_name() {
    let fx = fixture();
    let d = tempfile::tempdir().unwrap();
    let mut c = create(&fx, d.path());
    c.args(["--arch", "amd64", "--engine", "llamacpp=b6000"]);
    let err = fails(&run(c.arg("--out").arg(d.path().join("b.tar"))), 1);
    assert!(err.contains("llama-b6000-bin-ubuntu-x64.tar.gz"), "{err}");
    assert!(err.contains("no digest"), "{err}");
    assert_eq!(listing(d.path()), Vec::<String>::new());
}

#[test]
fn a_missing_asset_is_named_or_recorded_as_a_gap() {
    let fx = fixture();
    let d = tempfile::tempdir().unwrap();
    let missing = "llama-b5999-bin-ubuntu-vulkan-arm64.tar.gz";
    let mut c = create(&fx, d.path());
    c.args(["--arch", "amd64,arm64", "--engine", "llamacpp=b5999"]);
    let err = fails(&run(c.arg("--out").arg(d.path().join("b.tar"))), 1);
    assert!(err.contains(missing), "{err}");
    assert!(err.contains("ggml-org/llama.cpp b5999"), "{err}");
    assert!(err.contains("the release has: "), "{err}");
    assert!(
        err.contains("llama-b5999-bin-ubuntu-vulkan-x64.tar.gz"),
        "{err}"
    );
    assert!(err.contains("--allow-missing"), "{err}");
    assert_eq!(listing(d.path()), Vec::<String>::new());

    let out = d.path().join("b");
    let mut c = create(&fx, d.path());
    c.args([
        "--arch",
        "amd64,arm64",
        "--engine",
        "llamacpp=b5999",
        "--allow-missing",
    ]);
    let o = run(c.arg("--out").arg(&out));
    ok(&o);
    let err = text(&o.stderr);
    assert!(
        err.contains(&format!("missing: ggml-org/llama.cpp b5999 {missing}")),
        "{err}"
    );
    let m = manifest_of_dir(&out);
    assert_eq!(m.gaps.len(), 1);
    assert_eq!(
        m.gaps[0].what,
        format!("ggml-org/llama.cpp b5999 {missing}")
    );
    let r = &m.releases[0];
    assert!(!r.assets.iter().any(|a| a.name == missing));
    // The build that needs it is not claimed installable; the others are.
    assert!(
        !r.builds
            .iter()
            .any(|b| b.arch == "arm64" && b.variant == "vulkan")
    );
    assert!(
        r.builds
            .iter()
            .any(|b| b.arch == "amd64" && b.variant == "vulkan")
    );
}

#[test]
fn llmgw_signature_must_verify_with_a_trusted_key_before_anything_is_fetched() {
    let llmgw_downloads = |fx: &Fixture| {
        fx.requests()
            .iter()
            .filter(|r| r.path.contains("llmgw-v0.5.0-"))
            .count()
    };
    // Signed by a key that is not trusted.
    let fx = fixture();
    let d = tempfile::tempdir().unwrap();
    let mut c = create(&fx, d.path());
    c.args(["--arch", "amd64", "--llmgw", "v0.5.0", "--llmgw-api"])
        .arg(fx.llmgw_api_url())
        .arg("--trust")
        .arg(fx.other_key_path());
    let err = fails(&run(c.arg("--out").arg(d.path().join("b.tar"))), 1);
    assert!(err.contains("not trusted here"), "{err}");
    assert_eq!(llmgw_downloads(&fx), 0);
    assert_eq!(listing(d.path()), Vec::<String>::new());

    // Signed by a key nobody trusts, while we trust the right one.
    let fx = fixture_with(FixtureOptions {
        llmgw_signature: LlmgwSignature::OtherKey,
        ..Default::default()
    });
    let mut c = create(&fx, d.path());
    c.args(["--arch", "amd64", "--llmgw", "0.5.0", "--llmgw-api"])
        .arg(fx.llmgw_api_url())
        .arg("--trust")
        .arg(fx.trust_key_path());
    let err = fails(&run(c.arg("--out").arg(d.path().join("b.tar"))), 1);
    assert!(err.contains("was signed by key"), "{err}");
    assert_eq!(llmgw_downloads(&fx), 0);

    // Not signed at all.
    let fx = fixture_with(FixtureOptions {
        llmgw_signature: LlmgwSignature::Missing,
        ..Default::default()
    });
    let mut c = create(&fx, d.path());
    c.args(["--arch", "amd64", "--llmgw", "v0.5.0", "--llmgw-api"])
        .arg(fx.llmgw_api_url())
        .arg("--trust")
        .arg(fx.trust_key_path());
    let err = fails(&run(c.arg("--out").arg(d.path().join("b.tar"))), 1);
    assert!(err.contains("no SHA256SUMS.minisig"), "{err}");
    assert_eq!(llmgw_downloads(&fx), 0);

    // Signed by the trusted key, but for another release (relabelled).
    let fx = fixture_with(FixtureOptions {
        llmgw_signature: LlmgwSignature::Relabelled,
        ..Default::default()
    });
    let mut c = create(&fx, d.path());
    c.args(["--arch", "amd64", "--llmgw", "v0.5.0", "--llmgw-api"])
        .arg(fx.llmgw_api_url())
        .arg("--trust")
        .arg(fx.trust_key_path());
    let err = fails(&run(c.arg("--out").arg(d.path().join("b.tar"))), 1);
    assert!(
        err.contains(&format!(
            "its trusted comment \"llmgw {}\" does not name the tag v0.5.0",
            llmgw_fixture::RELABELLED_FROM
        )),
        "{err}"
    );
    assert_eq!(llmgw_downloads(&fx), 0);
    assert_eq!(listing(d.path()), Vec::<String>::new());

    // No --trust at all is a usage error.
    let mut c = create(&fx, d.path());
    c.args(["--arch", "amd64", "--llmgw", "v0.5.0"]);
    let err = fails(&run(c.arg("--out").arg(d.path().join("b.tar"))), 2);
    assert!(err.contains("--llmgw needs --trust"), "{err}");
    assert_eq!(listing(d.path()), Vec::<String>::new());
}

#[test]
fn usage_errors_exit_2_with_the_reason() {
    let fx = fixture();
    let d = tempfile::tempdir().unwrap();
    for (args, want) in [
        (vec!["--engine", "vllm=0.20 0"], "is not a version of vllm"),
        (
            vec![
                "--engine",
                "vllm=0.20.1",
                "--index",
                "nope=http://127.0.0.1:9/x",
            ],
            "--index nope: no environment of this bundle uses an index of that name; they \
             use pytorch-cu129",
        ),
        (vec!["--python-env", "tools"], "expected NAME=REQ[,REQ…]"),
        (
            vec!["--engine", "sglang=0.5.2", "--manylinux", "2.28"],
            "expected a manylinux glibc tag such as 2_28",
        ),
        (
            vec!["--engine", "llamacpp=../b1"],
            "is not a version of llamacpp",
        ),
        (vec!["--engine", "llamacpp"], "expected NAME=VERSION"),
        (vec!["--model", "tiny"], "REPO[@REVISION][:GLOB,...]"),
        (
            vec!["--model", "acme/tiny@main:"],
            "REPO[@REVISION][:GLOB,...]",
        ),
        (vec!["--dataset", "acme/data@a b"], "--dataset"),
        (vec!["--engine", "uv=0.12.20", "--jobs", "0"], "--jobs 0"),
        (
            vec!["--engine", "uv=0.12.20", "--zstd-level", "0"],
            "--zstd-level 0: expected 1 to 19",
        ),
    ] {
        let mut c = create(&fx, d.path());
        c.args(["--arch", "amd64"]).args(&args);
        let err = fails(&run(c.arg("--out").arg(d.path().join("b.tar"))), 2);
        assert!(err.contains(want), "{args:?}: {err}");
    }
    // clap's own errors are usage errors too.
    let mut c = create(&fx, d.path());
    fails(&run(c.arg("--no-such-flag")), 2);
    // Nothing was asked of the upstream for any of these.
    assert!(fx.requests().is_empty(), "{:?}", fx.requests());
    // And --help documents the exit codes.
    let mut c = create(&fx, d.path());
    let help = ok(&run(c.arg("--help")));
    assert!(
        help.contains("Exit codes:") && help.contains("2  usage"),
        "{help}"
    );
}

#[test]
fn a_bad_version_is_a_missing_release() {
    let fx = fixture();
    let d = tempfile::tempdir().unwrap();
    let mut c = create(&fx, d.path());
    c.args(["--arch", "amd64", "--engine", "llamacpp=b1"]);
    let err = fails(&run(c.arg("--out").arg(d.path().join("b.tar"))), 1);
    assert!(
        err.contains("has no release b1 of ggml-org/llama.cpp"),
        "{err}"
    );
}

#[test]
fn gated_repo_needs_hf_token_which_goes_to_the_hub_only() {
    let fx = fixture();
    let d = tempfile::tempdir().unwrap();
    let mut c = create(&fx, d.path());
    c.args(["--arch", "amd64", "--model", "acme/gated"]);
    let err = fails(&run(c.arg("--out").arg(d.path().join("g.tar"))), 1);
    assert!(err.contains("acme/gated"), "{err}");
    assert!(err.contains("set HF_TOKEN"), "{err}");
    assert_eq!(listing(d.path()), Vec::<String>::new());

    fx.clear_requests();
    let mut c = create(&fx, d.path());
    c.args([
        "--arch",
        "amd64",
        "--model",
        "acme/gated",
        "--engine",
        "uv=0.12.20",
    ])
    .env("HF_TOKEN", HF_TOKEN);
    let o = run(c.arg("--out").arg(d.path().join("g.tar")));
    ok(&o);
    let reqs = fx.requests();
    let with_auth: Vec<&str> = reqs
        .iter()
        .filter(|r| r.header("authorization").is_some())
        .map(|r| r.listener)
        .collect();
    assert!(!with_auth.is_empty());
    assert!(with_auth.iter().all(|l| *l == "hub"), "{with_auth:?}");
    assert!(
        reqs.iter()
            .any(|r| r.listener == "storage" && r.path.contains("acme/gated"))
    );
    // The token is written nowhere: not in the output, the bundle or the cache.
    let mut all = text(&o.stdout) + &text(&o.stderr);
    for e in walk(d.path()) {
        all.push_str(&String::from_utf8_lossy(&fs::read(e).unwrap()));
    }
    assert!(!all.contains(HF_TOKEN));
}

fn walk(dir: &Path) -> Vec<PathBuf> {
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
fn data_offset(tar: &[u8], sha: &str) -> Option<usize> {
    let name = format!("blobs/sha256/{sha}");
    (0..tar.len() / 512)
        .map(|i| i * 512)
        .find(|&at| tar[at..].starts_with(name.as_bytes()))
        .map(|at| at + 512)
}

fn tiny_lfs_sha(fx: &Fixture) -> String {
    fx.catalog()
        .hub
        .iter()
        .find(|r| r.id == "acme/tiny")
        .and_then(|r| r.commits.iter().find(|c| c.sha == TINY_COMMIT))
        .and_then(|c| c.files.iter().find(|f| f.path == "model.safetensors"))
        .map(|f| f.blob.sha256.clone())
        .unwrap()
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
    assert_eq!(fetched + reused, total, "{report}");
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
fn the_spec_file_is_read_and_flags_override_it() {
    let fx = fixture();
    let d = tempfile::tempdir().unwrap();
    let spec = d.path().join("site.toml");
    fs::write(
        &spec,
        format!(
            "out = \"from-spec.tar\"\narch = [\"amd64\"]\nengines = [\"uv=0.12.20\"]\n\
             models = [\"acme/tiny:config.json\"]\ngithub_api = \"{}\"\nhf_endpoint = \"{}\"\n",
            fx.github_api_url(),
            fx.hf_endpoint()
        ),
    )
    .unwrap();
    let mut c = Command::cargo_bin("llmgw").unwrap();
    c.args(["bundle", "create", "--spec"])
        .arg(&spec)
        .arg("--cache")
        .arg(d.path().join("cache"))
        .env_remove("HF_TOKEN")
        .env_remove("HF_ENDPOINT");
    ok(&run(&mut c));
    // `out` is relative to the spec file's folder.
    let listed = tool("tar", &["-tf", "from-spec.tar"], d.path());
    assert_eq!(listed.lines().count(), 3, "{listed}");

    let mut c = Command::cargo_bin("llmgw").unwrap();
    c.args(["bundle", "create", "--spec"])
        .arg(&spec)
        .arg("--out")
        .arg(d.path().join("flag"))
        .args(["--model", "acme/tiny:README.md,config.json"])
        .arg("--cache")
        .arg(d.path().join("cache"))
        .env_remove("HF_TOKEN")
        .env_remove("HF_ENDPOINT");
    ok(&run(&mut c));
    let m = manifest_of_dir(&d.path().join("flag"));
    assert_eq!(m.repos[0].files.len(), 2);
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

/// uv 0.12.19 of the fixture: the x86_64 archive's `.sha256` sidecar
/// disagrees with GitHub's digest (which matches the bytes).
#[test]
fn a_sidecar_that_disagrees_with_the_github_digest_is_refused() {
    let fx = fixture();
    let d = tempfile::tempdir().unwrap();
    let name = UV_BAD_SIDECAR;
    let digest = fx
        .catalog()
        .github
        .iter()
        .find(|r| r.repo == "astral-sh/uv" && r.tag == "0.12.19")
        .and_then(|r| r.assets.iter().find(|a| a.name == name))
        .and_then(|a| a.digest.clone())
        .unwrap();
    let digest = digest.trim_start_matches("sha256:");
    let mut c = create(&fx, d.path());
    c.args(["--arch", "amd64", "--engine", "uv=0.12.19"]);
    let err = fails(&run(c.arg("--out").arg(d.path().join("b.tar"))), 1);
    assert!(err.contains(name), "{err}");
    assert!(err.contains(digest), "{err}");
    assert!(err.contains(&format!("{name}.sha256 says")), "{err}");
    assert_eq!(listing(d.path()), Vec::<String>::new());
    // Refused before the archive itself was fetched.
    assert!(
        !fx.requests()
            .iter()
            .any(|r| r.path_only().ends_with(&format!("/{name}")))
    );
}
