//! Publishers' Sigstore signatures (#49), with a real GitHub Actions
//! attestation nobody here made (sigstore-rust's test data): the fixture's
//! GitHub lists it for the x64 CPU archive of llama.cpp `b6300`, whose
//! bytes are the attestation's subject (the release holds only that and
//! the arm64 CPU archive: `--allow-missing` takes the other builds as
//! gaps). Create verifies it offline and
//! carries it (format 7) only when the policy admits its signer; import
//! verifies it again; every altered copy is refused by name, nothing
//! written or imported.

use crate::bundle_kit::{Server, import_bundle, snapshot};
use crate::create::common::*;
use llmgw_fixture::{
    ATTESTED_SIGNER, ATTESTED_TAG, Attestations, Fixture, FixtureOptions, PARTLY_ATTESTED_TAG,
};
use llmgw_shared::manifest::{FORMAT_SIGNATURES, Manifest};
use std::path::Path;

const ISSUER: &str = "https://token.actions.githubusercontent.com";

fn attested(kind: Attestations) -> Fixture {
    fixture_with(FixtureOptions {
        attestations: kind,
        ..FixtureOptions::default()
    })
}

/// `--identity` admitting the attestation's real signer for llama.cpp.
fn site_identity() -> String {
    format!("github:ggml-org/llama.cpp={ISSUER},{ATTESTED_SIGNER}")
}

/// A create of llama.cpp's attested release for `arch`, with `extra` flags.
fn create_attested(fx: &Fixture, dir: &Path, arch: &str, extra: &[&str]) -> std::process::Output {
    let mut c = create(fx, dir);
    c.args(["--arch", arch, "--allow-missing", "--engine"])
        .arg(format!("llamacpp={ATTESTED_TAG}"))
        .args(extra)
        .arg("--out")
        .arg(dir.join("b"));
    run(&mut c)
}

/// A bundle of the attested release made under `dir` (at `dir/b`), its
/// signer admitted by `--identity`; the fixture it came from.
fn carried(dir: &Path) -> (Fixture, std::path::PathBuf) {
    let fx = attested(Attestations::Genuine);
    let id = site_identity();
    ok(&create_attested(&fx, dir, "amd64", &["--identity", &id]));
    (fx, dir.join("b"))
}

#[test]
fn an_admitted_attestation_is_carried_and_verified_again_at_import() {
    let tmp = tempfile::tempdir().unwrap();
    let (_fx, out) = carried(tmp.path());
    let m = manifest_of_dir(&out);
    assert_eq!(m.format_version, FORMAT_SIGNATURES);
    let sigs = m.evidence.as_ref().unwrap().signatures.as_ref().unwrap();
    assert_eq!(sigs.signed.len(), 1, "{sigs:?}");
    let s = &sigs.signed[0];
    assert_eq!(
        (s.issuer.as_str(), s.identity.as_str()),
        (ISSUER, ATTESTED_SIGNER)
    );
    assert!(
        s.what.contains("llama-b6300-bin-ubuntu-x64.tar.gz"),
        "{}",
        s.what
    );
    assert!(s.signed_at.starts_with("2025-09-01T"), "{}", s.signed_at);
    // The artifact is the asset carried; the evidence and the root are blobs.
    let asset = &m.releases[0].assets.iter().find(|a| a.sha256 == s.artifact);
    assert!(asset.is_some(), "{m:?}");
    for b in [&s.bundle, &sigs.trusted_root] {
        assert!(out.join("blobs/sha256").join(b.sha256.as_str()).is_file());
    }
    // The SBOM names the verified signer of the component.
    let sbom_sha = &m.evidence.as_ref().unwrap().sbom.sha256;
    let sbom = std::fs::read_to_string(out.join("blobs/sha256").join(sbom_sha.as_str())).unwrap();
    assert!(
        sbom.contains("\"llmgw:signer\"") && sbom.contains(ATTESTED_SIGNER),
        "{sbom}"
    );

    let sha = sha256_file(&out.join("manifest.json"));
    let store = tmp.path().join("store");
    let said = ok(&import_bundle(&out, &sha, &store, &[]));
    assert!(
        said.contains(&format!(
            "1 publisher's signature verified again (1 by {ATTESTED_SIGNER})"
        )),
        "{said}"
    );
}

