//! `bundle create --volume-size` run again after a run that stopped half-way:
//! the volumes it finished are checked and kept, the missing and cut-short
//! ones written, and the set ends byte for byte what one uninterrupted run
//! makes; a volume that differs from the plan is refused by name.

use std::path::{Path, PathBuf};

use crate::bundle_kit::{self, stderr, stdout};

use super::kit::{self, Set, create, create_cmd, s};

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

/// Leaves `set` as a run killed while writing it would: volume 2 never
/// renamed into place (its partial file left, which is answered), the last
/// volume cut short, the `.sha256` not yet written.
fn stop_half_way(set: &Set) -> PathBuf {
    let last = set.data.last().unwrap().clone();
    std::fs::remove_file(&set.data[1]).unwrap();
    let partial = set.data[1].with_file_name(format!(
        ".{}.partial",
        set.data[1].file_name().unwrap().to_str().unwrap()
    ));
    std::fs::write(&partial, b"half of a volume").unwrap();
    truncate(&last, std::fs::metadata(&last).unwrap().len() / 2);
    std::fs::remove_file(&set.sha_file).unwrap();
    partial
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

    // As a run killed while writing, and the parity volume cut short too.
    let partial = stop_half_way(&set);
    truncate(&set.parity[0], 700);
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

/// A minisign key pair without a password in `dir`: (secret key, public
/// key, key id).
fn keypair(dir: &Path, name: &str) -> (PathBuf, PathBuf, String) {
    let key = dir.join(format!("{name}.key"));
    let public = dir.join(format!("{name}.pub"));
    kit::tool("minisign", &["-G", "-W", "-p", s(&public), "-s", s(&key)]);
    let text = std::fs::read_to_string(&public).unwrap();
    let id = llmgw_shared::signing::PublicKey::parse("key", &text)
        .unwrap()
        .key_id();
    (key, public, id)
}

/// The `manifest.json.minisig` a volume carries.
fn signature_of(volume: &Path) -> Vec<u8> {
    llmgw_mirror::read_head(volume)
        .unwrap()
        .signature
        .expect("a signed volume")
}

#[test]
fn a_signed_rerun_keeps_the_earlier_signature_and_imports_with_the_trusted_key() {
    let fx = kit::fixture();
    let tmp = tempfile::tempdir().unwrap();
    let dir = tmp.path().join("out");
    std::fs::create_dir_all(&dir).unwrap();
    let (key, public, _) = keypair(tmp.path(), "site");
    let signed = ["--sign-key", s(&key), "--sequence", "7"];
    let set = create(&fx, &dir, "site", &signed);
    assert!(set.data.len() >= 3, "{:?}", set.data);
    let whole = contents(&dir);
    let sig = signature_of(&set.data[0]);
    let partial = stop_half_way(&set);

    // The same command without --sequence takes the key's next number:
    // another manifest, refused with the number that carries the set on.
    let o = create_cmd(&fx, &dir, "site.tar", &kit_args(&["--sign-key", s(&key)]));
    assert_eq!(o.status.code(), Some(2), "{}", stderr(&o));
    let err = stderr(&o);
    assert!(err.contains(s(&set.data[0])), "{err}");
    assert!(err.contains("run again with --sequence 7"), "{err}");
    assert!(!set.data[1].exists());
    assert!(!set.sha_file.exists());

    // With it: the earlier signature verifies with this key and is kept
    // (minisign signatures are randomized, so a new one would differ from
    // the finished volumes' and they would be refused), the rest written.
    let o = create_cmd(&fx, &dir, "site.tar", &kit_args(&signed));
    assert!(o.status.success(), "rerun: {}", stderr(&o));
    assert_eq!(stdout(&o).trim(), set.sha256);
    assert!(stderr(&o).contains("checking it against the plan"));
    assert_eq!(contents(&dir), whole, "the set after the rerun");
    assert!(!partial.exists());
    for v in &set.data {
        assert_eq!(signature_of(v), sig, "{}", v.display());
    }

    // Imported with the key trusted, no hash given: published as signed.
    let store = tmp.path().join("store");
    let o = bundle_kit::llmgw()
        .args([
            "bundle",
            "trust",
            "add",
            "--role",
            "bundle",
            "--store",
            s(&store),
        ])
        .arg(&public)
        .output()
        .unwrap();
    assert!(o.status.success(), "{}", stderr(&o));
    let o = bundle_kit::llmgw()
        .args(["bundle", "import", "--json", "--store", s(&store)])
        .args(set.data.iter().map(|p| s(p)))
        .output()
        .unwrap();
    assert!(o.status.success(), "{}\n{}", stdout(&o), stderr(&o));
    let j: serde_json::Value = serde_json::from_str(&stdout(&o)).unwrap();
    assert_eq!(j["status"], "imported", "{j}");
    assert_eq!(j["manifest_sha256"], set.sha256.as_str());
    assert_eq!(j["signed_by"]["sequence"], 7, "{j}");
    let kept = store.join(format!("bundles/{}.json.minisig", set.sha256));
    assert_eq!(std::fs::read(kept).unwrap(), sig);
}

#[test]
fn a_rerun_with_another_key_or_none_is_refused_naming_the_key_and_writes_nothing() {
    let fx = kit::fixture();
    let tmp = tempfile::tempdir().unwrap();
    let dir = tmp.path().join("out");
    std::fs::create_dir_all(&dir).unwrap();
    let (key, _, id) = keypair(tmp.path(), "site");
    let (other, _, other_id) = keypair(tmp.path(), "other");
    assert_ne!(id, other_id);
    let set = create(
        &fx,
        &dir,
        "site",
        &["--sign-key", s(&key), "--sequence", "7"],
    );
    let whole = contents(&dir);
    stop_half_way(&set);
    let left = contents(&dir);

    // Another key signs the same manifest: the finished volumes carry a
    // signature it did not make, and one set never mixes two.
    let o = create_cmd(
        &fx,
        &dir,
        "site.tar",
        &kit_args(&["--sign-key", s(&other), "--sequence", "7"]),
    );
    assert_eq!(o.status.code(), Some(2), "{}", stderr(&o));
    let err = stderr(&o);
    assert!(err.contains(s(&set.data[0])), "{err}");
    assert!(
        err.contains(&format!(
            "signed by key {id}, which this run's --sign-key (key {other_id})"
        )),
        "{err}"
    );
    assert!(
        err.contains("run again with the key that signed it"),
        "{err}"
    );
    assert!(err.contains("nothing was written"), "{err}");
    assert_eq!(contents(&dir), left, "nothing written, nothing removed");

    // No key at all: refused the same way, naming the key it needs.
    let o = create_cmd(&fx, &dir, "site.tar", &kit_args(&["--sequence", "7"]));
    assert_eq!(o.status.code(), Some(2), "{}", stderr(&o));
    let err = stderr(&o);
    assert!(err.contains(s(&set.data[0])), "{err}");
    assert!(
        err.contains(&format!("signed by key {id}, and this run signs nothing")),
        "{err}"
    );
    assert_eq!(contents(&dir), left);

    // The key that signed it carries the set on.
    let o = create_cmd(
        &fx,
        &dir,
        "site.tar",
        &kit_args(&["--sign-key", s(&key), "--sequence", "7"]),
    );
    assert!(o.status.success(), "{}", stderr(&o));
    assert_eq!(contents(&dir), whole);
}
