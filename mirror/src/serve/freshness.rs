//! How fresh what the mirror serves is, for `/metrics`: the age of the
//! newest bundle (by import) and the seconds until the nearest `expires`
//! of the bundles that are current, so that an alert fires when the
//! courier stops coming. Also which release is `latest` for each
//! repository, by the one rule of [`Authority::moves`] (the one the
//! highest sequence of a followed series carries, never merely the highest
//! tag).
//!
//! Invariant: computed only from the store's own record — manifest file
//! times (written by import) and the order the index was built in (import
//! order, signed series by sequence) — never from a date a bundle claims,
//! except `expires`, which is what the gauge reports.

use std::collections::{BTreeMap, HashMap};

use llmgw_shared::manifest::Manifest;
use llmgw_shared::repo_key;

use super::index::entries::natural_cmp;
use crate::store::series::follow::{Authority, Standing};
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

/// The signer of each held signed bundle: id -> (key id, channel).
pub type Signers = BTreeMap<String, (String, String)>;

/// Who signed each bundle of `bundles` that has a sequence and a kept,
/// valid signature file.
pub fn signers(store: &Store, bundles: &[Held]) -> Signers {
    bundles
        .iter()
        .filter(|Held { manifest: m, .. }| m.sequence.is_some() && !m.is_repair())
        .filter_map(|Held { id, manifest: m }| {
            crate::store::series::held_signer(store, id)
                .map(|k| (id.to_string(), (k, m.channel().into())))
        })
        .collect()
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

/// For each repository: the tag `releases/latest` names, keyed by
/// [`repo_key`]. `latest` is a name like any other ([`Authority::moves`]):
/// walking the bundles in index order, a bundle that may move it makes it
/// the highest tag (natural order) among that repository's releases it
/// carries — so a signed series' newest bundle names it, never merely the
/// highest tag held. Among unsigned bundles alone it stays the highest tag
/// any of them carries, so an old unsigned bundle imported again cannot
/// move it back either.
pub fn latest(bundles: &[Held], authority: &Authority) -> HashMap<String, String> {
    // repo key -> (the bundle `latest` is served from, its tag).
    let mut out: HashMap<String, (&str, String)> = HashMap::new();
    for Held { id, manifest: m } in bundles {
        let mut best: HashMap<String, &str> = HashMap::new();
        for r in &m.releases {
            let e = best.entry(repo_key(&r.repo)).or_insert(&r.tag);
            if natural_cmp(&r.tag, e).is_gt() {
                *e = &r.tag;
            }
        }
        for (repo, tag) in best {
            let holder = out.get(&repo).map(|(h, _)| *h);
            if !authority.moves(holder, id) {
                continue;
            }
            let both_unsigned = holder.is_some_and(|h| {
                authority.standing(h) == Standing::Unsigned
                    && authority.standing(id) == Standing::Unsigned
            });
            let keep = both_unsigned
                && out
                    .get(&repo)
                    .is_some_and(|(_, held)| natural_cmp(held, tag).is_gt());
            if !keep {
                out.insert(repo, (id, tag.to_string()));
            }
        }
    }
    out.into_iter()
        .map(|(repo, (_, tag))| (repo, tag))
        .collect()
}
