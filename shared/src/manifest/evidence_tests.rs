//! Format 4's evidence: declared by the version, and only about what the
//! manifest carries.

use super::*;
use crate::manifest::{HfFile, HfRepo, Manifest, RepoKind};
use crate::{RepoId, Sha256};

fn manifest_with(evidence: Evidence) -> Manifest {
    let mut m = Manifest::new(vec!["amd64".into()], 1_754_784_000);
    m.repos.push(HfRepo {
        kind: RepoKind::Model,
        id: RepoId::parse("id", "acme/tiny").unwrap(),
        revision: "main".into(),
        ref_kind: None,
        commit: "5c3b6e1f0d9a8b7c6d5e4f3a2b1c0d9e8f7a6b5c".into(),
        patterns: Vec::new(),
        files: vec![HfFile::describing("model.bin", b"\x80\x02}q\x00.", true)],
        kernel: None,
    });
    m.evidence = Some(evidence);
    m.format_version = m.needed_format();
    m
}

fn evidence(path: &str, status: &str) -> Evidence {
    Evidence {
        sbom: BlobRef {
            sha256: Sha256::of(b"{}\n"),
            size: 3,
        },
        signatures: None,
        repos: vec![RepoEvidence {
            kind: RepoKind::Model,
            id: RepoId::parse("id", "acme/tiny").unwrap(),
            commit: "5c3b6e1f0d9a8b7c6d5e4f3a2b1c0d9e8f7a6b5c".into(),
            license: Some("mit".into()),
            weights_variants: vec!["model.safetensors".into()],
            files: vec![FileScan {
                path: path.into(),
                status: status.into(),
                scans: Vec::new(),
            }],
        }],
    }
}

#[test]
fn evidence_needs_format_4_and_round_trips() {
    let m = manifest_with(evidence("model.bin", "unsafe"));
    assert_eq!(m.format_version, 4);
    m.validate().unwrap();
    let back = Manifest::from_json_bytes(&m.to_canonical_json()).unwrap();
    assert_eq!(back, m);
    assert!(
        back.blobs().contains_key(&Sha256::of(b"{}\n")),
        "the SBOM is a blob"
    );
    let mut three = m.clone();
    three.format_version = 3;
    let err = three.validate().unwrap_err().to_string();
    assert!(err.contains("needs format 4"), "{err}");
}

#[test]
fn evidence_only_describes_what_is_carried() {
    let err = manifest_with(evidence("other.bin", "safe"))
        .validate()
        .unwrap_err()
        .to_string();
    assert!(err.contains("which is not carried"), "{err}");
    let mut e = evidence("model.bin", "safe");
    e.repos[0].commit = "0".repeat(40);
    let err = manifest_with(e).validate().unwrap_err().to_string();
    assert!(err.contains("no such repository is carried"), "{err}");
    let err = manifest_with(evidence("model.bin", "un\u{1b}safe"))
        .validate()
        .unwrap_err()
        .to_string();
    assert!(err.contains("an ASCII word"), "{err}");
    let mut e = evidence("model.bin", "safe");
    e.repos[0].weights_variants = vec!["../x.safetensors".into()];
    assert!(manifest_with(e).validate().is_err());
}

#[test]
fn a_newer_format_is_refused_by_its_version() {
    let err = Manifest::from_json_bytes(b"{\"format_version\": 10, \"sbom\": 1}")
        .unwrap_err()
        .to_string();
    assert!(
        err.contains("bundle format 10") && err.contains("1 to 9"),
        "{err}"
    );
}
