//! PEP 740 provenance of wheels (#49), with a real attestation nobody here
//! made: the fixture's PyPI serves `rfc8785` 0.1.2 — the real wheel — and
//! its real publish attestation (trailofbits/pypi-attestations' test
//! assets) in a provenance object, at the integrity route and in the
//! JSON page's entry. The attestation was signed on Sigstore's staging
//! instance by `william@yossarian.net`, so these creates pass staging's
//! trusted root (`--trusted-root`, as a site with its own Sigstore
//! would), and the site names that signer (`--identity pypi:…`); the
//! publisher the provenance object names is not that signer, and is
//! refused where nobody else is named. Create verifies and carries it
//! (format 9), import verifies it again, the real `sigstore` client
//! verifies the bundle the mirror serves, and every altered copy is
//! refused by name with nothing written or imported.

use std::path::{Path, PathBuf};
use std::process::Output;

use crate::bundle_kit::{Server, fails, import_bundle, llmgw, ok, snapshot, text};
use crate::create::common::{manifest_of_dir, sha256_file};
use llmgw_fixture::{
    ATTESTED_WHEEL, ATTESTED_WHEEL_ISSUER, ATTESTED_WHEEL_SIGNER, Fixture, FixtureOptions,
    NAMED_PUBLISHER_WORKFLOW, PypiProvenance,
};
use llmgw_shared::manifest::{
    AdmittedBy, FORMAT_PEP740, FORMAT_SIGNATURES, Manifest, SignatureKind,
};

/// Sigstore staging's trusted root (testdata/README.md).
fn staging_root() -> String {
    concat!(
        env!("CARGO_MANIFEST_DIR"),
        "/testdata/sigstore/staging.trusted_root.json"
    )
    .to_string()
}

fn fixture(kind: PypiProvenance) -> Fixture {
    Fixture::start_blocking(FixtureOptions {
        pypi_provenance: kind,
        ..FixtureOptions::default()
    })
    .expect("start the fixture")
}

/// `--identity` naming the attestation's real signer for rfc8785.
fn site_identity() -> String {
    format!("pypi:rfc8785={ATTESTED_WHEEL_ISSUER},{ATTESTED_WHEEL_SIGNER}")
}

/// A create of an environment holding only rfc8785==0.1.2 for amd64
/// nodes bringing CPython 3.11, into `dir/b`, with `extra` flags.
fn create(fx: &Fixture, dir: &Path, extra: &[&str]) -> Output {
    let mut c = llmgw();
    c.args(["bundle", "create", "--arch", "amd64"])
        .args(["--python", "3.11", "--python-interpreter", "none"])
        .args(["--python-env", "tools=rfc8785==0.1.2"])
        .args(extra);
    crate::python::from_fixture(&mut c, fx, &fx.raw_github_url(), dir, &dir.join("b"))
        .output()
        .unwrap()
}

/// A bundle carrying the wheel's attestation, made under `dir` (at
/// `dir/b`) from a fixture offering it as `kind` says.
fn carried(dir: &Path, kind: PypiProvenance) -> PathBuf {
    let fx = fixture(kind);
    let (id, root) = (site_identity(), staging_root());
    ok(&create(
        &fx,
        dir,
        &["--identity", &id, "--trusted-root", &root],
    ));
    dir.join("b")
}

