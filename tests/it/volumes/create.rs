//! `bundle create --volume-size` and `bundle verify VOLUME…`.

use std::collections::BTreeSet;

use crate::bundle_kit::{run, stderr, stdout};

use super::kit::{self, create, create_cmd, s};

#[test]
fn volumes_are_self_contained_tars_that_survive_fat32_and_iso() {
    let fx = kit::fixture();
    let tmp = tempfile::tempdir().unwrap();
    let dir = tmp.path();
    let set = create(&fx, dir, "site", &[]);
    let count = set.data.len();
    assert!(count >= 3, "600 KiB volumes of ~2 MiB: {:?}", set.data);
    let v = set.manifest.volumes.as_ref().unwrap();
    assert_eq!(v.count as usize, count);
    assert!(set.parity.is_empty());
    for (i, p) in set.data.iter().enumerate() {
        let name = p.file_name().unwrap().to_str().unwrap();
        assert_eq!(name, format!("site.v{:04}-of-{count:04}.tar", i + 1));
        let len = std::fs::metadata(p).unwrap().len();
        assert!(len <= 600 * 1024, "{name} is {len} bytes");
        // A plain tar: manifest.json first, then blobs and chunks.
        let list = kit::tool("tar", &["tf", s(p)]);
        let mut lines = list.lines();
        assert_eq!(lines.next(), Some("manifest.json"), "{name}");
        for l in lines {
            assert!(
                l.starts_with("blobs/sha256/") || l.starts_with("chunks/"),
                "{l}"
            );
        }
    }
    // The 1 MiB model file is cut into 256 KiB chunks spread over volumes.
    let big = v
        .placements
        .iter()
        .find(|p| p.size == 1 << 20)
        .expect("the 1 MiB file is placed");
    assert_eq!(big.pieces.len(), 4);
    let spread: BTreeSet<u32> = big.pieces.iter().map(|p| p.volume).collect();
    assert!(spread.len() > 1, "{:?}", big.pieces);

    // Byte for byte reproducible.
    let again = dir.join("again");
    std::fs::create_dir_all(&again).unwrap();
    std::fs::rename(dir.join("cache"), again.join("cache")).unwrap();
    let set2 = create(&fx, &again, "site", &[]);
    assert_eq!(set2.sha256, set.sha256);
    for (a, b) in set.data.iter().zip(&set2.data) {
        assert_eq!(std::fs::read(a).unwrap(), std::fs::read(b).unwrap());
    }

    // Through a FAT32 USB image and an ISO 9660 disc, then verified.
    let usb = kit::through_fat32(dir, &set.data, &dir.join("from-usb"));
    let disc = kit::through_iso(dir, &set.data, &dir.join("from-disc"));
    for files in [usb, disc] {
        let mut args = vec!["bundle", "verify", "--sha256", s(&set.sha_file)];
        args.extend(files.iter().map(|p| s(p)));
        let o = run(&args);
        assert!(o.status.success(), "{}", stderr(&o));
        let out = stdout(&o);
        assert!(out.contains("these volumes hold the whole bundle"), "{out}");
        assert_eq!(out.matches(": ok (").count(), count, "{out}");
    }
}

#[test]
fn verify_names_damaged_foreign_and_repeated_volumes() {
    let fx = kit::fixture();
    let tmp = tempfile::tempdir().unwrap();
    let dir = tmp.path();
    let set = create(&fx, dir, "site", &[]);
    let other_dir = dir.join("other");
    std::fs::create_dir_all(&other_dir).unwrap();
    let other = kit::create_sized(&fx, &other_dir, "other", "600K", "128K", &[]);
    assert_ne!(other.sha256, set.sha256);

    // One volume alone verifies, and says the set is not whole.
    let o = run(&["bundle", "verify", "--sha256", &set.sha256, s(&set.data[1])]);
    assert!(o.status.success(), "{}", stderr(&o));
    assert!(stdout(&o).contains("volume 2 of"), "{}", stdout(&o));
    assert!(stdout(&o).contains("do not hold the whole bundle"));

    // A damaged chunk is named with its file, and the run fails.
    let bad = dir.join("bad.tar");
    std::fs::copy(&set.data[1], &bad).unwrap();
    kit::damage_first_piece(&bad);
    let o = run(&[
        "bundle",
        "verify",
        "--sha256",
        &set.sha256,
        s(&bad),
        s(&set.data[1]),
        s(&set.data[1]),
        s(&other.data[0]),
    ]);
    assert_eq!(o.status.code(), Some(1), "{}", stdout(&o));
    let out = stdout(&o);
    assert!(
        out.contains("bad.tar: volume 2 of") && out.contains("DAMAGED"),
        "{out}"
    );
    assert!(out.contains("hashes to sha256"), "{out}");
    assert!(out.contains("given twice"), "{out}");
    assert!(out.contains("volume of another bundle"), "{out}");
    assert!(out.contains(&other.sha256), "{out}");
    assert!(
        stderr(&o).contains("damaged or not of this bundle"),
        "{}",
        stderr(&o)
    );
}

#[test]
fn bad_volume_flags_are_usage_errors() {
    let fx = kit::fixture();
    let tmp = tempfile::tempdir().unwrap();
    let dir = tmp.path();
    for (args, expect) in [
        (vec!["--volume-size", "12Q"], "--volume-size \"12Q\""),
        (vec!["--chunk-size", "1M"], "need --volume-size"),
        (
            vec!["--volume-size", "fat32", "--chunk-size", "5G"],
            "FAT32",
        ),
        (vec!["--volume-size", "4K"], "choose a larger size"),
        (
            vec!["--volume-size", "600K", "--chunk-size", "1M"],
            "smaller --chunk-size",
        ),
    ] {
        let o = create_cmd(&fx, dir, "site.tar", &args);
        assert_eq!(o.status.code(), Some(2), "{args:?}: {}", stderr(&o));
        assert!(stderr(&o).contains(expect), "{args:?}: {}", stderr(&o));
    }
    // Volumes are tars; and existing volumes are never overwritten.
    let o = create_cmd(&fx, dir, "site.tar.zst", &["--volume-size", "1M"]);
    assert_eq!(o.status.code(), Some(2));
    assert!(stderr(&o).contains("NAME.tar"), "{}", stderr(&o));
    std::fs::write(dir.join("site.v0001-of-0009.tar"), b"old").unwrap();
    let o = create_cmd(&fx, dir, "site.tar", &["--volume-size", "1M"]);
    assert_eq!(o.status.code(), Some(2));
    assert!(stderr(&o).contains("exists already"), "{}", stderr(&o));
}
