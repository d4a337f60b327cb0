//! Volume sets end to end (issue 13): `bundle create --volume-size` against
//! the fixture, carried through real FAT32 and ISO 9660 images, checked by
//! `bundle verify` and taken in by `bundle import` in any order over
//! several runs. Helpers in `tests/it/volumes/kit.rs`.

pub mod kit;

mod create;
mod import;
mod large;
mod parity;
mod recheck;
mod resume;
mod state;
