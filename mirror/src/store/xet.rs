//! Where a blob's Xet record lives: `STORE/state/xet/<blob sha256>`, made by
//! import ([`crate::import`]) and read by the server to answer Xet
//! ([`crate::serve::xet`]).
//!
//! Invariant: a record is written whole through [`state::write_file`]
//! (the one writer of `STORE/state/`), named by the blob it was made from,
//! and removed with that blob ([`super::gc`]); a bucket store carries it
//! with its other state files. Every read is bounded by the largest record
//! a blob of its size can have, and checked whole
//! ([`XetRecord::decode`]) before it is used.

use std::io::Read;
use std::path::PathBuf;

use llmgw_shared::Sha256;
use llmgw_shared::xet::XetRecord;

use super::{Store, StoreError, state};

/// The folder of records, under `STORE/state/`.
const DIR: &str = "xet";

/// The folder of records.
pub fn dir(store: &Store) -> PathBuf {
    store.state_dir().join(DIR)
}

/// The record of blob `sha256`'s path (its name is a digest by type).
pub fn path(store: &Store, sha256: &Sha256) -> PathBuf {
    dir(store).join(sha256.as_str())
}

/// The record's name under `STORE/state/`.
pub fn state_name(sha256: &Sha256) -> String {
    format!("{DIR}/{sha256}")
}

/// Writes blob `sha256`'s record.
pub fn write(store: &Store, sha256: &Sha256, record: &XetRecord) -> Result<(), StoreError> {
    state::write_file(store, &state_name(sha256), &record.encode())
}

/// The size and file hash blob `sha256`'s record names, reading only its
/// head; `None` when it has none (or one this version cannot read).
pub fn peek(store: &Store, sha256: &Sha256) -> Option<(u64, llmgw_shared::XetHash)> {
    let mut head = [0u8; XetRecord::PEEK_LEN];
    let mut f = std::fs::File::open(path(store, sha256)).ok()?;
    f.read_exact(&mut head).ok()?;
    XetRecord::peek(&head)
}

/// Blob `sha256`'s record, read for a blob of `size` bytes and checked.
pub fn read(store: &Store, sha256: &Sha256, size: u64) -> Result<XetRecord, XetReadError> {
    read_at(path(store, sha256), size)
}

/// The record at `path` (in the store, or staged beside its blob), read
/// for a blob of `size` bytes with a bound and checked whole.
pub fn read_at(path: PathBuf, size: u64) -> Result<XetRecord, XetReadError> {
    let bytes =
        super::fsutil::read_bounded(&path, max_len(size)).map_err(|source| XetReadError::Read {
            path: path.clone(),
            source: Box::new(source),
        })?;
    XetRecord::decode(&bytes, size).map_err(|source| XetReadError::Damaged { path, source })
}

/// The most bytes a record of a `size`-byte file can take: four a chunk
/// of at least the chunker's smallest (the last may be shorter), 36 a
/// xorb of at least one chunk, and the head.
fn max_len(size: u64) -> u64 {
    let min_chunk = llmgw_shared::xet::min_chunk_len().max(1);
    (size / min_chunk + 2) * 40 + 64
}

/// Removes blob `sha256`'s record, if any (its blob was removed).
pub fn remove(store: &Store, sha256: &Sha256) {
    let _ = std::fs::remove_file(path(store, sha256));
}

/// A record that cannot be used.
#[derive(Debug, thiserror::Error)]
pub enum XetReadError {
    #[error("cannot read the Xet record {path}")]
    Read {
        path: PathBuf,
        #[source]
        source: Box<StoreError>,
    },
    #[error(
        "the Xet record {path} is damaged; remove it and import the bundle again to make a new one"
    )]
    Damaged {
        path: PathBuf,
        #[source]
        source: llmgw_shared::xet::RecordError,
    },
}
