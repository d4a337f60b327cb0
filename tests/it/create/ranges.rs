//! How a tar bundle's ranged downloads (bundler `pieces`, deciding by
//! `fetch::step::next_step`) meet servers that do not do as asked: one that
//! ignores `Range`, one whose file is shorter than listed (416), and a
//! storage whose signed redirect target expires between two pieces.

use super::common::*;
use llmgw_fixture::{Fixture, FixtureOptions, RequestRecord};

/// The big model's one file: 9 MiB, so two pieces (8 MiB, then 1 MiB).
const BIG_FILE: &str = "model-00001-of-00001.safetensors";
/// Where the second piece begins.
const PIECE: u64 = 8 << 20;

fn big_fixture() -> Fixture {
    fixture_with(FixtureOptions {
        big_files: 1,
        big_mib: 9,
        ..FixtureOptions::default()
    })
}

/// The path on the storage origin the Hub redirects `repo`'s `file` to.
fn storage_path(fx: &Fixture, repo: &str, file: &str) -> String {
    let r = fx.catalog().hub.iter().find(|r| r.id == repo).unwrap();
    let f = r.commits[0].files.iter().find(|f| f.path == file).unwrap();
    format!("/hf/repos/{repo}/{}", f.blob.sha256)
}

/// The GETs of paths that end with `suffix` on `listener`: their Range
/// headers ("" for none), in order.
fn gets(fx: &Fixture, listener: &str, suffix: &str) -> Vec<String> {
    fx.requests()
        .iter()
        .filter(|r: &&RequestRecord| {
            r.listener == listener && r.method == "GET" && r.path_only().ends_with(suffix)
        })
        .map(|r| r.header("range").unwrap_or("").to_string())
        .collect()
}

/// `bundle create` of one file of a model into `b.tar`, a piece at a time.
fn create_one(fx: &Fixture, dir: &std::path::Path, model: &str) -> std::process::Output {
    let mut c = create(fx, dir);
    c.args(["--arch", "amd64", "--model", model, "--jobs", "1", "--json"]);
    run(c.arg("--out").arg(dir.join("b.tar")))
}

#[test]
fn a_server_that_ignores_range_has_the_bytes_held_skipped() {
    let fx = big_fixture();
    let d = tempfile::tempdir().unwrap();
    let storage = storage_path(&fx, "acme/big", BIG_FILE);
    fx.faults().ignore_range(&storage);
    let o = create_one(&fx, d.path(), &format!("acme/big:{BIG_FILE}"));
    let report: serde_json::Value = serde_json::from_str(&ok(&o)).unwrap();
    // Both pieces asked for their range, both got the whole file: the
    // first kept its 8 MiB, the second skipped them and kept the rest.
    assert_eq!(
        gets(&fx, "storage", &storage),
        [format!("bytes=0-{}", PIECE - 1), format!("bytes={PIECE}-")]
    );
    assert_eq!(report["bytes_downloaded"].as_u64(), Some(9 << 20));
    let listed = tool("tar", &["-tvf", "b.tar"], d.path());
    assert!(listed.contains(&(9u64 << 20).to_string()), "{listed}");
}

#[test]
fn a_resumed_piece_answered_with_the_whole_file_skips_what_arrived() {
    let fx = fixture();
    let d = tempfile::tempdir().unwrap();
    let storage = storage_path(&fx, "acme/tiny", "model.safetensors");
    fx.faults().cut_once(&storage, 100_000);
    fx.faults().ignore_range(&storage);
    let o = create_one(&fx, d.path(), "acme/tiny:model.safetensors");
    let report: serde_json::Value = serde_json::from_str(&ok(&o)).unwrap();
    assert_eq!(gets(&fx, "storage", &storage), ["", "bytes=100000-"]);
    // No byte was handed on twice.
    assert_eq!(report["bytes_downloaded"].as_u64(), Some(300_000));
}

#[test]
fn fewer_bytes_than_listed_fails_naming_the_range_and_what_to_do() {
    let fx = fixture();
    let d = tempfile::tempdir().unwrap();
    let storage = storage_path(&fx, "acme/tiny", "model.safetensors");
    // Cut after 100000 bytes, then 416 to the resumed range: from the
    // stored redirect target, and from the target the file's URL gives.
    fx.faults().cut_once(&storage, 100_000);
    fx.faults().refuse(&storage, 1, 2, 416);
    let o = create_one(&fx, d.path(), "acme/tiny:model.safetensors");
    let err = fails(&o, 1);
    assert!(err.contains(&storage), "names the URL: {err}");
    assert!(
        err.contains(
            "asked for bytes from 100000 on of the 300000 its publisher listed; the server has \
             fewer (416)"
        ),
        "{err}"
    );
    assert!(err.contains("run create again"), "{err}");
    assert_eq!(
        gets(&fx, "storage", &storage),
        ["", "bytes=100000-", "bytes=100000-"],
        "no retry after the 416"
    );
}

#[test]
fn an_expired_redirect_target_has_the_files_url_asked_once_again() {
    let fx = big_fixture();
    let d = tempfile::tempdir().unwrap();
    let storage = storage_path(&fx, "acme/big", BIG_FILE);
    let model = format!("acme/big:{BIG_FILE}");
    // The first piece's target serves; the second piece, sent straight to
    // it, is refused once (expired); the file's URL signs it again.
    fx.faults().refuse(&storage, 1, 1, 403);
    ok(&create_one(&fx, d.path(), &model));
    let second = format!("bytes={PIECE}-");
    assert_eq!(
        gets(&fx, "storage", &storage),
        [
            format!("bytes=0-{}", PIECE - 1),
            second.clone(),
            second.clone()
        ]
    );
    assert_eq!(
        gets(&fx, "hub", BIG_FILE).len(),
        2,
        "the file's URL, once again"
    );

    // A target that stays refused: the file's URL is asked once again,
    // not more, and the refusal is the answer. (That the one ask again is
    // spent for the piece, should the file's URL lead to a target that
    // serves and then refuses, is a row of next_step's table.)
    let fx = big_fixture();
    let d = tempfile::tempdir().unwrap();
    let storage = storage_path(&fx, "acme/big", BIG_FILE);
    fx.faults().refuse(&storage, 1, 10, 403);
    let err = fails(&create_one(&fx, d.path(), &model), 1);
    assert!(err.contains("403"), "{err}");
    assert_eq!(gets(&fx, "hub", BIG_FILE).len(), 2, "{err}");
    assert_eq!(gets(&fx, "storage", &storage).len(), 3, "{err}");
}
