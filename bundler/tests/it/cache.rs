//! The cache through the library's front door, against the fixture
//! upstream: what an earlier run left is reused only if it still hashes
//! right, and bytes a partial file holds are never trusted on their own.

// A test that unwraps panics with the error: that is its failure message.
#![allow(clippy::unwrap_used)]

use std::fs;
use std::path::Path;

use llmgw_bundler::{CreateSettings, CreateSpec, Options, RetryPolicy, SpecEnv, create};
use llmgw_fixture::{Fixture, FixtureOptions, TINY_COMMIT};

fn spec(fx: &Fixture, dir: &Path, out: &str) -> CreateSpec {
    CreateSpec::resolve(
        CreateSettings {
            out: Some(dir.join(out)),
            arch: vec!["amd64".into()],
            models: vec!["acme/tiny".into()],
            hf_endpoint: Some(fx.hf_endpoint()),
            cache: Some(dir.join("cache")),
            ..Default::default()
        },
        &SpecEnv::default(),
    )
    .unwrap()
}

fn opts() -> Options {
    Options {
        progress: std::sync::Arc::new(llmgw_shared::progress::Quiet),
        hf_token: None,
        retry: RetryPolicy::default(),
        source_date_epoch: Some(0),
        password: llmgw_shared::Password::Unavailable,
        check: None,
    }
}

fn lfs_sha(fx: &Fixture, path: &str) -> String {
    fx.catalog()
        .hub
        .iter()
        .find(|r| r.id == "acme/tiny")
        .and_then(|r| r.commits.iter().find(|c| c.sha == TINY_COMMIT))
        .and_then(|c| c.files.iter().find(|f| f.path == path))
        .map(|f| f.blob.sha256.clone())
        .unwrap()
}

fn make_writable(p: &Path) {
    use std::os::unix::fs::PermissionsExt;
    let mut perm = fs::metadata(p).unwrap().permissions();
    perm.set_mode(0o644);
    fs::set_permissions(p, perm).unwrap();
}

#[tokio::test]
async fn a_damaged_cache_file_is_fetched_again() {
    let fx = Fixture::start(FixtureOptions::default()).await.unwrap();
    let d = tempfile::tempdir().unwrap();
    let first = create(&spec(&fx, d.path(), "a.tar"), &opts())
        .await
        .unwrap();
    // Every byte downloaded but the SBOM's (#33), made here.
    let manifest = std::process::Command::new("tar")
        .args(["-xOf", "a.tar", "manifest.json"])
        .current_dir(d.path())
        .output()
        .unwrap();
    let m = llmgw_shared::manifest::Manifest::from_json_bytes(&manifest.stdout).unwrap();
    let made = m.evidence.map_or(0, |e| e.sbom.size);
    assert!(made > 0);
    assert_eq!(first.bytes_downloaded + made, first.bytes);

    let sha = lfs_sha(&fx, "model.safetensors");
    let cached = d.path().join("cache/blobs/sha256").join(&sha);
    make_writable(&cached);
    let mut bytes = fs::read(&cached).unwrap();
    bytes[1000] ^= 0xff;
    fs::write(&cached, &bytes).unwrap();

    fx.clear_requests();
    let second = create(&spec(&fx, d.path(), "b.tar"), &opts())
        .await
        .unwrap();
    // Only the damaged file came again, and the bundle is the same.
    assert_eq!(second.bytes_downloaded, 300_000);
    assert_eq!(second.manifest_sha256, first.manifest_sha256);
    assert_eq!(
        fs::read(d.path().join("a.tar")).unwrap(),
        fs::read(d.path().join("b.tar")).unwrap()
    );
    let resolves: Vec<String> = fx
        .requests()
        .iter()
        .filter(|r| r.path.contains("/resolve/"))
        .map(|r| r.path.clone())
        .collect();
    assert_eq!(resolves.len(), 1, "{resolves:?}");
    assert!(resolves[0].ends_with("/model.safetensors"));
}

#[tokio::test]
async fn bytes_in_a_partial_file_are_checked_with_the_rest() {
    let fx = Fixture::start(FixtureOptions::default()).await.unwrap();
    let d = tempfile::tempdir().unwrap();
    let sha = lfs_sha(&fx, "model.safetensors");
    // A partial file whose first bytes are not the file's: a directory
    // bundle's run resumes after them, the whole does not hash right, so
    // the file is fetched whole once more (the partial's bytes may come
    // from another run) and the bundle holds the right bytes.
    let partial_dir = d.path().join("cache/partial");
    fs::create_dir_all(&partial_dir).unwrap();
    let partial = partial_dir.join(format!("{sha}.partial"));
    fs::write(&partial, vec![0u8; 1000]).unwrap();
    let r = create(&spec(&fx, d.path(), "a"), &opts()).await.unwrap();
    let resolves: Vec<Option<String>> = fx
        .requests()
        .iter()
        .filter(|q| q.path.ends_with("/model.safetensors"))
        .map(|q| q.header("range").map(str::to_string))
        .collect();
    assert!(
        resolves.contains(&Some("bytes=1000-".to_string())) && resolves.contains(&None),
        "resumed, then fetched whole: {resolves:?}"
    );
    assert!(r.gaps.is_empty());
    assert!(!partial.exists());
    let file = d.path().join(format!("a/blobs/sha256/{sha}"));
    let bytes = fs::read(&file).unwrap();
    assert_eq!(
        hex::encode(<sha2::Sha256 as sha2::Digest>::digest(&bytes)),
        sha
    );
}
