//! A blob over FAT32's 4 GiB limit, carried on `--volume-size fat32`
//! volumes: cut into chunks that span both volumes, no volume over
//! 4 GiB − 1, imported in reverse order over two runs, verified in the
//! store. The fixture serves it from a sparse file (zeros and a marker every
//! 64 MiB, so its chunks all differ); the bundle's own files are real.

use std::path::PathBuf;

use llmgw_fixture::{Fixture, FixtureOptions};

use super::kit::{self, assert_imported, import, json, nums};

/// 5 GiB and 3 MiB: over FAT32's limit, and not a whole number of chunks.
const BIG_MIB: u64 = 5 * 1024 + 3;
/// The largest file FAT32 holds.
const FAT_MAX_FILE: u64 = (4 << 30) - 1;
/// Room the test needs at most at once: the create's cache and the
/// volumes (the cache is removed before import), then the volumes and the
/// staging folder.
const NEEDS: u64 = 11 << 30;

#[test]
fn a_5_gib_blob_crosses_fat32_volumes_and_imports_in_reverse_order() {
    let tmp = tempfile::tempdir().unwrap();
    let dir = tmp.path();
    let free = llmgw_shared::free_space(dir).unwrap().bytes;
    assert!(
        free >= NEEDS,
        "this test writes a 5 GiB blob twice: it needs {} GiB free in {} (set TMPDIR \
         elsewhere or free room), and there are {:.1} GiB",
        NEEDS >> 30,
        dir.display(),
        free as f64 / f64::from(1u32 << 30)
    );
    let fx = Fixture::start_blocking(FixtureOptions {
        big_files: 1,
        big_mib: BIG_MIB,
        big_sparse: true,
        ..FixtureOptions::default()
    })
    .expect("start the fixture upstream");
    let set = kit::create_sized(&fx, dir, "site", "fat32", "1G", &[]);
    drop(fx);
    std::fs::remove_dir_all(dir.join("cache")).unwrap();

    assert_eq!(set.data.len(), 2, "{:?}", set.data);
    for v in &set.data {
        let len = std::fs::metadata(v).unwrap().len();
        assert!(len <= FAT_MAX_FILE, "{} is {len} bytes", v.display());
    }
    let vols = set.manifest.volumes.as_ref().unwrap();
    let big = vols
        .placements
        .iter()
        .find(|p| p.size == BIG_MIB << 20)
        .expect("the 5 GiB file is placed");
    assert_eq!(big.pieces.len(), 6, "{big:?}");
    let spread: std::collections::BTreeSet<u32> = big.pieces.iter().map(|x| x.volume).collect();
    assert_eq!(spread.into_iter().collect::<Vec<_>>(), vec![1, 2]);

    // Run 1: the second volume alone. Accepted so far; the rest is named.
    let store = dir.join("store");
    let o = import(&store, &set.sha256, &[&set.data[1]]);
    assert!(o.status.success(), "{}", crate::bundle_kit::stderr(&o));
    let j = json(&o);
    assert_eq!(j["state"], "incomplete", "{j}");
    assert_eq!(nums(&j["missing_volumes"]), vec![1], "{j}");
    let missing_in_1: u64 = big
        .pieces
        .iter()
        .filter(|x| x.volume == 1)
        .map(|x| x.size)
        .sum();
    assert!(j["bytes_needed"].as_u64().unwrap() >= missing_in_1, "{j}");
    assert!(
        j["incomplete_files"]
            .to_string()
            .contains(big.sha256.as_str()),
        "{j}"
    );

    // Run 2: the first volume; the blob is hashed whole and published.
    let first: &PathBuf = &set.data[0];
    let o = import(&store, &set.sha256, &[first]);
    assert_imported(&store, &set, &o);
}
