//! `bundle import VOLUME…`: any subset, any order, several runs; what each
//! run reports; refusals; parity rebuilds.

use std::path::PathBuf;

use crate::bundle_kit::{llmgw, snapshot, stderr, stdout};

use super::kit::{self, assert_imported, create, held, import, json, nums, s};

#[test]
fn any_order_over_three_runs_from_usb_and_disc() {
    let fx = kit::fixture();
    let tmp = tempfile::tempdir().unwrap();
    let dir = tmp.path();
    let set = create(&fx, dir, "site", &[]);
    let n = set.data.len();
    assert!(n >= 4, "{n}");
    // Volumes carried on a FAT32 USB disk and on a disc, read from there.
    let usb = kit::through_fat32(dir, &set.data, &dir.join("usb"));
    let disc = kit::through_iso(dir, &set.data, &dir.join("disc"));
    let store = dir.join("store");

    // Run 1: the last two, in reverse order, from the USB disk.
    let o = import(&store, &set.sha256, &[&usb[n - 1], &usb[n - 2]]);
    assert!(o.status.success(), "{}", stderr(&o));
    let j = json(&o);
    assert_eq!(j["state"], "incomplete", "{j}");
    assert_eq!(nums(&j["volumes_seen"]), vec![n as u64 - 1, n as u64]);
    let first: Vec<u64> = (1..=n as u64 - 2).collect();
    assert_eq!(nums(&j["missing_volumes"]), first);
    let needed1 = j["bytes_needed"].as_u64().unwrap();
    assert!(needed1 > 0 && !j["incomplete_files"].as_array().unwrap().is_empty());
    assert_eq!(held(&store), 0, "nothing visible before the last volume");

    // gc between two runs keeps what was taken in, and says so.
    let o = llmgw()
        .args(["mirror", "gc", "--store", s(&store)])
        .output()
        .unwrap();
    assert!(o.status.success(), "{}", stderr(&o));
    assert!(
        stdout(&o).contains("a volume import in progress"),
        "{}",
        stdout(&o)
    );

    // Run 2: volume 1 and 3 (a shuffled middle), from the disc.
    let o = import(&store, &set.sha256, &[&disc[2], &disc[0]]);
    let j = json(&o);
    assert_eq!(j["state"], "incomplete", "{j}");
    let mut seen = vec![1, 3, n as u64 - 1, n as u64];
    seen.sort();
    seen.dedup();
    assert_eq!(nums(&j["volumes_seen"]), seen);
    let missing: Vec<u64> = (1..=n as u64).filter(|v| !seen.contains(v)).collect();
    assert_eq!(nums(&j["missing_volumes"]), missing);
    assert!(j["bytes_needed"].as_u64().unwrap() < needed1);
    assert_eq!(held(&store), 0);

    // Run 3: the rest (and one seen before, which is named and skipped).
    let mut rest: Vec<&PathBuf> = missing.iter().map(|v| &set.data[*v as usize - 1]).collect();
    rest.push(&set.data[0]);
    let o = import(&store, &set.sha256, &rest);
    assert!(
        stderr(&o).contains("volume 1 was taken in already (seen twice)"),
        "{}",
        stderr(&o)
    );
    assert_imported(&store, &set, &o);
    assert_eq!(held(&store), 1);
}

