//! Several revisions of one repository that name one commit, in one
//! request (#54 item 2): `acme/tiny@main`, its tag `@v1` and the commit
//! itself all name the fixture's one commit. The bundle carries the
//! commit's files once and every name, one manifest entry per revision;
//! after import, the mirror's Hub API resolves each name to the commit.

use llmgw_fixture::TINY_COMMIT;
use llmgw_fixture::kit::{Server, import_bundle};
use llmgw_shared::manifest::RefKind;

use super::common::*;

fn json(bytes: &[u8]) -> serde_json::Value {
    serde_json::from_slice(bytes).unwrap()
}

#[test]
fn revisions_of_one_commit_are_carried_once_under_every_name() {
    let fx = fixture();
    let tmp = tempfile::tempdir().unwrap();
    let out = tmp.path().join("b");
    let commit = format!("acme/tiny@{TINY_COMMIT}");
    let mut c = create(&fx, tmp.path());
    c.args(["--arch", "amd64", "--model", "acme/tiny@main"])
        .args(["--model", "acme/tiny@v1", "--model", &commit]);
    let sha = ok(&run(c.arg("--out").arg(&out))).trim().to_string();

    let m = manifest_of_dir(&out);
    let mut names: Vec<(&str, Option<RefKind>)> = m
        .repos
        .iter()
        .map(|r| (r.revision.as_str(), r.ref_kind))
        .collect();
    names.sort();
    let mut want = vec![
        ("main", Some(RefKind::Branch)),
        ("v1", Some(RefKind::Tag)),
        (TINY_COMMIT, Some(RefKind::Commit)),
    ];
    want.sort();
    assert_eq!(names, want);
    for r in &m.repos {
        assert_eq!(
            (r.id.as_str(), r.commit.as_str()),
            ("acme/tiny", TINY_COMMIT)
        );
        assert_eq!(r.files, m.repos[0].files, "one commit, one tree");
    }
    // The files once: each blob of the commit is one file of the bundle,
    // and the Hub's evidence is of the commit, once.
    let blobs = std::fs::read_dir(out.join("blobs/sha256")).unwrap().count();
    assert_eq!(blobs, m.carried_blobs().len());
    assert!(
        m.repos[0]
            .files
            .iter()
            .all(|f| m.blobs().contains_key(&f.sha256))
    );
    let evidence = m.evidence.as_ref().expect("format 4 evidence");
    assert_eq!(evidence.repos.len(), 1, "{:?}", evidence.repos);
    // The SBOM: one component for the commit, each revision a property;
    // every bom-ref once.
    let sbom = std::fs::read(out.join("blobs/sha256").join(evidence.sbom.sha256.as_str()));
    let sbom = json(&sbom.unwrap());
    let components = sbom["components"].as_array().unwrap();
    let mut refs: Vec<&str> = components
        .iter()
        .filter_map(|c| c["bom-ref"].as_str())
        .collect();
    let n = refs.len();
    refs.sort();
    refs.dedup();
    assert_eq!(refs.len(), n, "a bom-ref twice: {refs:?}");
    let model = format!("ref:model acme/tiny@{TINY_COMMIT}");
    let tiny = components.iter().find(|c| c["bom-ref"] == model).unwrap();
    let mut revisions: Vec<&str> = tiny["properties"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|p| p["name"] == "llmgw:revision")
        .map(|p| p["value"].as_str().unwrap())
        .collect();
    revisions.sort();
    let mut expected = vec!["main", "v1", TINY_COMMIT];
    expected.sort();
    assert_eq!(revisions, expected);

    let store = tmp.path().join("store");
    ok(&import_bundle(&out, &sha, &store, &[]));
    let server = Server::start(&store);
    for name in ["main", "v1", TINY_COMMIT] {
        let body = server.wait_for(&format!("/api/models/acme/tiny/revision/{name}"), 200);
        assert_eq!(json(&body)["sha"], TINY_COMMIT, "{name}");
    }
    let refs = json(&server.wait_for("/api/models/acme/tiny/refs", 200));
    let listed = |kind: &str| -> Vec<String> {
        refs[kind]
            .as_array()
            .unwrap()
            .iter()
            .map(|r| format!("{}={}", r["name"].as_str().unwrap(), r["targetCommit"]))
            .collect()
    };
    assert!(
        listed("tags").contains(&format!("v1=\"{TINY_COMMIT}\"")),
        "{refs}"
    );
    assert!(
        listed("branches").contains(&format!("main=\"{TINY_COMMIT}\"")),
        "{refs}"
    );
}
