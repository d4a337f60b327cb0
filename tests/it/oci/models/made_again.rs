//! A model's OCI document made again on request that no longer hashes to
//! the digest the index gave it (the store changed under the index: here
//! `config.json`'s blob, whose architecture the ModelPack config carries)
//! is refused with a 500 saying what to do, and logged — never sent.

use super::ask::{OCI_ACCEPT, sha};
use super::clients::http;
use super::store::{Served, files};

#[test]
fn a_document_made_again_with_another_digest_is_a_500_and_a_log_line() {
    let s = Served::new();
    // The ModelPack profile's digests were made when the index was built;
    // its documents are made again on the first request for them.
    let config = &files()["config.json"];
    let hex = sha(config);
    let blob = s.store.join("blobs/sha256").join(&hex[..2]).join(&hex);
    assert!(
        blob.is_file(),
        "{} is where the store keeps it",
        blob.display()
    );
    std::fs::remove_file(&blob).unwrap();
    std::fs::write(&blob, br#"{"architectures":["OtherForCausalLM"]}"#).unwrap();

    let a = http(
        &s.server.url,
        "GET",
        "/v2/modelpack/acme/tiny/manifests/main",
        &[OCI_ACCEPT.to_string()],
    );
    let body = String::from_utf8_lossy(&a.body);
    assert_eq!(a.status, 500, "{body}");
    assert!(
        body.contains("could not be made: the document made again has another digest")
            && body.contains("llmgw mirror verify"),
        "{body}"
    );
    let log = std::fs::read_to_string(s.path("serve-1.log")).unwrap();
    let line = log
        .lines()
        .find(|l| l.contains("a model's OCI document cannot be made again"))
        .unwrap_or_else(|| panic!("no log line for the refusal in:\n{log}"));
    assert!(
        line.contains("modelpack/acme/tiny") && line.contains("another digest"),
        "{line}"
    );
    // Asked again, it is refused again: no other bytes were kept for it.
    let again = http(
        &s.server.url,
        "GET",
        "/v2/modelpack/acme/tiny/manifests/main",
        &[OCI_ACCEPT.to_string()],
    );
    assert_eq!(again.status, 500);
}
