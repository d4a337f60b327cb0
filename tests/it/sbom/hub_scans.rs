//! The Hub's scan verdicts: the fixture answers `paths-info` and the tree
//! with `expand=True` in the shape `huggingface_hub`'s own `RepoFile` reads
//! (checked with the real client), and create records what it said per
//! file, with the card's licence and the repository's safetensors files.

use llmgw_fixture::PICKLED_COMMIT;
use serde_json::Value;

use super::kit::{create, fixture, manifest_of_dir, python, run_python};

/// Asks the fixture Hub as `huggingface_hub` does and prints what its
/// `RepoFile.security` holds for each file.
const ASK: &str = r#"
import json, sys
from huggingface_hub import HfApi
api = HfApi(endpoint=sys.argv[1], token=False)
info = api.get_paths_info("acme/pickled", ["optimizer.pt", "extra/scaler.pkl", "model.safetensors", "extra"], expand=True)
tree = [f for f in api.list_repo_tree("acme/pickled", recursive=True, expand=True) if hasattr(f, "security")]
def sec(f):
    s = f.security
    return None if s is None else {"safe": s["safe"], "status": s["status"],
        "pickle": s["pickle_import_scan"], "av": s["av_scan"]}
print(json.dumps({"paths_info": {f.path: sec(f) for f in info if hasattr(f, "security")},
                  "tree": {f.path: sec(f) for f in tree}}))
"#;

#[test]
fn the_fixture_answers_scans_as_huggingface_hub_reads_them_and_create_records_them() {
    let hf = python(
        "LLMGW_VENV",
        ".venv",
        "huggingface_hub",
        "huggingface_hub==2.4.0",
    );
    let fx = fixture();
    let out: Value =
        serde_json::from_str(&run_python(&hf, ASK, &[fx.hf_endpoint().as_str()])).unwrap();
    for view in ["paths_info", "tree"] {
        let v = &out[view];
        assert_eq!(v["optimizer.pt"]["status"], "unsafe", "{view}: {v}");
        assert_eq!(v["optimizer.pt"]["safe"], false);
        assert_eq!(
            v["optimizer.pt"]["pickle"]["pickleImports"][0]["name"],
            "exec"
        );
        assert_eq!(v["extra/scaler.pkl"]["status"], "unscanned");
        assert_eq!(v["model.safetensors"]["status"], "safe");
        assert_eq!(v["model.safetensors"]["safe"], true);
        assert_eq!(v["model.safetensors"]["av"]["status"], "safe");
    }
    assert_eq!(out["tree"]["pytorch_model.bin"]["status"], "safe");

    let d = tempfile::tempdir().unwrap();
    let dir = d.path().join("b");
    create(&fx, &d.path().join("c"), &dir, &["--model", "acme/pickled"]);
    let m = manifest_of_dir(&dir);
    let e = m.evidence.unwrap();
    let r = &e.repos[0];
    assert_eq!(r.commit, PICKLED_COMMIT);
    assert_eq!(r.license.as_deref(), Some("apache-2.0"));
    assert_eq!(r.weights_variants, ["model.safetensors"]);
    let status = |p: &str| {
        r.files
            .iter()
            .find(|f| f.path == p)
            .map(|f| f.status.clone())
    };
    assert_eq!(status("optimizer.pt").as_deref(), Some("unsafe"));
    assert_eq!(status("extra/scaler.pkl").as_deref(), Some("unscanned"));
    assert_eq!(status("pytorch_model.bin").as_deref(), Some("safe"));
    let unsafe_scan = r.files.iter().find(|f| f.path == "optimizer.pt").unwrap();
    let pickle = unsafe_scan
        .scans
        .iter()
        .find(|s| s.scanner == "pickleImportScan")
        .unwrap();
    assert_eq!(pickle.pickle_imports[0].safety, "dangerous");
    assert!(
        unsafe_scan
            .scans
            .iter()
            .any(|s| s.scanner == "protectAiScan")
    );
    assert_eq!(r.files.len(), 9, "a verdict for every carried file");
}

/// A Hub-compatible endpoint without `POST …/paths-info` that answers 501
/// Not Implemented, as a plain HTTP server does for a method it lacks
/// (#53 item 8): like 404 and 405, a warning and no verdicts, asked once,
/// never a fatal error after eight tries.
#[test]
fn a_paths_info_answering_501_gives_no_verdicts_and_a_warning() {
    let fx = fixture();
    let path = "/api/models/acme/pickled/paths-info/".to_string() + PICKLED_COMMIT;
    fx.faults().set(
        path.clone(),
        llmgw_fixture::Fault {
            refuse: Some(llmgw_fixture::Refuse {
                after: 0,
                times: 100,
                status: 501,
            }),
            ..Default::default()
        },
    );
    let d = tempfile::tempdir().unwrap();
    let dir = d.path().join("b");
    create(&fx, &d.path().join("c"), &dir, &["--model", "acme/pickled"]);
    let m = manifest_of_dir(&dir);
    let e = m.evidence.unwrap();
    assert!(
        e.repos.iter().all(|r| r.files.is_empty()),
        "no verdicts made up: {:?}",
        e.repos
    );
    let asked = fx
        .requests()
        .iter()
        .filter(|r| r.path.starts_with(&path))
        .count();
    assert_eq!(asked, 1, "501 is not tried again");
}
