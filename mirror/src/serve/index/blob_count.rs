//! How many distinct blobs an index's bundles name, and their bytes, the
//! figures `/v1/index` and the front page show.
//!
//! Invariant: the count is exact (the set compares whole digests) and
//! costs no copy of a digest: a pointer each while counting, hashed by its
//! first hex digits only.

use std::collections::{BTreeMap, HashSet};
use std::hash::BuildHasherDefault;

use super::Index;
use crate::store::Held;

/// How many distinct blobs the bundles name, and their bytes: the Hub
/// files from the repositories' pools (a head has no file lists, and the
/// pools hold every file the index serves), the rest from the manifests.
/// The set is of borrowed digests, a pointer each while counting, not a
/// copy of every digest held; it hashes a digest by its first hex digits
/// ([`ByPrefix`]): a store of a million files is counted in tens of
/// milliseconds, where hashing every digit through `str` took seconds.
pub(super) fn count_blobs(index: &Index, bundles: &[Held]) -> (usize, u64) {
    let rest: Vec<BTreeMap<llmgw_shared::Sha256, u64>> = bundles
        .iter()
        .map(|h| h.manifest.blobs_but_hub_files())
        .collect();
    let hub = index
        .repos
        .values()
        .flat_map(|r| r.blobs())
        .map(|b| (&b.sha256, b.size));
    let mut seen: HashSet<&[u8; 64], BuildHasherDefault<ByPrefix>> = HashSet::default();
    let (mut count, mut bytes) = (0, 0);
    for (sha, size) in rest.iter().flatten().map(|(s, n)| (s, *n)).chain(hub) {
        if seen.insert(sha.digits()) {
            count += 1;
            bytes += size;
        }
    }
    (count, bytes)
}

/// Hashes a sha256's hex digits by their first 16 (64 bits of a digest,
/// uniformly spread whatever the bytes hashed); the set still compares
/// whole digests, so the count is exact.
#[derive(Default)]
struct ByPrefix(u64);

impl std::hash::Hasher for ByPrefix {
    fn write(&mut self, bytes: &[u8]) {
        for chunk in bytes.chunks(8).take(2) {
            let mut word = [0u8; 8];
            word[..chunk.len()].copy_from_slice(chunk);
            self.0 = (self.0.rotate_left(23) ^ u64::from_le_bytes(word))
                .wrapping_mul(0x9E37_79B9_7F4A_7C15);
        }
    }

    fn finish(&self) -> u64 {
        self.0
    }
}