#[test]
fn a_wheels_attestation_is_verified_carried_and_verified_again_at_import() {
    let tmp = tempfile::tempdir().unwrap();
    // The page's entry names the provenance, or only the integrity route
    // has it: the same evidence either way.
    for (kind, dir) in [
        (PypiProvenance::AtRouteOnly, tmp.path().join("route")),
        (PypiProvenance::Listed, tmp.path().to_path_buf()),
    ] {
        std::fs::create_dir_all(&dir).unwrap();
        let out = carried(&dir, kind);
        let m = manifest_of_dir(&out);
        assert_eq!(m.format_version, FORMAT_PEP740);
        let sigs = m.evidence.as_ref().unwrap().signatures.as_ref().unwrap();
        let [s] = sigs.signed.as_slice() else {
            panic!("{kind:?}: {sigs:?}")
        };
        assert_eq!(s.kind, SignatureKind::Pep740Provenance);
        assert_eq!(
            (s.issuer.as_str(), s.identity.as_str()),
            (ATTESTED_WHEEL_ISSUER, ATTESTED_WHEEL_SIGNER)
        );
        assert_eq!(s.file_name.as_deref(), Some(ATTESTED_WHEEL));
        assert_eq!(s.admitted_by, Some(AdmittedBy::Site));
        assert_eq!(s.what, format!("PyPI rfc8785 0.1.2 {ATTESTED_WHEEL}"));
        assert!(s.signed_at.starts_with("2024-06-06T"), "{}", s.signed_at);
        assert!(sigs.trusted_root_from.contains("staging.trusted_root.json"));
        let carried = m.python_envs[0]
            .files
            .iter()
            .find(|f| f.sha256 == s.artifact);
        assert!(carried.is_some(), "{m:?}");
        let sbom_sha = &m.evidence.as_ref().unwrap().sbom.sha256;
        let sbom =
            std::fs::read_to_string(out.join("blobs/sha256").join(sbom_sha.as_str())).unwrap();
        assert!(
            sbom.contains(ATTESTED_WHEEL_SIGNER) && sbom.contains("the site's --identity"),
            "{sbom}"
        );
    }
    let out = tmp.path().join("b");
    let sha = sha256_file(&out.join("manifest.json"));
    let store = tmp.path().join("store");
    let said = ok(&import_bundle(&out, &sha, &store, &[]));
    assert!(
        said.contains(&format!(
            "1 publisher's signature verified again (1 by {ATTESTED_WHEEL_SIGNER})"
        )),
        "{said}"
    );
    // Shown like a release asset's: `mirror list` and the front page.
    let listed = ok(&crate::bundle_kit::run(&[
        "mirror",
        "list",
        "--store",
        store.to_str().unwrap(),
    ]));
    assert!(
        listed.contains(&format!(
            "publisher signature: PyPI rfc8785 0.1.2 {ATTESTED_WHEEL}: by {ATTESTED_WHEEL_SIGNER} \
             (issued by {ATTESTED_WHEEL_ISSUER}, signed 2024-06-06T"
        )) && listed.contains("admitted by the site's --identity)"),
        "{listed}"
    );
    let m = manifest_of_dir(&out);
    let artifact = &m
        .evidence
        .as_ref()
        .unwrap()
        .signatures
        .as_ref()
        .unwrap()
        .signed[0]
        .artifact;
    let server = Server::start(&store);
    let front = text(&server.get("/").1);
    let link = format!("/-/bundles/{sha}/evidence/{artifact}.sigstore.json");
    assert!(
        front.contains(&link) && front.contains(ATTESTED_WHEEL_SIGNER),
        "{front}"
    );
    let (status, body) = server.get(&link);
    assert_eq!(status, 200);
    let served = tmp.path().join("served.sigstore.json");
    std::fs::write(&served, &body).unwrap();
    // The real Sigstore client verifies the bundle the mirror serves, as a
    // node would, offline (staging: the instance that logged it).
    let wheel = tmp.path().join(ATTESTED_WHEEL);
    std::fs::copy(
        concat!(
            env!("CARGO_MANIFEST_DIR"),
            "/testdata/pypi-attestations/rfc8785-0.1.2-py3-none-any.whl"
        ),
        &wheel,
    )
    .unwrap();
    let verify = || {
        let cli = crate::bundle_kit::venv_dir("LLMGW_SIGSTORE_VENV", ".venv-sigstore")
            .join("bin/sigstore");
        std::process::Command::new(cli)
            .args(["--staging", "verify", "identity", "--offline", "--bundle"])
            .arg(&served)
            .args(["--cert-identity", ATTESTED_WHEEL_SIGNER])
            .args(["--cert-oidc-issuer", ATTESTED_WHEEL_ISSUER])
            .arg(&wheel)
            .env("HOME", tmp.path())
            .output()
            .unwrap()
    };
    let o = verify();
    let said = format!("{}{}", text(&o.stdout), text(&o.stderr));
    assert!(o.status.success() && said.contains("OK:"), "{said}");
    std::fs::write(&wheel, b"not the wheel").unwrap();
    assert!(!verify().status.success());
}

#[test]
fn without_a_policy_the_publisher_pypi_names_must_have_signed() {
    let fx = fixture(PypiProvenance::Listed);
    let tmp = tempfile::tempdir().unwrap();
    let root = staging_root();
    let err = fails(&create(&fx, tmp.path(), &["--trusted-root", &root]), 1);
    assert!(
        err.contains(ATTESTED_WHEEL)
            && err.contains(&format!(
                "validly signed, but by {ATTESTED_WHEEL_SIGNER} issued by {ATTESTED_WHEEL_ISSUER}"
            ))
            && err.contains(&format!(
                "{NAMED_PUBLISHER_WORKFLOW}<any ref> issued by \
                 https://token.actions.githubusercontent.com (the publisher PyPI names)"
            )),
        "{err}"
    );
    assert!(!tmp.path().join("b").exists());
}

