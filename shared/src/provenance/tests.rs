//! The verifier against Sigstore material nobody here wrote: the bundles
//! and roots in sigstore-rust's test data (testdata/sigstore/README.md).

use super::*;

const DATA: &str = concat!(env!("CARGO_MANIFEST_DIR"), "/../testdata/sigstore/");
/// The sha256 of `signed-package-2.1.0-hb0f4dca_0.conda`, the subject of
/// `conda-attestation.sigstore.json`.
const CONDA_SHA: &str = "54303491a8418fbed24344b513546182c29b43bf282ceb433af65e2299f9271f";
const CONDA_SIGNER: &str =
    "https://github.com/prefix-dev/sigstore-example/.github/workflows/action.yaml@refs/heads/main";

fn read(name: &str) -> Vec<u8> {
    std::fs::read(format!("{DATA}{name}")).unwrap()
}

fn sha(hex: &str) -> Sha256 {
    Sha256::parse_exact("test", hex).unwrap()
}

#[test]
fn a_github_actions_attestation_verifies_and_names_its_workflow() {
    let signed = verify(
        &read("conda-attestation.sigstore.json"),
        &sha(CONDA_SHA),
        &TrustedRoot::embedded(),
    )
    .unwrap();
    assert_eq!(signed.issuer, GITHUB_ACTIONS_ISSUER);
    assert_eq!(signed.identity, CONDA_SIGNER);
    assert!(
        signed.signed_at.starts_with("2025-"),
        "{}",
        signed.signed_at
    );
}

#[test]
fn another_artifact_is_refused() {
    let err = verify(
        &read("conda-attestation.sigstore.json"),
        &sha(&"ab".repeat(32)),
        &TrustedRoot::embedded(),
    )
    .unwrap_err();
    assert!(err.to_string().contains("does not match"), "{err}");
}

#[test]
fn a_forged_or_truncated_bundle_is_refused() {
    let good = read("conda-attestation.sigstore.json");
    let root = TrustedRoot::embedded();
    let truncated = &good[..good.len() / 2];
    let err = verify(truncated, &sha(CONDA_SHA), &root).unwrap_err();
    assert!(matches!(err, ProvenanceError::NotABundle { .. }), "{err}");
    // The signature's first base64 digits changed: still a bundle, no
    // longer a signature over the statement.
    let text = String::from_utf8(good.clone()).unwrap();
    let at = text
        .find("\"sig\": \"")
        .or_else(|| text.find("\"sig\":\""))
        .unwrap();
    let start = text[at..]
        .find(": \"")
        .map(|i| at + i + 3)
        .unwrap_or(at + 7);
    let mut forged = text.into_bytes();
    forged[start] = if forged[start] == b'M' { b'N' } else { b'M' };
    let err = verify(&forged, &sha(CONDA_SHA), &root).unwrap_err();
    assert!(matches!(err, ProvenanceError::Unverified { .. }), "{err}");
    let big = vec![b' '; MAX_SIGSTORE_BUNDLE + 1];
    assert!(matches!(
        verify(&big, &sha(CONDA_SHA), &root).unwrap_err(),
        ProvenanceError::TooLarge { .. }
    ));
}

#[test]
fn a_root_that_does_not_chain_refuses() {
    let other = TrustedRoot::parse(&read("scaffolding.trusted_root.json"), "scaffolding").unwrap();
    let err = verify(
        &read("conda-attestation.sigstore.json"),
        &sha(CONDA_SHA),
        &other,
    )
    .unwrap_err();
    assert!(matches!(err, ProvenanceError::Unverified { .. }), "{err}");
    let err = TrustedRoot::parse(b"{\"mediaType\": 1}", "root.json").unwrap_err();
    assert!(err.to_string().contains("root.json"), "{err}");
}

#[test]
fn identities_match_exactly_or_by_workflow() {
    let signed = Signed {
        issuer: GITHUB_ACTIONS_ISSUER.into(),
        identity: CONDA_SIGNER.into(),
        signed_at: String::new(),
        source_repository: None,
        build_config: None,
    };
    let workflow = "https://github.com/prefix-dev/sigstore-example/.github/workflows/action.yaml@";
    let id = |issuer: &str, identity: &str| Identity {
        issuer: issuer.into(),
        identity: identity.into(),
    };
    assert!(id(GITHUB_ACTIONS_ISSUER, CONDA_SIGNER).admits(&signed));
    assert!(id(GITHUB_ACTIONS_ISSUER, workflow).admits(&signed));
    // Another workflow whose name starts the same is not this one.
    let longer = Signed {
        identity: CONDA_SIGNER.replace("action.yaml@", "action.yaml.evil@"),
        ..signed.clone()
    };
    assert!(!id(GITHUB_ACTIONS_ISSUER, workflow).admits(&longer));
    assert!(!id("https://accounts.google.com", CONDA_SIGNER).admits(&signed));
    assert!(!id(GITHUB_ACTIONS_ISSUER, &CONDA_SIGNER.replace("main", "dev")).admits(&signed));
}
