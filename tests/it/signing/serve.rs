//! What nodes are served follows the highest signed sequence, never the
//! order of imports: `main` of a Hub repo and GitHub's `releases/latest`
//! (even when an older bundle carries a higher tag), checked through the
//! real huggingface_hub (the .venv's python) and curl, before and after an
//! old bundle is imported again with `--allow-rollback`. And `/metrics`
//! reports the newest bundle's age and the seconds to the nearest expiry
//! of a current bundle.

use crate::bundle_kit;
mod follow;

use std::path::{Path, PathBuf};
use std::process::{Command, Output, Stdio};

use bundle_kit::*;
use llmgw_shared::manifest::{Asset, DigestSource, PublisherDigest, Release};
use llmgw_shared::sha256_hex;

#[track_caller]
fn ok_output(o: &Output) -> &Output {
    ok(o);
    o
}

/// A site key made by the real minisign CLI (`site.pub`, `site.key` in
/// `dir`), trusted for bundles by `store`; its key id.
fn site_key(dir: &Path, store: &Path) -> String {
    let o = Command::new("minisign")
        .args(["-G", "-W", "-p", "site.pub", "-s", "site.key"])
        .current_dir(dir)
        .stdin(Stdio::null())
        .output()
        .unwrap_or_else(|e| panic!("minisign not runnable ({e}): run scripts/setup.sh"));
    assert!(o.status.success(), "{}", stderr(&o));
    ok(&llmgw()
        .args(["bundle", "trust", "add", s(&dir.join("site.pub"))])
        .args(["--role", "bundle", "--store", s(store)])
        .output()
        .unwrap());
    let text = std::fs::read_to_string(dir.join("site.pub")).unwrap();
    llmgw_shared::signing::PublicKey::parse("site.pub", &text)
        .unwrap()
        .key_id()
}

/// The kit as a tar in `dir`, signed with `dir/site.key` by `llmgw bundle sign`.
fn signed_bundle(dir: &Path, name: &str, k: &Kit) -> PathBuf {
    let p = dir.join(format!("{name}.tar"));
    write_tar(&p, &k.entries());
    ok(&llmgw()
        .args(["bundle", "sign", s(&p), "--key", s(&dir.join("site.key"))])
        .env_remove("LLMGW_SIGN_PASSWORD")
        .stdin(Stdio::null())
        .output()
        .unwrap());
    p
}

fn now() -> u64 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .unwrap()
        .as_secs()
}

/// A bundle in channel `stable` at `sequence`: llama.cpp at `tag` (one
/// asset) and model acme/tiny at `commit` with one file.
fn kit(sequence: u64, tag: &str, commit: &str, expires_in: u64) -> (Kit, String, Vec<u8>) {
    let mut k = Kit::new();
    let file = format!("w{sequence}.bin");
    k.model_file("acme/tiny", &file, format!("weights {sequence}").as_bytes());
    k.manifest.repos[0].commit = commit.into();
    let body = format!("llama.cpp {tag}").into_bytes();
    let sha = sha256_hex(&body);
    k.manifest.releases.push(Release {
        repo: "ggml-org/llama.cpp".parse().unwrap(),
        tag: tag.into(),
        engine: "llamacpp".into(),
        version: tag.into(),
        builds: vec![],
        assets: vec![Asset {
            name: "llama-bin-ubuntu-x64.tar.gz".into(),
            size: body.len() as u64,
            sha256: sha.parse().unwrap(),
            publisher_digests: vec![PublisherDigest {
                source: DigestSource::GithubAssetDigest,
                value: sha.clone(),
            }],
            content_type: None,
        }],
        signature: None,
    });
    k.blobs.insert(sha, body.clone());
    k.manifest.channel = Some("stable".into());
    k.manifest.sequence = Some(sequence);
    k.manifest.created = llmgw_shared::rfc3339_utc(now() - 3600);
    k.manifest.expires = Some(llmgw_shared::rfc3339_utc(now() + expires_in));
    (k, file, body)
}

fn curl(args: &[&str]) -> String {
    ok(&Command::new("curl")
        .args(["-sS", "-f"])
        .args(args)
        .output()
        .unwrap())
}

/// What nodes see: the Hub's `main` through huggingface_hub (its commit,
/// and the bytes of `file` downloaded at main), `releases/latest` through
/// curl (the API's tag, and the asset's bytes).
fn what_nodes_see(url: &str, dir: &Path, file: &str) -> (String, String, String, Vec<u8>) {
    let script = r#"
import sys
from huggingface_hub import HfApi, hf_hub_download
url, file, cache = sys.argv[1:4]
info = HfApi(endpoint=url).model_info("acme/tiny", revision="main")
path = hf_hub_download("acme/tiny", file, revision="main", cache_dir=cache, endpoint=url)
print(info.sha)
print(open(path).read())
"#;
    let out = ok(&Command::new(venv_python())
        .args(["-c", script, url, file])
        .arg(dir.join("hf-cache"))
        .env("HF_HOME", dir.join("hf-home"))
        .env("HF_HUB_DISABLE_TELEMETRY", "1")
        .env_remove("HF_TOKEN")
        .env_remove("HF_ENDPOINT")
        .output()
        .unwrap());
    let mut lines = out.lines();
    let commit = lines.next().unwrap().to_string();
    let body = lines.next().unwrap_or("").to_string();
    let api: serde_json::Value = serde_json::from_str(&curl(&[&format!(
        "{url}/api/v3/repos/ggml-org/llama.cpp/releases/latest"
    )]))
    .unwrap();
    let o = Command::new("curl")
        .args(["-sS", "-f", "-L"])
        .arg(format!(
            "{url}/ggml-org/llama.cpp/releases/latest/download/llama-bin-ubuntu-x64.tar.gz"
        ))
        .output()
        .unwrap();
    assert!(o.status.success(), "{}", stderr(&o));
    (
        commit,
        body,
        api["tag_name"].as_str().unwrap().to_string(),
        o.stdout,
    )
}

