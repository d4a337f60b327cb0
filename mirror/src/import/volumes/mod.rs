//! Volume sets (`bundle create --volume-size`): checking volumes on their
//! own, and importing them in any order over several runs.
//!
//! Invariant: a volume is only ever read against the manifest whose sha256
//! the operator gave (or a trusted key signed); its entries are looked up
//! in that manifest's placements ([`index`]), never made into paths.

pub mod error;
pub mod import;
pub mod index;
pub mod read;
pub mod rebuild;
pub mod recheck;
pub mod rehash;
pub mod stage;
pub mod state;
pub mod verify;

use std::collections::BTreeSet;

/// Data volumes (numbered from 1) of a set of `count` not among `whole`,
/// and parity volumes (from 0) of `parity_count` not among `whole_parity`:
/// what a run of import or verify still lacks.
pub(crate) fn lacking(
    count: u32,
    whole: &BTreeSet<u32>,
    parity_count: usize,
    whole_parity: &BTreeSet<usize>,
) -> (Vec<u32>, Vec<usize>) {
    (
        (1..=count).filter(|v| !whole.contains(v)).collect(),
        (0..parity_count)
            .filter(|j| !whole_parity.contains(j))
            .collect(),
    )
}

/// The bytes of the volume files given (those that can be read), for the
/// progress bar of a run over them.
pub(crate) fn total_len(paths: &[std::path::PathBuf]) -> u64 {
    paths
        .iter()
        .filter_map(|p| std::fs::metadata(p).ok())
        .map(|m| m.len())
        .sum()
}
