//! Which release is `latest` for each repository, by the one rule of
//! [`Authority::moves`] (the one the highest sequence of a followed series
//! carries, never merely the highest tag), and who signed each held signed
//! bundle: what the index holds besides its tables, built with it.
//!
//! Invariant: computed only from the store's own record — the order the
//! index was built in (import order, signed series by sequence) and the
//! kept signature files — never from a date a bundle claims.

use std::collections::{BTreeMap, HashMap};

use llmgw_shared::repo_key;

use super::entries::natural_cmp;
use crate::store::series::follow::{Authority, Standing};
use crate::store::{Held, Store};

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