#[test]
fn a_valid_signature_by_another_signer_than_the_tables_is_refused() {
    let fx = attested(Attestations::Genuine);
    let tmp = tempfile::tempdir().unwrap();
    // No --identity: the recipe table admits only llama.cpp's release workflow.
    let err = fails(&create_attested(&fx, tmp.path(), "amd64", &[]), 1);
    assert!(
        err.contains("llama-b6300-bin-ubuntu-x64.tar.gz")
            && err.contains(&format!("validly signed, but by {ATTESTED_SIGNER}"))
            && err.contains("https://github.com/ggml-org/llama.cpp/.github/workflows/release.yml@"),
        "{err}"
    );
    assert!(!tmp.path().join("b").exists());
}

/// A want-list's release asset is checked under the run's policy, as an
/// `--engine` release is: with the site's `--identity`, the attested asset
/// is carried with its signature on record; without it, the valid
/// signature by another signer keeps the asset out, a gap saying why.
#[test]
fn a_wanted_release_asset_is_checked_under_the_runs_policy() {
    let fx = attested(Attestations::Genuine);
    let tmp = tempfile::tempdir().unwrap();
    let asset = format!("llama-{ATTESTED_TAG}-bin-ubuntu-x64.tar.gz");
    let want = tmp.path().join("want.json");
    let list = serde_json::json!({
        "format": "llmgw-want-list/1",
        "misses": [{
            "route": "github_download",
            "path": format!("/ggml-org/llama.cpp/releases/download/{ATTESTED_TAG}/{asset}"),
            "count": 1, "first_seen": 1, "last_seen": 1,
        }],
    });
    std::fs::write(&want, list.to_string()).unwrap();
    let wanted = |name: &str, extra: &[&str]| {
        let out = tmp.path().join(name);
        let mut c = create(&fx, tmp.path());
        c.args(["--arch", "amd64", "--want"])
            .arg(&want)
            .args(extra)
            .arg("--out")
            .arg(&out);
        ok(&run(&mut c));
        // Every bundle made here imports: the far side takes it.
        let sha = sha256_file(&out.join("manifest.json"));
        ok(&import_bundle(
            &out,
            &sha,
            &tmp.path().join(format!("store-{name}")),
            &[],
        ));
        manifest_of_dir(&out)
    };

    let id = site_identity();
    let m = wanted("admitted", &["--identity", &id]);
    assert_eq!(m.releases[0].assets[0].name, asset);
    let sigs = m.evidence.as_ref().unwrap().signatures.as_ref().unwrap();
    assert_eq!(sigs.signed.len(), 1, "{sigs:?}");
    assert_eq!(sigs.signed[0].artifact, m.releases[0].assets[0].sha256);
    assert_eq!(sigs.signed[0].identity, ATTESTED_SIGNER);

    let m = wanted("refused", &[]);
    assert!(
        m.releases.iter().all(|r| r.assets.is_empty()),
        "{:?}",
        m.releases
    );
    let gap = m.gaps.iter().find(|g| g.what.contains(&asset)).unwrap();
    assert!(
        gap.reason
            .contains(&format!("validly signed, but by {ATTESTED_SIGNER}")),
        "{}",
        gap.reason
    );
}

#[test]
fn evidence_for_another_artifact_forged_truncated_or_garbled_is_refused() {
    let tmp = tempfile::tempdir().unwrap();
    let id = site_identity();
    // The arm64 archive is listed with the x64 archive's attestation.
    let fx = attested(Attestations::Genuine);
    let err = fails(
        &create_attested(&fx, tmp.path(), "arm64", &["--identity", &id]),
        1,
    );
    assert!(
        err.contains("llama-b6300-bin-ubuntu-arm64.tar.gz")
            && err.contains("does not match any subject"),
        "{err}"
    );
    drop(fx);
    for (kind, says) in [
        (Attestations::Forged, "does not verify"),
        (Attestations::Truncated, "not a Sigstore bundle"),
        (
            Attestations::NotGithubShape,
            "is not GitHub's attestations list",
        ),
    ] {
        let fx = attested(kind);
        let dir = tmp.path().join(format!("{kind:?}"));
        std::fs::create_dir(&dir).unwrap();
        let err = fails(
            &create_attested(&fx, &dir, "amd64", &["--identity", &id]),
            1,
        );
        assert!(
            err.contains("llama-b6300-bin-ubuntu-x64.tar.gz") && err.contains(says),
            "{kind:?}: {err}"
        );
        assert!(!dir.join("b").exists());
    }
}