#[test]
fn missing_damaged_foreign_and_repeated_volumes_are_named() {
    let fx = kit::fixture();
    let tmp = tempfile::tempdir().unwrap();
    let dir = tmp.path();
    let set = create(&fx, dir, "site", &[]);
    let other_dir = dir.join("other");
    std::fs::create_dir_all(&other_dir).unwrap();
    let other = kit::create_sized(&fx, &other_dir, "other", "700K", "256K", &[]);
    let store = dir.join("store");
    let n = set.data.len();

    // A damaged chunk in volume 2, another bundle's volume, volume 1 twice.
    let bad = dir.join("bad-v2.tar");
    std::fs::copy(&set.data[1], &bad).unwrap();
    kit::damage_first_piece(&bad);
    let o = import(
        &store,
        &set.sha256,
        &[&set.data[0], &bad, &other.data[0], &set.data[0]],
    );
    assert_eq!(o.status.code(), Some(1), "{}", stdout(&o));
    let j = json(&o);
    assert_eq!(j["state"], "incomplete");
    assert_eq!(nums(&j["volumes_seen"]), vec![1]);
    let reports: Vec<String> = j["volumes"]
        .as_array()
        .unwrap()
        .iter()
        .map(|v| v["report"].as_str().unwrap().to_string())
        .collect();
    assert!(
        reports[1].contains("DAMAGED") && reports[1].contains("hashes to sha256"),
        "{reports:?}"
    );
    assert!(reports[2].contains("volume of another bundle") && reports[2].contains(&other.sha256));
    assert!(reports[3].contains("seen twice"), "{reports:?}");
    assert!(stderr(&o).contains("refused or damaged"), "{}", stderr(&o));
    assert_eq!(held(&store), 0);

    // Text output: what is missing, by number and by file.
    let mut c = llmgw();
    c.args([
        "bundle",
        "import",
        "--store",
        s(&store),
        "--sha256",
        s(&set.sha_file),
    ]);
    c.arg(&set.data[n - 1]);
    let o = c.output().unwrap();
    assert!(o.status.success(), "{}", stderr(&o));
    let out = stdout(&o);
    let missing: Vec<String> = (2..n).map(|v| v.to_string()).collect();
    assert!(
        out.contains(&format!(
            "volumes seen: 2/{n}; missing volumes: {}",
            missing.join(", ")
        )),
        "{out}"
    );
    assert!(
        out.contains("files still incomplete:") && out.contains("bytes still needed:"),
        "{out}"
    );

    // The good volume 2 and the rest complete it; the store verifies.
    let rest: Vec<&PathBuf> = set.data[1..n - 1].iter().collect();
    let o = import(&store, &set.sha256, &rest);
    assert_imported(&store, &set, &o);
}

/// A blob whose chunks all come in one volume, in order, is hashed once as
/// it streams (its own digest vouches for its chunks); a damaged chunk in
/// its middle is still named by its entry and digest, and nothing of the
/// blob is kept from the damaged copy.
#[test]
fn a_damaged_chunk_in_the_middle_of_a_blob_in_one_volume_is_named() {
    let fx = kit::fixture();
    let tmp = tempfile::tempdir().unwrap();
    let dir = tmp.path();
    // 2 MiB volumes hold the 1 MiB model whole: four chunks, in order.
    let set = kit::create_sized(&fx, dir, "site", "2M", "256K", &[]);
    let vols = set.manifest.volumes.as_ref().unwrap();
    let big = vols
        .placements
        .iter()
        .find(|p| p.pieces.len() == 4)
        .expect("the 1 MiB model cut into four chunks");
    let v = big.pieces[0].volume;
    assert!(big.pieces.iter().all(|x| x.volume == v), "{big:?}");
    let entry = llmgw_shared::manifest::chunk_entry_name(&big.sha256, 2);
    let bad = dir.join("bad.tar");
    std::fs::copy(&set.data[v as usize - 1], &bad).unwrap();
    kit::damage_entry(&bad, &entry, 0);

    let store = dir.join("store");
    let mut given: Vec<&PathBuf> = set.data.iter().collect();
    given[v as usize - 1] = &bad;
    let o = import(&store, &set.sha256, &given);
    assert_eq!(o.status.code(), Some(1), "{}", stderr(&o));
    let j = json(&o);
    assert_eq!(j["state"], "incomplete", "{j}");
    assert_eq!(nums(&j["missing_volumes"]), vec![u64::from(v)], "{j}");
    let report = j["volumes"][v as usize - 1]["report"].as_str().unwrap();
    assert!(
        report.contains("DAMAGED")
            && report.contains(&format!("entry {entry} hashes to sha256"))
            && report.contains(&format!("expected {}", big.pieces[2].sha256)),
        "{report}"
    );
    let incomplete = j["incomplete_files"].to_string();
    assert!(incomplete.contains(big.sha256.as_str()), "{incomplete}");
    assert_eq!(held(&store), 0);

    // The good copy completes it, and the store verifies.
    let o = import(&store, &set.sha256, &[&set.data[v as usize - 1]]);
    assert_imported(&store, &set, &o);
}

