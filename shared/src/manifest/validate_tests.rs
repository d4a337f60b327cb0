//! One commit carried under several revisions (#54 item 2): accepted as an
//! entry per revision describing one tree, refused twice under one
//! revision or with two contents for one path.

use super::*;
use crate::RepoId;
use crate::manifest::{Evidence, FileScan, RefKind, RepoEvidence};

const COMMIT: &str = "0123456789abcdef0123456789abcdef01234567";

fn entry(revision: &str, ref_kind: RefKind, files: &[(&str, &[u8])]) -> HfRepo {
    HfRepo {
        kind: RepoKind::Model,
        id: RepoId::parse("repository id", "acme/tiny").unwrap(),
        revision: revision.into(),
        ref_kind: Some(ref_kind),
        commit: COMMIT.into(),
        patterns: vec![],
        files: files
            .iter()
            .map(|(p, b)| HfFile::describing(p, b, false))
            .collect(),
        kernel: None,
    }
}

fn manifest(repos: Vec<HfRepo>) -> Manifest {
    let mut m = Manifest::new(vec!["amd64".into()], 0);
    m.repos = repos;
    m.sort();
    m
}

#[test]
fn one_commit_under_two_revisions_is_one_tree() {
    let files: &[(&str, &[u8])] = &[("config.json", b"{}"), ("model.gguf", b"weights")];
    let m = manifest(vec![
        entry("main", RefKind::Branch, files),
        entry("v1", RefKind::Tag, files),
        entry(COMMIT, RefKind::Commit, &files[..1]),
    ]);
    m.validate().unwrap();
    // The evidence is of the commit: a verdict for a file any of its
    // entries carries is accepted.
    let mut only_tag = entry("v1", RefKind::Tag, files);
    only_tag.files.retain(|f| f.path == "model.gguf");
    let m = manifest(vec![entry("main", RefKind::Branch, &files[..1]), only_tag]);
    let scan = |path: &str| FileScan {
        path: path.into(),
        status: "safe".into(),
        scans: vec![],
    };
    let evidence = Evidence {
        sbom: BlobRef {
            sha256: crate::Sha256::of(b"sbom"),
            size: 4,
        },
        signatures: None,
        repos: vec![RepoEvidence {
            kind: RepoKind::Model,
            id: RepoId::parse("repository id", "acme/tiny").unwrap(),
            commit: COMMIT.into(),
            license: None,
            weights_variants: vec![],
            files: vec![scan("config.json"), scan("model.gguf")],
        }],
    };
    evidence.validate(&m.repos).unwrap();
}

#[test]
fn one_revision_twice_or_two_contents_for_one_path_are_refused() {
    let files: &[(&str, &[u8])] = &[("config.json", b"{}")];
    let twice = manifest(vec![
        entry("main", RefKind::Branch, files),
        entry("main", RefKind::Branch, files),
    ]);
    let e = twice.validate().unwrap_err().to_string();
    assert!(e.contains("listed twice as revision main"), "{e}");

    let other = manifest(vec![
        entry("main", RefKind::Branch, files),
        entry("v1", RefKind::Tag, &[("config.json", b"{\"other\": 1}")]),
    ]);
    let e = other.validate().unwrap_err().to_string();
    assert!(
        e.contains("config.json at commit") && e.contains("revisions main and v1"),
        "{e}"
    );
}