#[test]
fn a_required_signature_missing_refuses_unless_allowed_and_then_is_recorded() {
    let fx = attested(Attestations::Genuine);
    let tmp = tempfile::tempdir().unwrap();
    let id = site_identity();
    // Beside the attested archive, an x64 Vulkan archive with none.
    let mut c = create(&fx, tmp.path());
    c.args(["--arch", "amd64", "--allow-missing", "--engine"])
        .arg(format!("llamacpp={PARTLY_ATTESTED_TAG}"))
        .args(["--identity", &id, "--out"])
        .arg(tmp.path().join("b"));
    let err = fails(&run(&mut c), 1);
    assert!(
        err.contains("offers no attestation") && err.contains("--allow-unsigned-upstream"),
        "{err}"
    );
    c.arg("--allow-unsigned-upstream");
    ok(&run(&mut c));
    let m = manifest_of_dir(&tmp.path().join("b"));
    let sigs = m.evidence.as_ref().unwrap().signatures.as_ref().unwrap();
    assert_eq!(sigs.signed.len(), 1);
    assert_eq!(sigs.unsigned.len(), 1, "{sigs:?}");
    assert!(sigs.unsigned[0].what.contains("vulkan-x64"), "{sigs:?}");
    assert!(
        sigs.unsigned
            .iter()
            .all(|u| u.allowed_by == "--allow-unsigned-upstream"
                && u.expected.contains(ATTESTED_SIGNER)),
        "{sigs:?}"
    );
}

#[test]
fn import_refuses_a_carried_signature_that_no_longer_verifies() {
    let tmp = tempfile::tempdir().unwrap();
    let (_fx, out) = carried(tmp.path());
    let manifest_path = out.join("manifest.json");
    let good = manifest_of_dir(&out);
    // Another carried blob than the signed archive: the SBOM.
    let other = good.evidence.as_ref().unwrap().sbom.sha256.clone();
    let rewrite = |edit: &dyn Fn(&mut Manifest)| -> String {
        let mut m = good.clone();
        edit(&mut m);
        let bytes = m.to_canonical_json();
        std::fs::write(&manifest_path, &bytes).unwrap();
        llmgw_shared::Sha256::of(&bytes).to_string()
    };
    type Edit = Box<dyn Fn(&mut Manifest)>;
    let cases: Vec<(&str, Edit, &str)> = vec![
        (
            "another signer recorded",
            Box::new(|m: &mut Manifest| {
                let s = m.evidence.as_mut().unwrap().signatures.as_mut().unwrap();
                s.signed[0].identity = s.signed[0].identity.replace("main", "release");
            }),
            "but the bundle is signed by",
        ),
        (
            "the signature moved to another artifact",
            Box::new(move |m: &mut Manifest| {
                let s = m.evidence.as_mut().unwrap().signatures.as_mut().unwrap();
                s.signed[0].artifact = other.clone();
            }),
            "does not verify against the bundle's trusted root",
        ),
    ];
    for (what, edit, says) in cases {
        let sha = rewrite(&*edit);
        let store = tmp.path().join(what.replace(' ', "-"));
        std::fs::create_dir(&store).unwrap();
        let err = fails(&import_bundle(&out, &sha, &store, &[]), 1);
        assert!(
            err.contains("the publisher signature of") && err.contains(says),
            "{what}: {err}"
        );
        // The import made the store's folders, and put nothing in them.
        let held: Vec<_> = snapshot(&store)
            .into_keys()
            .filter(|k| k.starts_with("bundles/") || k.starts_with("blobs/sha256/"))
            .collect();
        assert!(held.is_empty(), "{what}: {held:?}");
    }
}

/// Sigstore's own Python client (`.venv-sigstore`, `LLMGW_SIGSTORE_VENV`).
fn sigstore_cli() -> std::path::PathBuf {
    crate::bundle_kit::venv_dir("LLMGW_SIGSTORE_VENV", ".venv-sigstore").join("bin/sigstore")
}