#[test]
fn parity_rebuilds_k_lost_volumes_and_names_k_plus_one() {
    let fx = kit::fixture();
    let tmp = tempfile::tempdir().unwrap();
    let dir = tmp.path();
    let set = create(&fx, dir, "site", &["--parity", "2"]);
    assert_eq!(set.parity.len(), 2);
    let n = set.data.len();
    assert!(n >= 4);
    let p = set
        .manifest
        .volumes
        .as_ref()
        .unwrap()
        .parity
        .as_ref()
        .unwrap();
    assert_eq!(p.shards.len(), 2);

    // K+1 = 3 lost (one of them damaged): named, nothing imported.
    let store = dir.join("store");
    let bad = dir.join("bad-v1.tar");
    std::fs::copy(&set.data[0], &bad).unwrap();
    kit::damage_first_piece(&bad);
    let mut given: Vec<&PathBuf> = set.data[3..].iter().chain(&set.parity).collect();
    given.push(&bad);
    let before = snapshot(&store.join("bundles"));
    let o = import(&store, &set.sha256, &given);
    assert_eq!(o.status.code(), Some(1), "{}", stderr(&o));
    let j = json(&o);
    assert_eq!(j["state"], "incomplete");
    assert_eq!(nums(&j["missing_volumes"]), vec![1, 2, 3]);
    assert!(nums(&j["missing_parity_volumes"]).is_empty());
    assert_eq!(before, snapshot(&store.join("bundles")));
    let mut c = llmgw();
    c.args([
        "bundle",
        "import",
        "--store",
        s(&store),
        "--sha256",
        &set.sha256,
    ]);
    c.arg(&set.data[n - 1]);
    let out = stdout(&c.output().unwrap());
    assert!(
        out.contains("3 are missing: bring 1 more of volumes 1, 2, 3"),
        "{out}"
    );

    // One more volume: the other two are rebuilt from parity.
    let o = import(&store, &set.sha256, &[&set.data[1]]);
    assert!(stderr(&o).contains("rebuilt from parity"), "{}", stderr(&o));
    assert_imported(&store, &set, &o);
}