#[test]
fn a_site_policy_naming_another_signer_is_refused_naming_both() {
    let fx = fixture(PypiProvenance::Listed);
    let tmp = tempfile::tempdir().unwrap();
    let (root, other) = (
        staging_root(),
        "pypi:RFC8785=https://token.actions.githubusercontent.com,\
         https://github.com/trailofbits/rfc8785.py/.github/workflows/other.yml@",
    );
    let err = fails(
        &create(
            &fx,
            tmp.path(),
            &["--identity", other, "--trusted-root", &root],
        ),
        1,
    );
    assert!(
        err.contains(ATTESTED_WHEEL)
            && err.contains(&format!("validly signed, but by {ATTESTED_WHEEL_SIGNER}"))
            && err.contains("rfc8785.py/.github/workflows/other.yml@<any ref>"),
        "{err}"
    );
    assert!(!tmp.path().join("b").exists());
}

#[test]
fn provenance_for_another_file_is_refused_naming_the_file() {
    // pypi-attestations' sdist's real provenance (public-good Sigstore, the
    // root this binary embeds) served as rfc8785's wheel's.
    let fx = fixture(PypiProvenance::OtherFile);
    let tmp = tempfile::tempdir().unwrap();
    let err = fails(&create(&fx, tmp.path(), &[]), 1);
    assert!(
        err.contains(&format!("PyPI rfc8785 0.1.2 {ATTESTED_WHEEL}"))
            && err.contains("/integrity/rfc8785/0.1.2/")
            && err.contains("does not match any subject"),
        "{err}"
    );
    assert!(!tmp.path().join("b").exists());
}

#[test]
fn a_publisher_of_a_kind_not_read_or_a_garbled_answer_is_refused() {
    let tmp = tempfile::tempdir().unwrap();
    let root = staging_root();
    // A Google publisher: nobody named a signer, and its certificates are
    // not held against it here; the site can name one.
    let fx = fixture(PypiProvenance::GooglePublisher);
    let google = tmp.path().join("google");
    std::fs::create_dir(&google).unwrap();
    let err = fails(&create(&fx, &google, &["--trusted-root", &root]), 1);
    assert!(
        err.contains(ATTESTED_WHEEL)
            && err.contains("PyPI's provenance names a Google publisher")
            && err.contains("--identity pypi:rfc8785=ISSUER,IDENTITY"),
        "{err}"
    );
    assert!(!google.join("b").exists());
    let id = site_identity();
    ok(&create(
        &fx,
        &google,
        &["--identity", &id, "--trusted-root", &root],
    ));
    drop(fx);
    let fx = fixture(PypiProvenance::Truncated);
    let err = fails(&create(&fx, tmp.path(), &["--trusted-root", &root]), 1);
    assert!(
        err.contains(ATTESTED_WHEEL) && err.contains("it is not a PEP 740 provenance object"),
        "{err}"
    );
    assert!(!tmp.path().join("b").exists());
}

#[test]
fn no_provenance_is_recorded_unsigned_unless_the_site_requires_one() {
    let fx = fixture(PypiProvenance::Absent);
    let tmp = tempfile::tempdir().unwrap();
    let dir = |n: &str| {
        let d = tmp.path().join(n);
        std::fs::create_dir(&d).unwrap();
        d
    };
    // Nobody requires one: the 404 is recorded, not an error.
    let plain = dir("plain");
    ok(&create(&fx, &plain, &[]));
    let m = manifest_of_dir(&plain.join("b"));
    assert_eq!(m.format_version, FORMAT_SIGNATURES);
    let sigs = m.evidence.as_ref().unwrap().signatures.as_ref().unwrap();
    assert!(sigs.signed.is_empty(), "{sigs:?}");
    let [u] = sigs.unsigned.as_slice() else {
        panic!("{sigs:?}")
    };
    assert!(u.what.ends_with(ATTESTED_WHEEL), "{u:?}");
    assert_eq!(u.allowed_by, "no policy requiring one");
    // The site requires one: refused, unless let in (and then recorded so).
    let id = site_identity();
    let required = dir("required");
    let err = fails(&create(&fx, &required, &["--identity", &id]), 1);
    assert!(
        err.contains(ATTESTED_WHEEL)
            && err.contains("offers no attestation")
            && err.contains("/integrity/rfc8785/0.1.2/")
            && err.contains("--allow-unsigned-upstream"),
        "{err}"
    );
    assert!(!required.join("b").exists());
    ok(&create(
        &fx,
        &required,
        &["--identity", &id, "--allow-unsigned-upstream"],
    ));
    let m = manifest_of_dir(&required.join("b"));
    let sigs = m.evidence.as_ref().unwrap().signatures.as_ref().unwrap();
    assert_eq!(sigs.unsigned[0].allowed_by, "--allow-unsigned-upstream");
    assert!(sigs.unsigned[0].expected.contains(ATTESTED_WHEEL_SIGNER));
}

