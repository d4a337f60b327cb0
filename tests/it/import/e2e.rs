//! `llmgw bundle create` against the fixture upstream, then `llmgw bundle
//! import` of what it wrote: the two halves of the product end to end, and
//! real bundles damaged after the fact.

use crate::bundle_kit;

use std::path::{Path, PathBuf};
use std::process::Output;

use bundle_kit::{import_bundle, run, s, snapshot, stderr, stdout};
use llmgw_fixture::{Fixture, FixtureOptions, LlmgwSignature};

/// `llmgw bundle create` of everything the fixture offers into `out`,
/// trusting `trust`; returns the path of the `.sha256` file it wrote.
fn create(fx: &Fixture, dir: &Path, out: &Path, trust: &Path) -> PathBuf {
    let o = bundle_kit::llmgw()
        .args([
            "bundle",
            "create",
            "--out",
            s(out),
            "--cache",
            s(&dir.join("cache")),
        ])
        .args(["--github-api", &fx.github_api_url()])
        .args(["--hf-endpoint", &fx.hf_endpoint()])
        .args(["--arch", "amd64,arm64", "--llmgw", "v0.5.0"])
        .args(["--llmgw-api", &fx.llmgw_api_url(), "--trust", s(trust)])
        .args(["--engine", "llamacpp=b6123", "--engine", "uv=0.12.20"])
        .args(["--model", "acme/tiny@main", "--dataset", "acme/data"])
        .env_remove("HF_TOKEN")
        .env_remove("HF_ENDPOINT")
        .env("SOURCE_DATE_EPOCH", "1754784000")
        .env("RUST_LOG", "warn")
        .output()
        .unwrap();
    assert!(o.status.success(), "create: {}", stderr(&o));
    let mut shaf = out.as_os_str().to_owned();
    shaf.push(".sha256");
    PathBuf::from(shaf)
}

fn import(bundle: &Path, sha: &Path, store: &Path) -> Output {
    import_bundle(bundle, s(sha), store, &[])
}

fn trust(store: &Path, key: &Path) {
    let o = run(&["bundle", "trust", "add", s(key), "--store", s(store)]);
    assert!(o.status.success(), "{}", stderr(&o));
}

#[test]
fn what_create_writes_import_accepts_in_every_shape() {
    let fx = Fixture::start_blocking(FixtureOptions::default()).unwrap();
    let d = tempfile::tempdir().unwrap();
    let store = d.path().join("store");
    trust(&store, fx.trust_key_path());
    let key_id = llmgw_shared::signing::PublicKey::parse(
        "k",
        &std::fs::read_to_string(fx.trust_key_path()).unwrap(),
    )
    .unwrap()
    .key_id();
    let mut first_sha = None;
    for (i, name) in ["site.tar.zst", "site.tar", "site-dir"].iter().enumerate() {
        let out = d.path().join(name);
        let shaf = create(&fx, d.path(), &out, fx.trust_key_path());
        let sha = std::fs::read_to_string(&shaf).unwrap()[..64].to_string();
        // Same inputs, same manifest, whatever the shape.
        assert_eq!(first_sha.get_or_insert(sha.clone()), &sha);
        let o = import(&out, &shaf, &store);
        assert!(o.status.success(), "{name}: {}", stderr(&o));
        let text = stdout(&o);
        let last = text.lines().last().unwrap();
        if i == 0 {
            assert!(
                last.starts_with(&format!("proven: manifest sha256 {sha}")),
                "{last}"
            );
            assert!(
                last.contains(&format!("signed by trusted key {key_id}")),
                "{last}"
            );
            assert!(last.ends_with("bundles now held: 1"), "{last}");
            assert!(text.contains("ggml-org/llama.cpp b6123"), "{text}");
        } else {
            assert!(text.contains("already imported"), "{name}: {text}");
        }
        // verify and inspect read the same bundle.
        let o = run(&[
            "bundle",
            "verify",
            s(&out),
            "--sha256",
            &sha,
            "--trust",
            s(fx.trust_key_path()),
        ]);
        assert!(o.status.success(), "{name}: {}", stderr(&o));
        let o = run(&["bundle", "inspect", s(&out)]);
        assert!(stdout(&o).starts_with("UNVERIFIED"), "{}", stdout(&o));
    }
    let o = run(&["mirror", "verify", "--store", s(&store)]);
    assert!(o.status.success(), "{}", stdout(&o));
}

#[test]
fn a_real_bundle_signed_by_another_key_or_damaged_is_refused() {
    // The upstream signs llmgw's release with a key the site does not
    // trust; create is told to trust it, import is not.
    let fx = Fixture::start_blocking(FixtureOptions {
        llmgw_signature: LlmgwSignature::OtherKey,
        ..FixtureOptions::default()
    })
    .unwrap();
    let d = tempfile::tempdir().unwrap();
    let store = d.path().join("store");
    trust(&store, fx.trust_key_path());
    let other_id = llmgw_shared::signing::PublicKey::parse(
        "k",
        &std::fs::read_to_string(fx.other_key_path()).unwrap(),
    )
    .unwrap()
    .key_id();
    let out = d.path().join("other.tar");
    let shaf = create(&fx, d.path(), &out, fx.other_key_path());
    let before = snapshot(&store);
    let o = import(&out, &shaf, &store);
    assert_eq!(o.status.code(), Some(1));
    let err = stderr(&o);
    assert!(err.contains(&format!("signed by key {other_id}")), "{err}");
    assert!(err.contains("not trusted here"), "{err}");
    assert_eq!(before, snapshot(&store));

    // Trusting that key too, it imports; then a flipped byte in one of its
    // blobs, in place inside the tar, is found and named.
    let mut bytes = std::fs::read(&out).unwrap();
    let mut archive = tar::Archive::new(&bytes[..]);
    let (name, at, size) = archive
        .entries()
        .unwrap()
        .map(|e| e.unwrap())
        .filter(|e| e.size() > 1000)
        .map(|e| {
            let n = e.path().unwrap().display().to_string();
            (n, e.raw_file_position() as usize, e.size() as usize)
        })
        .find(|(n, ..)| n.starts_with("blobs/"))
        .unwrap();
    bytes[at + size / 2] ^= 0x01;
    let damaged = d.path().join("damaged.tar");
    std::fs::write(&damaged, &bytes).unwrap();
    trust(&store, fx.other_key_path());
    let before = snapshot(&store);
    let o = import(&damaged, &shaf, &store);
    assert_eq!(o.status.code(), Some(1));
    let err = stderr(&o);
    assert!(err.contains(&name), "{err}");
    assert!(
        err.contains("is damaged: its bytes hash to sha256"),
        "{err}"
    );
    assert_eq!(before, snapshot(&store));
    let o = import(&out, &shaf, &store);
    assert!(o.status.success(), "{}", stderr(&o));
    assert!(stdout(&o).contains(&format!("signed by trusted key {other_id}")));
}
