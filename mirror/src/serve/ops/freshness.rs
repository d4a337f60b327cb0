//! How fresh what the mirror serves is, for `/metrics`: the age of the
//! newest bundle (by import) and the seconds until the nearest `expires`
//! of the bundles that are current, so that an alert fires when the
//! courier stops coming.
//!
//! Invariant: computed only from the store's own record — manifest file
//! times (written by import) and the order the index was built in (import
//! order, signed series by sequence) — never from a date a bundle claims,
//! except `expires`, which is what the gauge reports.

use std::collections::HashMap;

use llmgw_shared::manifest::Manifest;

use crate::serve::index::latest::Signers;
use crate::store::{Held, Store};

/// What `/metrics` reports about freshness (Unix seconds).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Freshness {
    /// When the newest bundle was imported (its manifest file was written).
    pub newest_import: Option<u64>,
    /// The nearest `expires` among the current bundles: the head of each
    /// signed (key, channel) and the newest unsigned bundle.
    pub nearest_expiry: Option<u64>,
}

/// Freshness of `bundles`, given in the order the index was built from.
pub fn of(store: &Store, bundles: &[Held], signers: &Signers) -> Freshness {
    let newest_import = bundles
        .iter()
        .filter_map(|Held { id, .. }| {
            std::fs::metadata(store.bundle_file(id))
                .and_then(|m| m.modified())
                .ok()
        })
        .filter_map(|t| t.duration_since(std::time::UNIX_EPOCH).ok())
        .map(|d| d.as_secs())
        .max();
    // The last of each series, and the last unsigned bundle, are current.
    let mut current: HashMap<Option<&(String, String)>, &Manifest> = HashMap::new();
    for Held { id, manifest: m } in bundles {
        current.insert(signers.get(id.as_str()), m);
    }
    let nearest_expiry = current
        .values()
        .filter_map(|m| m.expires.as_deref())
        .filter_map(llmgw_shared::parse_rfc3339_utc)
        .min();
    Freshness {
        newest_import,
        nearest_expiry,
    }
}