/// A gauge's value in Prometheus text.
fn gauge(metrics: &str, name: &str) -> Option<i64> {
    metrics
        .lines()
        .find(|l| l.starts_with(name) && l[name.len()..].starts_with(' '))
        .and_then(|l| l.rsplit(' ').next())
        .and_then(|v| v.parse().ok())
}

#[test]
fn main_and_latest_follow_the_highest_sequence_and_metrics_report_freshness() {
    let tmp = tempfile::tempdir().unwrap();
    let dir = tmp.path();
    let store = dir.join("store");
    let o = Command::new("minisign")
        .args(["-G", "-W", "-p", "site.pub", "-s", "site.key"])
        .current_dir(dir)
        .stdin(Stdio::null())
        .output()
        .unwrap_or_else(|e| panic!("minisign not runnable ({e}): run scripts/setup.sh"));
    assert!(o.status.success(), "{}", stderr(&o));
    ok(&llmgw()
        .args([
            "bundle",
            "trust",
            "add",
            s(&dir.join("site.pub")),
            "--role",
            "bundle",
        ])
        .args(["--store", s(&store)])
        .output()
        .unwrap());
    let signed = |name: &str, k: &Kit| {
        let p = dir.join(format!("{name}.tar"));
        write_tar(&p, &k.entries());
        ok(&llmgw()
            .args(["bundle", "sign", s(&p), "--key", s(&dir.join("site.key"))])
            .env_remove("LLMGW_SIGN_PASSWORD")
            .stdin(Stdio::null())
            .output()
            .unwrap());
        p
    };
    let import = |p: &Path, extra: &[&str]| {
        ok(&llmgw()
            .args(["bundle", "import", s(p), "--store", s(&store)])
            .args(extra)
            .output()
            .unwrap())
    };
    // Sequence 1 carries the higher tag; sequence 2 a deliberate downgrade.
    let c1 = "1111111111111111111111111111111111111111";
    let c2 = "2222222222222222222222222222222222222222";
    let (k1, _, _) = kit(1, "b9000", c1, 600);
    let (k2, file2, body2) = kit(2, "b6200", c2, 86_400);
    let (b1, b2) = (signed("one", &k1), signed("two", &k2));
    import(&b1, &[]);
    import(&b2, &[]);

    let server = Server::start_logged(&store, &dir.join("serve.log"));
    let url = server.url.clone();
    server.wait_for("/readyz", 200);
    let expect = (
        c2.to_string(),
        String::from_utf8(k2.blobs[k2.manifest.repos[0].files[0].sha256.as_str()].clone()).unwrap(),
        "b6200".to_string(),
        body2.clone(),
    );
    assert_eq!(what_nodes_see(&url, dir, &file2), expect, "after 1 then 2");

    // Sequence 1 again, imported last (removed, then --allow-rollback):
    // held, but nodes stay where they were.
    ok(&llmgw()
        .args(["mirror", "remove", &k1.sha256(), "--store", s(&store)])
        .output()
        .unwrap());
    let out = import(&b1, &["--allow-rollback"]);
    assert!(out.contains("imported bundle"), "{out}");
    std::thread::sleep(std::time::Duration::from_millis(300));
    let list = ok(&llmgw()
        .args(["mirror", "list", "--store", s(&store), "--json"])
        .output()
        .unwrap());
    assert!(list.contains(&k1.sha256()), "{list}");
    assert_eq!(
        what_nodes_see(&url, dir, &file2),
        expect,
        "after the old bundle was imported again"
    );

    // Freshness: the newest import is seconds old; the nearest expiry of a
    // current bundle is sequence 2's (a day), not sequence 1's (10 min),
    // which is held but not current.
    let metrics = curl(&[&format!("{url}/metrics")]);
    let age = gauge(&metrics, "llmgw_mirror_newest_bundle_age_seconds").expect(&metrics);
    assert!((0..120).contains(&age), "{metrics}");
    let expiry = gauge(&metrics, "llmgw_mirror_bundle_expiry_seconds").expect(&metrics);
    assert!(
        (86_400 - 300..=86_400).contains(&expiry),
        "expiry {expiry}: {metrics}"
    );
    drop(server);
}