#[test]
fn the_real_sigstore_client_verifies_the_evidence_the_mirror_serves() {
    let tmp = tempfile::tempdir().unwrap();
    let (_fx, out) = carried(tmp.path());
    let m = manifest_of_dir(&out);
    let artifact = m
        .evidence
        .as_ref()
        .unwrap()
        .signatures
        .as_ref()
        .unwrap()
        .signed[0]
        .artifact
        .clone();
    let sha = sha256_file(&out.join("manifest.json"));
    let store = tmp.path().join("store");
    ok(&import_bundle(&out, &sha, &store, &[]));
    let server = Server::start(&store);
    let get = |path: &str, to: &Path| {
        let o = std::process::Command::new("curl")
            .args(["-sSf", "-o"])
            .arg(to)
            .arg(format!("{}{path}", server.url))
            .output()
            .unwrap();
        ok(&o);
    };
    let evidence = tmp.path().join("evidence.sigstore.json");
    let asset = tmp.path().join("llama-b6300-bin-ubuntu-x64.tar.gz");
    get(
        &format!("/-/bundles/{sha}/evidence/{artifact}.sigstore.json"),
        &evidence,
    );
    get(
        &format!(
            "/ggml-org/llama.cpp/releases/download/{ATTESTED_TAG}/llama-b6300-bin-ubuntu-x64.tar.gz"
        ),
        &asset,
    );
    get(
        &format!("/-/bundles/{sha}/evidence/trusted_root.json"),
        &tmp.path().join("root.json"),
    );
    let missing = server.get(&format!(
        "/-/bundles/{sha}/evidence/{}.sigstore.json",
        "0".repeat(64)
    ));
    assert_eq!(missing.0, 404);
    // A hostile name is answered escaped; HEAD answers GET's headers.
    let hostile = text(
        &server
            .get(&format!("/-/bundles/{sha}/evidence/%1b%5b31mx"))
            .1,
    );
    assert!(
        !hostile.contains('\u{1b}') && hostile.contains("no evidence named"),
        "{hostile}"
    );
    let url = format!(
        "{}/-/bundles/{sha}/evidence/{artifact}.sigstore.json",
        server.url
    );
    let headers = |head: bool| {
        let mut c = std::process::Command::new("curl");
        c.args(["-sS", "-D", "-", "-o", "/dev/null"]);
        if head {
            c.arg("-I");
        }
        let o = c.arg(&url).output().unwrap();
        let mut lines: Vec<String> = text(&o.stdout)
            .lines()
            .filter(|l| !l.to_ascii_lowercase().starts_with("date:"))
            .map(str::to_string)
            .collect();
        lines.sort();
        lines
    };
    assert_eq!(headers(true), headers(false));
    // The front page links it, and `mirror list` names the signer.
    let front = text(&server.get("/").1);
    assert!(
        front.contains(&format!(
            "/-/bundles/{sha}/evidence/{artifact}.sigstore.json"
        )),
        "{front}"
    );
    let listed = ok(&crate::bundle_kit::run(&[
        "mirror",
        "list",
        "--store",
        store.to_str().unwrap(),
    ]));
    assert!(
        listed.contains(&format!(
            "publisher signature: ggml-org/llama.cpp b6300 llama-b6300-bin-ubuntu-x64.tar.gz: by \
             {ATTESTED_SIGNER}"
        )),
        "{listed}"
    );
    // Offline, as a node is: the client's own embedded root, no TUF refresh.
    let verify = || {
        std::process::Command::new(sigstore_cli())
            .args(["verify", "identity", "--offline", "--bundle"])
            .arg(&evidence)
            .args([
                "--cert-identity",
                ATTESTED_SIGNER,
                "--cert-oidc-issuer",
                ISSUER,
            ])
            .arg(&asset)
            .env("HOME", tmp.path())
            .output()
            .unwrap()
    };
    let o = verify();
    let said = format!("{}{}", text(&o.stdout), text(&o.stderr));
    assert!(o.status.success() && said.contains("OK:"), "{said}");
    // And it refuses the same evidence for other bytes.
    std::fs::write(&asset, b"not the archive").unwrap();
    let o = verify();
    assert!(!o.status.success());
}

#[test]
fn a_trusted_root_that_is_not_one_is_a_usage_error_naming_the_file() {
    let fx = attested(Attestations::Genuine);
    let tmp = tempfile::tempdir().unwrap();
    let bad = tmp.path().join("root.json");
    std::fs::write(&bad, "{\"mediaType\": \"\u{1b}[31m\"}").unwrap();
    let root = bad.to_str().unwrap().to_string();
    let err = fails(
        &create_attested(&fx, tmp.path(), "amd64", &["--trusted-root", &root]),
        2,
    );
    assert!(
        err.contains(&format!("--trusted-root {root}")) && err.contains("not usable"),
        "{err}"
    );
    assert!(!err.contains('\u{1b}'), "{err}");
    assert!(!tmp.path().join("b").exists());
}
