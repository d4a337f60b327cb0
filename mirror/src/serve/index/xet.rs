//! Which held files the mirror serves over Xet: the LFS files of the Hub
//! repositories it holds whose blob has a Xet record
//! ([`crate::store::xet`]), by blob and by Xet file hash, and the records
//! read last.
//!
//! Invariant: a file hash maps only to a blob the index serves and whose
//! record names that hash and that blob's size; a record is used only once
//! read whole and checked ([`crate::store::xet::read`]). Built with each
//! index, lending the one before its entries, so only new blobs' records
//! are opened (and only their first bytes read). The LFS files without a
//! record (imported before records were made) are listed for the
//! background pass that makes them ([`crate::serve::refresh`]).

use std::collections::{HashMap, VecDeque};
use std::sync::{Arc, Mutex};

use llmgw_shared::xet::XetRecord;
use llmgw_shared::{Sha256, XetHash};

use super::{Blob, Index};
use crate::store::Store;
use crate::store::xet::{self, XetReadError};

/// How many records are kept in memory: the files being downloaded now
/// (a record is about 64 KiB per GiB of file).
const RECENT: usize = 8;

/// The files served over Xet.
#[derive(Debug, Default)]
pub struct XetTable {
    by_blob: HashMap<Sha256, XetHash>,
    by_hash: HashMap<XetHash, Blob>,
    recent: Mutex<VecDeque<(Sha256, Arc<XetRecord>)>>,
    /// The LFS files held without a record (served over plain HTTP only
    /// until one is made), each blob once.
    missing: Vec<Blob>,
}

impl XetTable {
    /// The table for `index`'s LFS Hub files, reusing `old`'s entries.
    pub fn build(store: &Store, index: &Index, old: Option<&XetTable>) -> Self {
        let mut t = XetTable::default();
        let mut without = std::collections::HashSet::new();
        for repo in index.repos.values() {
            for snap in repo.snapshots.values() {
                for f in snap.files().filter(|f| f.lfs) {
                    let blob = f.blob;
                    if t.by_blob.contains_key(&blob.sha256) || without.contains(&blob.sha256) {
                        continue;
                    }
                    let known = old.and_then(|o| o.by_blob.get(&blob.sha256)).cloned();
                    let hash = known.or_else(|| match xet::peek(store, &blob.sha256) {
                        Some((size, hash)) if size == blob.size => Some(hash),
                        _ => None,
                    });
                    match hash {
                        Some(hash) => {
                            t.by_blob.insert(blob.sha256.clone(), hash.clone());
                            t.by_hash.insert(hash, blob.clone());
                        }
                        None => {
                            without.insert(blob.sha256.clone());
                            t.missing.push(blob.clone());
                        }
                    }
                }
            }
        }
        t
    }

    /// The Xet hash of a held blob, if it is served over Xet.
    pub fn hash_of(&self, sha256: &Sha256) -> Option<&XetHash> {
        self.by_blob.get(sha256)
    }

    /// The blob of a Xet file hash, if held.
    pub fn blob_of(&self, hash: &XetHash) -> Option<&Blob> {
        self.by_hash.get(hash)
    }

    /// The LFS files held without a record.
    pub fn missing(&self) -> &[Blob] {
        &self.missing
    }

    /// How many files are served over Xet.
    pub fn len(&self) -> usize {
        self.by_blob.len()
    }

    /// Whether no file is.
    pub fn is_empty(&self) -> bool {
        self.by_blob.is_empty()
    }

    /// `blob`'s record, from memory or read and checked (on the caller's
    /// thread: call it off the async workers).
    pub fn record(&self, store: &Store, blob: &Blob) -> Result<Arc<XetRecord>, XetReadError> {
        if let Ok(recent) = self.recent.lock()
            && let Some((_, r)) = recent.iter().find(|(s, _)| s == &blob.sha256)
        {
            return Ok(r.clone());
        }
        let record = Arc::new(xet::read(store, &blob.sha256, blob.size)?);
        if let Ok(mut recent) = self.recent.lock() {
            recent.retain(|(s, _)| s != &blob.sha256);
            if recent.len() == RECENT {
                recent.pop_back();
            }
            recent.push_front((blob.sha256.clone(), record.clone()));
        }
        Ok(record)
    }
}
