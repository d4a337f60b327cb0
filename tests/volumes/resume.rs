//! `bundle create --volume-size` run again after a run that stopped half-way:
//! the volumes it finished are checked and kept, the missing and cut-short
//! ones written, and the set ends byte for byte what one uninterrupted run
//! makes; a volume that differs from the plan is refused by name.

use std::path::{Path, PathBuf};

use crate::bundle_kit::{self, stderr, stdout};

use super::kit::{self, create, create_cmd, s};

/// Every file of the set (data, parity, `.sha256`) and its bytes.
fn contents(dir: &Path) -> Vec<(String, Vec<u8>)> {
    let mut out: Vec<(String, Vec<u8>)> = std::fs::read_dir(dir)
        .unwrap()
        .flatten()
        .filter(|e| e.file_type().unwrap().is_file())
        .map(|e| {
            (
                e.file_name().to_string_lossy().into_owned(),
                std::fs::read(e.path()).unwrap(),
            )
        })
        .collect();
    out.sort();
    out
}

fn truncate(path: &Path, len: u64) {
    std::fs::OpenOptions::new()
        .write(true)
        .open(path)
        .unwrap()
        .set_len(len)
        .unwrap();
}

#[test]
fn a_rerun_keeps_finished_volumes_and_writes_the_rest_byte_for_byte() {
    let fx = kit::fixture();
    let tmp = tempfile::tempdir().unwrap();
    let dir = tmp.path().join("out");
    std::fs::create_dir_all(&dir).unwrap();
    let set = create(&fx, &dir, "site", &["--parity", "1"]);
    assert!(set.data.len() >= 3, "{:?}", set.data);
    let whole = contents(&dir);

    // As a run killed while writing: volume 2 never renamed into place
    // (its partial file left), the last volume and the parity volume cut
    // short, the .sha256 not yet written.
    let last = set.data.last().unwrap().clone();
    std::fs::remove_file(&set.data[1]).unwrap();
    let partial = set.data[1].with_file_name(format!(
        ".{}.partial",
        set.data[1].file_name().unwrap().to_str().unwrap()
    ));
    std::fs::write(&partial, b"half of a volume").unwrap();
    truncate(&last, std::fs::metadata(&last).unwrap().len() / 2);
    truncate(&set.parity[0], 700);
    std::fs::remove_file(&set.sha_file).unwrap();
    let kept = std::fs::metadata(&set.data[0]).unwrap().modified().unwrap();

    let o = create_cmd(&fx, &dir, "site.tar", &kit_args(&["--parity", "1"]));
    assert!(o.status.success(), "rerun: {}", stderr(&o));
    assert_eq!(stdout(&o).trim(), set.sha256);
    let err = stderr(&o);
    assert!(err.contains("checking it against the plan"), "{err}");
    assert!(err.contains("cut short"), "{err}");
    assert_eq!(contents(&dir), whole, "the set after the rerun");
    assert!(!partial.exists());
    // A finished volume was read, not written again.
    assert_eq!(
        std::fs::metadata(&set.data[0]).unwrap().modified().unwrap(),
        kept
    );
    // A third run has nothing to write and changes nothing.
    let o = create_cmd(&fx, &dir, "site.tar", &kit_args(&["--parity", "1"]));
    assert!(o.status.success(), "{}", stderr(&o));
    assert!(!stderr(&o).contains("writing "), "{}", stderr(&o));
    assert_eq!(contents(&dir), whole);
}

fn kit_args<'a>(extra: &[&'a str]) -> Vec<&'a str> {
    let mut a = vec!["--volume-size", "600K", "--chunk-size", "256K"];
    a.extend_from_slice(extra);
    a
}

#[test]
fn a_volume_that_differs_from_the_plan_is_refused_and_left_alone() {
    let fx = kit::fixture();
    let tmp = tempfile::tempdir().unwrap();
    let dir = tmp.path().join("out");
    std::fs::create_dir_all(&dir).unwrap();
    let set = create(&fx, &dir, "site", &[]);
    kit::damage_first_piece(&set.data[0]);
    let damaged = std::fs::read(&set.data[0]).unwrap();
    std::fs::remove_file(&set.data[1]).unwrap();
    // A volume of a set with another count, left from another request.
    let stray: PathBuf = dir.join("site.v0009-of-0009.tar");
    std::fs::copy(&set.data[2], &stray).unwrap();
    // A `.sha256` that names another manifest.
    let foreign = format!("{}  manifest.json\n", "0".repeat(64));
    std::fs::write(&set.sha_file, &foreign).unwrap();

    let o = create_cmd(&fx, &dir, "site.tar", &kit_args(&[]));
    assert_eq!(o.status.code(), Some(2), "{}", stderr(&o));
    let err = stderr(&o);
    assert!(err.contains(s(&set.sha_file)), "{err}");
    assert!(err.contains("does not name this run's manifest"), "{err}");
    assert_eq!(std::fs::read_to_string(&set.sha_file).unwrap(), foreign);
    assert!(err.contains(s(&set.data[0])), "{err}");
    assert!(err.contains("hashes to"), "{err}");
    assert!(err.contains(s(&stray)), "{err}");
    assert!(err.contains("nothing was written"), "{err}");
    assert!(err.contains("Remove them"), "{err}");
    // Nothing overwritten, nothing written.
    assert_eq!(std::fs::read(&set.data[0]).unwrap(), damaged);
    assert!(!set.data[1].exists());

    // Removed as told, the set is made whole again.
    std::fs::remove_file(&set.data[0]).unwrap();
    std::fs::remove_file(&stray).unwrap();
    std::fs::remove_file(&set.sha_file).unwrap();
    let o = create_cmd(&fx, &dir, "site.tar", &kit_args(&[]));
    assert!(o.status.success(), "{}", stderr(&o));
    let o = bundle_kit::run(
        &[
            vec!["bundle", "verify", "--sha256", s(&set.sha_file)],
            set.data.iter().map(|p| s(p)).collect(),
        ]
        .concat(),
    );
    assert!(o.status.success(), "{}", stderr(&o));
}

#[test]
fn without_source_date_epoch_a_rerun_takes_the_earlier_creation_time() {
    let fx = kit::fixture();
    let tmp = tempfile::tempdir().unwrap();
    let dir = tmp.path().join("out");
    std::fs::create_dir_all(&dir).unwrap();
    let run = || {
        let mut c = bundle_kit::llmgw();
        c.args(["bundle", "create", "--arch", "amd64"])
            .args(["--out", s(&dir.join("site.tar"))])
            .args(["--cache", s(&tmp.path().join("cache"))])
            .args(["--github-api", &fx.github_api_url()])
            .args(["--hf-endpoint", &fx.hf_endpoint()])
            .args(["--model", "acme/big", "--model", "acme/tiny"])
            .args(["--engine", "llamacpp=b6123"])
            .args(kit_args(&[]))
            .env_remove("SOURCE_DATE_EPOCH")
            .env_remove("HF_TOKEN")
            .env_remove("HF_ENDPOINT");
        c.output().unwrap()
    };
    let o = run();
    assert!(o.status.success(), "{}", stderr(&o));
    let whole = contents(&dir);
    let first = whole
        .iter()
        .find(|(n, _)| n.starts_with("site.v0001"))
        .map(|(n, _)| dir.join(n))
        .unwrap();
    std::fs::remove_file(&first).unwrap();
    // A later second: a new run alone would record another time.
    std::thread::sleep(std::time::Duration::from_millis(1100));
    let o = run();
    assert!(o.status.success(), "{}", stderr(&o));
    assert_eq!(contents(&dir), whole);
}
