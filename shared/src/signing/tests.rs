//! Keys, signatures and trusted comments read and checked, with keys and
//! signatures made here by the minisign crate.

use super::*;
use std::io::Cursor;

fn keypair() -> (minisign::KeyPair, PublicKey) {
    let kp = minisign::KeyPair::generate_unencrypted_keypair().unwrap();
    let text = kp.pk.to_box().unwrap().into_string();
    let pk = PublicKey::parse("test.pub", &text).unwrap();
    (kp, pk)
}

fn sign(kp: &minisign::KeyPair, data: &[u8]) -> String {
    minisign::sign(
        Some(&kp.pk),
        &kp.sk,
        Cursor::new(data),
        Some("file:SHA256SUMS"),
        None,
    )
    .unwrap()
    .to_string()
}

#[test]
fn good_signature_names_its_key() {
    let (kp, pk) = keypair();
    let sig = Signature::parse("SHA256SUMS.minisig", &sign(&kp, b"sums")).unwrap();
    let id = verify_with_trusted("SHA256SUMS", b"sums", &sig, std::slice::from_ref(&pk)).unwrap();
    assert_eq!(id, pk.key_id());
    assert_eq!(sig.trusted_comment(), "file:SHA256SUMS");
    // The key id printed is the one minisign's own box comment shows.
    let boxed = kp.pk.to_box().unwrap().into_string();
    assert!(boxed.to_uppercase().contains(&pk.key_id()), "{boxed}");
}

#[test]
fn the_comment_must_name_the_tag_as_a_word() {
    for (comment, tag, ok) in [
        ("llmgw v1.4.0", "v1.4.0", true),
        ("timestamp:1\tfile:SHA256SUMS\ttag:v1.4.0", "v1.4.0", true),
        ("release v1.4.0 of llmgw", "v1.4.0", true),
        ("llmgw v1.4.0", "v1.4", false),
        ("llmgw v1.4.0-rc1", "v1.4.0", false),
        ("llmgw v1.4.01", "v1.4.0", false),
        ("llmgw xv1.4.0", "v1.4.0", false),
        (
            "timestamp:1754784000\tfile:SHA256SUMS\thashed",
            "v1.4.0",
            false,
        ),
        ("llmgw v1.3.0", "v1.4.0", false),
        ("anything", "", false),
    ] {
        assert_eq!(comment_names_tag(comment, tag), ok, "{comment:?} {tag:?}");
    }
    let (kp, _) = keypair();
    let text = minisign::sign(
        Some(&kp.pk),
        &kp.sk,
        Cursor::new(b"s"),
        Some("llmgw v1.3.0\u{1b}[2J"),
        None,
    )
    .unwrap()
    .to_string();
    let sig = Signature::parse("SHA256SUMS.minisig", &text).unwrap();
    check_release_comment("SHA256SUMS", &sig, "v1.3.0").unwrap();
    let err = check_release_comment("SHA256SUMS", &sig, "v1.4.0")
        .unwrap_err()
        .to_string();
    assert!(err.contains("does not name the tag v1.4.0"), "{err}");
    assert!(err.contains("llmgw v1.3.0\\u{1b}[2J"), "{err}");
}

#[test]
fn changed_data_is_refused() {
    let (kp, pk) = keypair();
    let sig = Signature::parse("s", &sign(&kp, b"sums")).unwrap();
    let err = verify_with_trusted("SHA256SUMS", b"sumz", &sig, &[pk]).unwrap_err();
    assert!(err.to_string().contains("does not verify"), "{err}");
}

#[test]
fn another_key_is_named() {
    let (kp, _) = keypair();
    let (_, other) = keypair();
    let sig = Signature::parse("s", &sign(&kp, b"sums")).unwrap();
    let err =
        verify_with_trusted("SHA256SUMS", b"sums", &sig, std::slice::from_ref(&other)).unwrap_err();
    let msg = err.to_string();
    assert!(msg.contains(&sig.key_id()), "{msg}");
    assert!(msg.contains(&other.key_id()), "{msg}");
    let err = verify_with_trusted("SHA256SUMS", b"sums", &sig, &[]).unwrap_err();
    assert!(err.to_string().contains("trusted: none"), "{err}");
}

#[test]
fn legacy_signature_is_refused() {
    let (kp, _) = keypair();
    let text = sign(&kp, b"sums");
    let mut lines: Vec<String> = text.lines().map(String::from).collect();
    let mut raw = BASE64.decode(&lines[1]).unwrap();
    raw[1] = b'd';
    lines[1] = BASE64.encode(&raw);
    let err = Signature::parse("SHA256SUMS.minisig", &lines.join("\n")).unwrap_err();
    assert!(err.to_string().contains("legacy"), "{err}");
}

#[test]
fn garbage_keys_are_refused() {
    for text in [
        "",
        "untrusted comment: x\n",
        "untrusted comment: x\nnot base64!\n",
        "untrusted comment: x\nRWQ=\n",
    ] {
        let err = PublicKey::parse("k.pub", text).unwrap_err();
        assert!(
            err.to_string()
                .starts_with("k.pub is not a minisign public key"),
            "{err}"
        );
    }
}

#[test]
fn a_decoders_words_are_the_cause_said_once() {
    let err = PublicKey::parse("k.pub", "untrusted comment: x\nnot base64!\n").unwrap_err();
    // The fault is the chain's to say, after the message, once.
    let msg = err.to_string();
    assert!(!msg.contains("the key line is not base64"), "{msg}");
    let line = crate::chain(&err);
    let cause = base64::DecodeError::InvalidByte(3, b' ').to_string();
    assert!(
        line.ends_with(&format!("RW): the key line is not base64: {cause}")),
        "{line}"
    );
    assert_eq!(line.matches(&cause).count(), 1, "{line}");
    assert_eq!(line.matches("is not base64").count(), 1, "{line}");
    let err = Signature::parse("s.minisig", "c\n!!!!\n").unwrap_err();
    let line = crate::chain(&err);
    assert!(
        line.starts_with(
            "s.minisig is not a minisign signature: the signature line is not base64: "
        ),
        "{line}"
    );
}

#[test]
fn key_file_round_trips() {
    let (_, pk) = keypair();
    let again = PublicKey::parse("again", &pk.to_file_text()).unwrap();
    assert_eq!(again.key_id(), pk.key_id());
}