#[test]
fn signed_volumes_import_without_a_hash_and_a_cut_volume_is_named() {
    let fx = kit::fixture();
    let tmp = tempfile::tempdir().unwrap();
    let dir = tmp.path();
    let keys = dir.join("keys");
    std::fs::create_dir_all(&keys).unwrap();
    kit::tool(
        "minisign",
        &[
            "-G",
            "-W",
            "-p",
            s(&keys.join("site.pub")),
            "-s",
            s(&keys.join("site.key")),
        ],
    );
    let set = create(
        &fx,
        dir,
        "site",
        &["--sign-key", s(&keys.join("site.key")), "--sequence", "7"],
    );
    // Every volume carries the signature second, after the manifest.
    for v in &set.data {
        let list = kit::tool("tar", &["tf", s(v)]);
        assert_eq!(
            list.lines().take(2).collect::<Vec<_>>(),
            ["manifest.json", "manifest.json.minisig"]
        );
    }
    let store = dir.join("store");
    let o = llmgw()
        .args([
            "bundle",
            "trust",
            "add",
            "--role",
            "bundle",
            "--store",
            s(&store),
        ])
        .arg(keys.join("site.pub"))
        .output()
        .unwrap();
    assert!(o.status.success(), "{}", stderr(&o));

    // A volume cut short: what came before the cut is kept, the rest named.
    let n = set.data.len();
    let cut = dir.join("cut.tar");
    let bytes = std::fs::read(&set.data[0]).unwrap();
    std::fs::write(&cut, &bytes[..bytes.len() - 1024 - 2048]).unwrap();
    let unsigned = |files: &[&PathBuf]| {
        let mut c = llmgw();
        c.args(["bundle", "import", "--json", "--store", s(&store)]);
        c.args(files.iter().map(|p| s(p)));
        c.output().unwrap()
    };
    let o = unsigned(&[&cut, &set.data[1]]);
    assert_eq!(o.status.code(), Some(1), "{}", stderr(&o));
    let j = json(&o);
    assert_eq!(j["state"], "incomplete", "{j}");
    assert_eq!(nums(&j["volumes_seen"]), vec![2]);
    let report = j["volumes"][0]["report"].as_str().unwrap().to_string();
    assert!(
        report.contains("volume 1 of") && report.contains("DAMAGED"),
        "{report}"
    );

    // The rest, and the whole volume 1: published as signed, no hash given.
    let rest: Vec<&PathBuf> = set.data.iter().skip(2).chain([&set.data[0]]).collect();
    let o = unsigned(&rest);
    assert_imported(&store, &set, &o);
    let j = json(&o);
    assert_eq!(j["signed_by"]["sequence"], 7, "{j}");
    assert!(
        store
            .join(format!("bundles/{}.json.minisig", set.sha256))
            .exists()
    );
    assert!(n >= 3);
}

#[test]
fn a_delta_as_volumes_needs_its_prerequisites_before_anything_is_staged() {
    let fx = kit::fixture();
    let tmp = tempfile::tempdir().unwrap();
    let dir = tmp.path();
    // The site holds acme/tiny (imported as one .tar) and says so.
    let store = dir.join("store");
    let o = llmgw()
        .args([
            "bundle",
            "create",
            "--arch",
            "amd64",
            "--model",
            "acme/tiny",
        ])
        .args([
            "--out",
            s(&dir.join("tiny.tar")),
            "--cache",
            s(&dir.join("cache")),
        ])
        .args(["--hf-endpoint", &fx.hf_endpoint()])
        .output()
        .unwrap();
    assert!(o.status.success(), "{}", stderr(&o));
    let o = llmgw()
        .args([
            "bundle",
            "import",
            s(&dir.join("tiny.tar")),
            "--store",
            s(&store),
        ])
        .args(["--sha256", s(&dir.join("tiny.tar.sha256"))])
        .output()
        .unwrap();
    assert!(o.status.success(), "{}", stderr(&o));
    let have = dir.join("have.json");
    let o = llmgw()
        .args(["mirror", "have", "--store", s(&store), "--out", s(&have)])
        .output()
        .unwrap();
    assert!(o.status.success(), "{}", stderr(&o));
    let set = create(&fx, dir, "delta", &["--have", s(&have)]);
    let d = set.manifest.delta.as_ref().expect("a delta");
    assert!(!d.prerequisites.is_empty());

    // Another store lacks them: refused up front, nothing staged.
    let empty = dir.join("empty");
    let o = import(&empty, &set.sha256, &[&set.data[0]]);
    assert_eq!(o.status.code(), Some(1), "{}", stdout(&o));
    assert!(stderr(&o).contains("acme/tiny"), "{}", stderr(&o));
    assert!(
        std::fs::read_dir(empty.join("tmp"))
            .unwrap()
            .next()
            .is_none()
    );

    // The site's store takes the volumes.
    let all: Vec<&PathBuf> = set.data.iter().rev().collect();
    let o = import(&store, &set.sha256, &all);
    assert_imported(&store, &set, &o);
}
