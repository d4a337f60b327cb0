//! What create writes: a complete `.tar` read by the real tools, `.tar.zst`
//! and directory bundles, byte-identical bundles under `SOURCE_DATE_EPOCH`,
//! and the spec file with flags over it.

use super::common::*;
use assert_cmd::cargo::CommandCargoExt;
use llmgw_fixture::TINY_COMMIT;
use llmgw_shared::manifest::DigestSource;
use std::fs;
use std::process::Command;

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
        assert!(m.blobs().contains_key(b.as_str()));
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
    // The manifest, its two blobs, and the SBOM (#33).
    assert_eq!(listed.lines().count(), 4, "{listed}");

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
