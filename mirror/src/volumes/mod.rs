//! Volume sets (`bundle create --volume-size`): checking volumes on their
//! own, and importing them in any order over several runs.
//!
//! Invariant: a volume is only ever read against the manifest whose sha256
//! the operator gave (or a trusted key signed); its entries are looked up
//! in that manifest's placements ([`index`]), never made into paths.

pub mod import;
pub mod index;
pub mod read;
pub mod rebuild;
pub mod rehash;
pub mod stage;
pub mod state;
pub mod stream;
pub mod twin;
pub mod verify;
