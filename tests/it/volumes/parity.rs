//! Parity around damaged chunks: a data volume with one damaged chunk is
//! lost only in the stripes that chunk covers, so more damaged volumes than
//! parity volumes are rebuilt when no stripe has more lost than parity —
//! and a stripe that has is named, then rebuilt once one of its volumes
//! comes whole.

use std::path::{Path, PathBuf};

use llmgw_fixture::{Fixture, FixtureOptions};
use llmgw_shared::manifest::{PARITY_STRIPE, blob_entry_name, chunk_entry_name};

use crate::bundle_kit::{llmgw, stderr, stdout};

use super::kit::{self, Set, import, nums, s};

/// A piece of a data volume: its tar entry, and the stripes of the
/// volume's shard it covers.
#[derive(Debug, Clone)]
struct Placed {
    entry: String,
    first_stripe: u64,
    last_stripe: u64,
}

/// Per data volume (0-based), its pieces in tar order, as the manifest
/// places them.
fn layout(set: &Set) -> Vec<Vec<Placed>> {
    let v = set.manifest.volumes.as_ref().unwrap();
    let mut out: Vec<Vec<Placed>> = vec![Vec::new(); v.count as usize];
    let mut at = vec![0u64; v.count as usize];
    for pl in &v.placements {
        for (i, piece) in pl.pieces.iter().enumerate() {
            let k = piece.volume as usize - 1;
            let entry = if pl.pieces.len() == 1 {
                blob_entry_name(&pl.sha256)
            } else {
                chunk_entry_name(&pl.sha256, i)
            };
            out[k].push(Placed {
                entry,
                first_stripe: at[k] / PARITY_STRIPE,
                last_stripe: (at[k] + piece.size - 1) / PARITY_STRIPE,
            });
            at[k] += piece.size;
        }
    }
    out
}

/// A copy of `from` with one byte of entry `entry` flipped.
fn damaged_copy(from: &Path, entry: &str, to: PathBuf) -> PathBuf {
    std::fs::copy(from, &to).unwrap();
    kit::damage_entry(&to, entry, 7);
    to
}

#[test]
fn damaged_chunks_in_more_volumes_than_parity_are_rebuilt_stripe_by_stripe() {
    // 5 MiB of model in chunks of 512 KiB, volumes of about 1.5 MiB: every
    // volume's shard is two stripes of parity.
    let fx = Fixture::start_blocking(FixtureOptions {
        big_files: 1,
        big_mib: 5,
        ..FixtureOptions::default()
    })
    .expect("start the fixture upstream");
    let tmp = tempfile::tempdir().unwrap();
    let dir = tmp.path();
    let set = kit::create_sized(&fx, dir, "site", "1600K", "512K", &["--parity", "1"]);
    assert_eq!(set.parity.len(), 1);
    let lay = layout(&set);
    assert!(lay.len() >= 4, "{} data volumes", lay.len());
    // Volume B has a piece wholly in its second stripe; volumes A and C
    // (two others) each have their first piece in the first stripe.
    let b = lay
        .iter()
        .position(|ps| ps.iter().any(|p| p.first_stripe >= 1))
        .expect("a volume whose shard is more than one stripe");
    let in_second = lay[b].iter().find(|p| p.first_stripe >= 1).unwrap().clone();
    let others: Vec<usize> = (0..lay.len())
        .filter(|v| *v != b && lay[*v][0].last_stripe == 0)
        .take(2)
        .collect();
    let [a, c] = others[..] else {
        panic!("two volumes besides {b} whose first piece is in the first stripe: {lay:?}")
    };
    let bad_a = damaged_copy(&set.data[a], &lay[a][0].entry, dir.join("bad-a.tar"));
    let bad_b = damaged_copy(&set.data[b], &in_second.entry, dir.join("bad-b.tar"));
    let bad_c = damaged_copy(&set.data[c], &lay[c][0].entry, dir.join("bad-c.tar"));
    let with = |swap: &[(usize, &PathBuf)]| -> Vec<PathBuf> {
        let mut files: Vec<PathBuf> = set.data.clone();
        for (v, p) in swap {
            files[*v] = (*p).clone();
        }
        files.extend(set.parity.iter().cloned());
        files
    };
    let store = dir.join("store");

    // Three damaged volumes, one parity volume: the second stripe (only B
    // lost there) is rebuilt; the first has A and C lost, which is named.
    let files = with(&[(a, &bad_a), (b, &bad_b), (c, &bad_c)]);
    let o = import(&store, &set.sha256, &files.iter().collect::<Vec<_>>());
    assert_eq!(o.status.code(), Some(1), "{}\n{}", stdout(&o), stderr(&o));
    let j: serde_json::Value = serde_json::from_str(&stdout(&o)).unwrap();
    assert_eq!(j["state"], "incomplete", "{j}");
    let mut missing = vec![a as u64 + 1, c as u64 + 1];
    missing.sort();
    assert_eq!(nums(&j["missing_volumes"]), missing, "{j}");
    assert_eq!(nums(&j["rebuilt_from_parity"]), vec![b as u64 + 1], "{j}");

    // Volume C whole: only A is lost in the first stripe now, and parity
    // rebuilds it — two damaged volumes, one parity volume, imported.
    let o = import(&store, &set.sha256, &[&set.data[c]]);
    assert!(o.status.success(), "{}\n{}", stdout(&o), stderr(&o));
    assert!(
        stderr(&o).contains(&format!(
            "volume {}: rebuilt from parity, every piece hashed and matched",
            a + 1
        )),
        "{}",
        stderr(&o)
    );
    let j: serde_json::Value = serde_json::from_str(&stdout(&o)).unwrap();
    assert_eq!(j["status"], "imported", "{j}");
    let v = llmgw()
        .args(["mirror", "verify", "--store", s(&store)])
        .output()
        .unwrap();
    assert!(v.status.success(), "{}", stderr(&v));

    // The same two damaged volumes (A and B) in one run, into a fresh
    // store: rebuilt from the one parity volume, imported.
    let fresh = dir.join("fresh");
    let files = with(&[(a, &bad_a), (b, &bad_b)]);
    let o = import(&fresh, &set.sha256, &files.iter().collect::<Vec<_>>());
    assert_eq!(o.status.code(), Some(1), "{}\n{}", stdout(&o), stderr(&o));
    let j: serde_json::Value = serde_json::from_str(&stdout(&o)).unwrap();
    assert_eq!(j["status"], "imported", "{j}");
    for v in [a, b] {
        assert!(
            stderr(&o).contains(&format!("volume {}: rebuilt from parity", v + 1)),
            "{}",
            stderr(&o)
        );
    }
}
