//! PEP 740 against material nobody here wrote (testdata/README.md,
//! pypi-attestations/): rfc8785's wheel and its publish attestation
//! (Sigstore staging, an interactive signer), and pypi-attestations'
//! sdist with the provenance object PyPI served for it (public-good, its
//! GitHub release workflow).

use super::*;

const DATA: &str = concat!(env!("CARGO_MANIFEST_DIR"), "/../testdata/");
const WHEEL: &str = "rfc8785-0.1.2-py3-none-any.whl";
const SDIST: &str = "pypi_attestations-0.0.19.tar.gz";
const SDIST_SIGNER: &str = "https://github.com/trailofbits/pypi-attestations/.github/workflows/release.yml@refs/tags/v0.0.19";

fn read(name: &str) -> Vec<u8> {
    std::fs::read(format!("{DATA}{name}")).unwrap()
}

fn sha_of(name: &str) -> Sha256 {
    Sha256::of(&read(&format!("pypi-attestations/{name}")))
}

fn staging() -> TrustedRoot {
    TrustedRoot::parse(&read("sigstore/staging.trusted_root.json"), "staging").unwrap()
}

fn wheel_bundle() -> Vec<u8> {
    bundle_of(&read(&format!(
        "pypi-attestations/{WHEEL}.publish.attestation"
    )))
    .unwrap()
}

#[test]
fn a_wheels_attestation_verifies_and_names_its_signer() {
    let signed = verify_file(&wheel_bundle(), &sha_of(WHEEL), WHEEL, &staging()).unwrap();
    assert_eq!(signed.identity, "william@yossarian.net");
    assert_eq!(signed.issuer, "https://github.com/login/oauth");
    assert!(
        signed.signed_at.starts_with("2024-06-06T"),
        "{}",
        signed.signed_at
    );
    // Staging's signature is no evidence under the public-good root.
    let err = verify_file(
        &wheel_bundle(),
        &sha_of(WHEEL),
        WHEEL,
        &TrustedRoot::embedded(),
    )
    .unwrap_err();
    assert!(matches!(err, ProvenanceError::Unverified { .. }), "{err}");
}

#[test]
fn another_files_digest_or_name_is_refused() {
    let err = verify_file(&wheel_bundle(), &sha_of(SDIST), WHEEL, &staging()).unwrap_err();
    assert!(err.to_string().contains("does not match"), "{err}");
    let err = verify_file(
        &wheel_bundle(),
        &sha_of(WHEEL),
        "rfc8785-0.1.2.tar.gz",
        &staging(),
    )
    .unwrap_err();
    assert!(
        matches!(err, ProvenanceError::WrongStatement { .. })
            && err.to_string().contains(
                "its subject is named \"rfc8785-0.1.2-py3-none-any.whl\", expected \
                 \"rfc8785-0.1.2.tar.gz\""
            ),
        "{err}"
    );
}

#[test]
fn a_flipped_byte_or_an_oversize_or_garbled_attestation_is_refused() {
    let text = String::from_utf8(read(&format!(
        "pypi-attestations/{WHEEL}.publish.attestation"
    )))
    .unwrap();
    let at = text.find("\"signature\": \"").unwrap() + "\"signature\": \"".len();
    let mut forged = text.clone().into_bytes();
    forged[at + 4] = if forged[at + 4] == b'A' { b'B' } else { b'A' };
    let bundle = bundle_of(&forged).unwrap();
    let err = verify_file(&bundle, &sha_of(WHEEL), WHEEL, &staging()).unwrap_err();
    assert!(matches!(err, ProvenanceError::Unverified { .. }), "{err}");
    let big = vec![b' '; MAX_PROVENANCE + 1];
    assert!(matches!(
        bundle_of(&big).unwrap_err(),
        ProvenanceError::ProvenanceTooLarge { .. }
    ));
    assert!(matches!(
        parse_provenance(&big).unwrap_err(),
        ProvenanceError::ProvenanceTooLarge { .. }
    ));
    let half = &text.as_bytes()[..text.len() / 2];
    assert!(matches!(
        bundle_of(half).unwrap_err(),
        ProvenanceError::NotAProvenance { .. }
    ));
    let err = parse_provenance(br#"{"version": 2, "attestation_bundles": []}"#).unwrap_err();
    assert!(err.to_string().contains("version is 2"), "{err}");
}

#[test]
fn pypis_provenance_names_the_publisher_the_certificate_matches() {
    let p = parse_provenance(&read(&format!("pypi-attestations/{SDIST}.provenance"))).unwrap();
    let [b] = p.attestation_bundles.as_slice() else {
        panic!("{p:?}")
    };
    assert_eq!(b.publisher.kind, "GitHub");
    assert_eq!(
        b.publisher.repository.as_deref(),
        Some("trailofbits/pypi-attestations")
    );
    let signed = verify_file(
        &b.bundles[0],
        &sha_of(SDIST),
        SDIST,
        &TrustedRoot::embedded(),
    )
    .unwrap();
    assert_eq!(signed.identity, SDIST_SIGNER);
    assert_eq!(signed.issuer, GITHUB_ACTIONS_ISSUER);
    assert!(b.publisher.admits(&signed), "{signed:?}");
    assert_eq!(
        b.publisher.to_string(),
        "https://github.com/trailofbits/pypi-attestations/.github/workflows/release.yml@\
         <any ref> issued by https://token.actions.githubusercontent.com"
    );
    // Another workflow, another repository, another kind: not admitted.
    let other = |f: &dyn Fn(&mut Publisher)| {
        let mut p = b.publisher.clone();
        f(&mut p);
        p.admits(&signed)
    };
    assert!(!other(&|p| p.workflow = Some("release.yml.evil".into())));
    assert!(!other(&|p| p.workflow = Some("other.yml".into())));
    assert!(!other(&|p| p.repository = Some("trailofbits/pypi".into())));
    assert!(!other(&|p| p.kind = "GitLab".into()));
    // The wheel's interactive signer is no GitHub publisher.
    let wheel = verify_file(&wheel_bundle(), &sha_of(WHEEL), WHEEL, &staging()).unwrap();
    assert!(!b.publisher.admits(&wheel));
    // The sdist's attestation is not the wheel's.
    let err = verify_file(
        &b.bundles[0],
        &sha_of(WHEEL),
        WHEEL,
        &TrustedRoot::embedded(),
    )
    .unwrap_err();
    assert!(err.to_string().contains("does not match"), "{err}");
}