#[test]
fn import_and_verify_refuse_a_tampered_carried_attestation() {
    let tmp = tempfile::tempdir().unwrap();
    let out = carried(tmp.path(), PypiProvenance::Listed);
    let good = manifest_of_dir(&out);
    let s = good
        .evidence
        .as_ref()
        .unwrap()
        .signatures
        .as_ref()
        .unwrap()
        .signed[0]
        .clone();
    // The carried Sigstore bundle with one digit of its signature changed,
    // in the bundle as a blob of its own (in place of the genuine one) and
    // named by the manifest: the last case.
    let blobs = out.join("blobs/sha256");
    let bytes = std::fs::read(blobs.join(s.bundle.sha256.as_str())).unwrap();
    let mut forged = bytes.clone();
    let at = text(&bytes).find("\"sig\":\"").unwrap() + 7;
    forged[at + 4] = if forged[at + 4] == b'A' { b'B' } else { b'A' };
    let forged_sha = llmgw_shared::Sha256::of(&forged);
    type Edit = Box<dyn Fn(&mut Manifest)>;
    let cases: Vec<(&str, Edit, &str)> = vec![
        (
            "another file name",
            Box::new(|m: &mut Manifest| {
                signature(m).file_name = Some("rfc8785-0.1.3-py3-none-any.whl".into());
            }),
            "does not verify against the bundle's trusted root",
        ),
        (
            "another signer recorded",
            Box::new(|m: &mut Manifest| {
                signature(m).identity = "someone@example.org".into();
            }),
            "but the bundle is signed by william@yossarian.net",
        ),
        (
            "a forged bundle",
            Box::new(move |m: &mut Manifest| {
                signature(m).bundle.sha256 = forged_sha.clone();
            }),
            "does not verify against the bundle's trusted root",
        ),
    ];
    let manifest_path = out.join("manifest.json");
    for (what, edit, says) in cases {
        if what == "a forged bundle" {
            std::fs::remove_file(blobs.join(s.bundle.sha256.as_str())).unwrap();
            std::fs::write(
                blobs.join(llmgw_shared::Sha256::of(&forged).as_str()),
                &forged,
            )
            .unwrap();
        }
        let mut m = good.clone();
        edit(&mut m);
        let json = m.to_canonical_json();
        std::fs::write(&manifest_path, &json).unwrap();
        let sha = llmgw_shared::Sha256::of(&json).to_string();
        let store = tmp.path().join(what.replace(' ', "-"));
        std::fs::create_dir(&store).unwrap();
        let err = fails(&import_bundle(&out, &sha, &store, &[]), 1);
        assert!(
            err.contains(&format!(
                "the publisher signature of PyPI rfc8785 0.1.2 {ATTESTED_WHEEL}"
            )) && err.contains(says),
            "{what}: {err}"
        );
        let held: Vec<_> = snapshot(&store)
            .into_keys()
            .filter(|k| k.starts_with("bundles/") || k.starts_with("blobs/sha256/"))
            .collect();
        assert!(held.is_empty(), "{what}: {held:?}");
        let o =
            crate::bundle_kit::run(&["bundle", "verify", out.to_str().unwrap(), "--sha256", &sha]);
        let err = fails(&o, 1);
        assert!(err.contains(says), "bundle verify, {what}: {err}");
    }
}

/// The manifest's one publisher signature.
fn signature(m: &mut Manifest) -> &mut llmgw_shared::manifest::PublisherSignature {
    let sigs = m.evidence.as_mut().unwrap().signatures.as_mut().unwrap();
    &mut sigs.signed[0]
}
