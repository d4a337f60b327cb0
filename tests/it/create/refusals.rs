//! What create refuses, each named with what to do: wrong bytes, an asset
//! no publisher vouches for, a missing asset or release, a signature no
//! trusted key made, usage errors, a gated repository without a token, and
//! a sidecar that disagrees with GitHub's digest.

use super::common::*;
use llmgw_fixture::{Fixture, FixtureOptions, HF_TOKEN, LlmgwSignature, UV_BAD_SIDECAR};
use std::fs;

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
    let relabelled = format!(
        "its trusted comment \"llmgw {}\" does not name the tag v0.5.0",
        llmgw_fixture::RELABELLED_FROM
    );
    // (what is wrong, the release's signature, whether the key trusted here
    // is another than the test key, the --llmgw asked, the refusal)
    let cases = [
        (
            "signed by a key that is not trusted",
            LlmgwSignature::Trusted,
            true,
            "v0.5.0",
            "not trusted here",
        ),
        (
            "signed by a key nobody trusts, while the right one is trusted",
            LlmgwSignature::OtherKey,
            false,
            "0.5.0",
            "was signed by key",
        ),
        (
            "not signed at all",
            LlmgwSignature::Missing,
            false,
            "v0.5.0",
            "no SHA256SUMS.minisig",
        ),
        (
            "signed by the trusted key, but for another release (relabelled)",
            LlmgwSignature::Relabelled,
            false,
            "v0.5.0",
            relabelled.as_str(),
        ),
    ];
    for (case, signature, trust_other, version, refusal) in cases {
        let fx = fixture_with(FixtureOptions {
            llmgw_signature: signature,
            ..Default::default()
        });
        let d = tempfile::tempdir().unwrap();
        let trust = if trust_other {
            fx.other_key_path()
        } else {
            fx.trust_key_path()
        };
        let mut c = create(&fx, d.path());
        c.args(["--arch", "amd64", "--llmgw", version, "--llmgw-api"])
            .arg(fx.llmgw_api_url())
            .arg("--trust")
            .arg(trust);
        let err = fails(&run(c.arg("--out").arg(d.path().join("b.tar"))), 1);
        assert!(err.contains(refusal), "{case}: {err}");
        assert_eq!(llmgw_downloads(&fx), 0, "{case}");
        assert_eq!(listing(d.path()), Vec::<String>::new(), "{case}");
    }

    let fx = fixture();
    let d = tempfile::tempdir().unwrap();
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
        (
            vec!["--llmgw", "v0.5.0", "--llmgw-repo", "../x"],
            "--llmgw-repo \"../x\" is not a safe name",
        ),
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
    // A spec file that is not one: the file, the place and the parser's
    // words, on one line.
    let spec = d.path().join("site.toml");
    fs::write(&spec, "arch = [\"amd64\"]\njobs = \"two\"\n").unwrap();
    let mut c = create(&fx, d.path());
    c.arg("--spec").arg(&spec);
    let err = fails(&run(c.arg("--out").arg(d.path().join("b.tar"))), 2);
    let want = format!(
        "spec file {}, line 2, column 8: invalid type",
        spec.display()
    );
    assert!(err.contains(&want), "{err}");
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

/// A Hub-compatible endpoint without `/api/models/{repo}/refs` (#28 item
/// 8): the revision the revision call found is planned as a branch, with a
/// warning naming the refs listing, and the bundle is made; any other
/// failure of the listing says it was the listing that failed.
#[test]
fn an_endpoint_without_the_refs_listing_serves_the_revision_as_a_branch() {
    use llmgw_shared::manifest::RefKind;
    let fx = fixture();
    let d = tempfile::tempdir().unwrap();
    let refs = "/api/models/acme/tiny/refs";
    fx.faults().refuse(refs, 0, 1000, 404);
    let out = d.path().join("b");
    let mut c = create(&fx, d.path());
    c.args(["--arch", "amd64", "--model", "acme/tiny@v1"]);
    let o = run(c.arg("--out").arg(&out));
    ok(&o);
    let err = text(&o.stderr);
    assert!(
        err.contains(&format!(
            "{refs} answered 404 (the endpoint has no refs listing); revision v1 is served as a \
             branch"
        )),
        "{err}"
    );
    assert!(!err.contains("has no such repository"), "{err}");
    let m = manifest_of_dir(&out);
    assert_eq!(
        (m.repos[0].revision.as_str(), m.repos[0].ref_kind),
        ("v1", Some(RefKind::Branch))
    );

    // Another failure of the listing: named as the listing's.
    fx.faults().clear();
    fx.faults().refuse(refs, 0, 1000, 500);
    let mut c = create(&fx, d.path());
    c.args(["--arch", "amd64", "--model", "acme/tiny@v1"]);
    let err = fails(&run(c.arg("--out").arg(d.path().join("c"))), 1);
    assert!(
        err.contains("listing its branches and tags") && err.contains(refs),
        "{err}"
    );
}
