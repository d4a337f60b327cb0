//! Which bundle may move a name: the one rule every route follows.
//!
//! A *name* is anything a client asks for that the store can point at
//! different content over time: a Hub branch or tag (and the default
//! revision), a GitHub release tag (which assets it lists) and
//! `releases/latest`, a PyPI environment by name, an OCI image tag. What a
//! digest or a commit names never moves, and every held bundle stays
//! servable by digest and commit.
//!
//! As TUF does for targets, the store *follows* chosen (bundle key id,
//! channel) pairs, kept in `STORE/state/policy.json` (`follow`): the first
//! signed series imported, and any the operator adds with `llmgw mirror
//! policy follow KEY CHANNEL`. Every held bundle has a [`Standing`]:
//!
//! - [`Standing::Followed`]: signed by a followed (key, channel), or an
//!   unsigned bundle imported with `--allow-unsigned-override` (recorded
//!   in `policy.json`, `unsigned_overrides`, and logged at import);
//! - [`Standing::OtherSeries`]: signed by a trusted key, in a series the
//!   store does not follow (another channel, another key);
//! - [`Standing::Unsigned`]: everything else.
//!
//! Invariant — the rule, [`Authority::moves`]: walking the held bundles in
//! index order (import order, a signed series reordered by sequence:
//! [`super::order_by_sequence`]), a bundle takes a name over from the bundle
//! that serves it now only when its standing is at least that bundle's. So
//! an unsigned bundle adds names nobody signed but never moves one a signed
//! series serves, another channel's bundle (an old one replayed under a new
//! channel, say) never moves what a followed series serves, and within one
//! standing the later bundle wins as before. Nothing here reads a date a
//! bundle claims.

use std::collections::HashMap;

use llmgw_shared::BundleId;
use llmgw_shared::manifest::Manifest;
use serde::{Deserialize, Serialize};

use super::{Policy, SignedBy};
use crate::store::{Held, Store};

/// A signed series the store follows.
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Followed {
    /// The bundle key's id, as `llmgw bundle trust list` prints it.
    pub key_id: String,
    /// The channel (`default` when a manifest names none).
    pub channel: String,
}

impl std::fmt::Display for Followed {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(
            f,
            "key {} channel {}",
            llmgw_shared::shown(&self.key_id),
            llmgw_shared::shown(&self.channel)
        )
    }
}

/// How much say a held bundle has over the names it carries; higher wins.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Default)]
pub enum Standing {
    /// No trusted bundle key signed it.
    #[default]
    Unsigned,
    /// Signed, in a series the store does not follow.
    OtherSeries,
    /// Signed in a followed series, or an unsigned override.
    Followed,
}

/// The standing of every held bundle, worked out once per index build.
#[derive(Debug, Clone, Default)]
pub struct Authority {
    standing: HashMap<String, Standing>,
}

impl Authority {
    /// The standing of each of `bundles` (held, readable, in index order),
    /// from their kept signatures and the store's policy. A policy that
    /// follows nothing yet follows the series of the first signed bundle.
    pub fn of(store: &Store, bundles: &[Held], policy: &Policy) -> Self {
        Self::decide(
            bundles,
            |id, m| {
                let serves = m.sequence.is_some() && !m.is_repair();
                serves
                    .then(|| super::held_signer(store, id))
                    .flatten()
                    .map(|key_id| Followed {
                        key_id,
                        channel: m.channel().to_string(),
                    })
            },
            policy,
        )
    }

    /// [`Authority::of`] with the signer of each bundle given: `signer`
    /// answers the (key, channel) a bundle is signed in, if any.
    pub fn decide(
        bundles: &[Held],
        signer: impl Fn(&BundleId, &Manifest) -> Option<Followed>,
        policy: &Policy,
    ) -> Self {
        let signed: Vec<(&str, Option<Followed>)> = bundles
            .iter()
            .map(|Held { id, manifest: m }| (id.as_str(), signer(id, m)))
            .collect();
        let mut follow = policy.follow.clone();
        if follow.is_empty()
            && let Some(first) = signed.iter().find_map(|(_, s)| s.clone())
        {
            follow.push(first);
        }
        let standing = signed
            .into_iter()
            .map(|(id, s)| {
                let standing = match s {
                    Some(pair) if follow.contains(&pair) => Standing::Followed,
                    Some(_) => Standing::OtherSeries,
                    None if policy.unsigned_overrides.iter().any(|o| o == id) => Standing::Followed,
                    None => Standing::Unsigned,
                };
                (id.to_string(), standing)
            })
            .collect();
        Self { standing }
    }

    /// A held bundle's standing (unknown bundles are unsigned).
    pub fn standing(&self, bundle: &str) -> Standing {
        self.standing.get(bundle).copied().unwrap_or_default()
    }

    /// THE rule: whether `challenger`, a bundle that comes after `holder`
    /// in index order, moves a name `holder` serves now (`None`: nobody
    /// serves it yet, so any bundle may add it). Every route's table —
    /// Hub refs, GitHub tags and `latest`, PyPI environments, OCI tags —
    /// is built by walking the bundles in index order and asking this
    /// before a name changes hands.
    pub fn moves(&self, holder: Option<&str>, challenger: &str) -> bool {
        holder.is_none_or(|h| self.standing(challenger) >= self.standing(h))
    }
}

/// The series a store without a `follow` record follows: that of its
/// first signed bundle in import order, if any.
/// Only signed bundles' manifests and signatures are read (which are
/// signed, one listing says): an import into a store of large unsigned
/// bundles reads none of them.
pub fn first_signed(store: &Store) -> Result<Option<Followed>, crate::store::StoreError> {
    let signed: std::collections::HashSet<BundleId> =
        store.signed_bundle_ids()?.into_iter().collect();
    for id in crate::store::state::ids_in_order(store)? {
        if !signed.contains(&id) {
            continue;
        }
        let Some(key_id) = super::held_signer(store, &id) else {
            continue;
        };
        let Ok(m) = store.read_bundle(&id) else {
            continue;
        };
        if m.sequence.is_none() || m.is_repair() {
            continue;
        }
        return Ok(Some(Followed {
            key_id,
            channel: m.channel().to_string(),
        }));
    }
    Ok(None)
}

/// What importing a bundle does to the policy's `follow` and
/// `unsigned_overrides`, and what the operator is told. Returns the policy
/// as it is to be when it changes (the commit writes it, before the
/// manifest appears), and notes for the report.
pub fn plan_import(
    store: &Store,
    policy: &Policy,
    signed_by: Option<&SignedBy>,
    manifest_sha256: &BundleId,
    allow_unsigned_override: bool,
) -> Result<(Option<Policy>, Vec<String>), crate::store::StoreError> {
    let mut next = policy.clone();
    let mut notes = Vec::new();
    if next.follow.is_empty()
        && let Some(first) = first_signed(store)?
    {
        next.follow.push(first);
    }
    match signed_by {
        Some(by) => {
            let pair = Followed {
                key_id: by.key_id.clone(),
                channel: by.channel.clone(),
            };
            if next.follow.is_empty() {
                next.follow.push(pair);
            } else if !next.follow.contains(&pair) {
                notes.push(not_followed_note(&pair, &next.follow));
            }
        }
        None if allow_unsigned_override => {
            tracing::warn!(
                bundle = %manifest_sha256,
                "unsigned bundle allowed to move names signed series serve (--allow-unsigned-override)"
            );
            if !next.unsigned_overrides.iter().any(|o| o == manifest_sha256) {
                next.unsigned_overrides.push(manifest_sha256.to_string());
            }
            notes.push(
                "--allow-unsigned-override: this unsigned bundle moves branches, tags, `latest` \
                 and environments that signed series serve, until a followed series moves them \
                 again (recorded in STORE/state/policy.json)"
                    .to_string(),
            );
        }
        None => {
            next.unsigned_overrides.retain(|o| o != manifest_sha256);
            if !next.follow.is_empty() {
                notes.push(format!(
                    "the bundle is not signed: it adds names no signed series serves, and moves \
                     none that one serves (this store follows {}); import it with \
                     --allow-unsigned-override to move them on purpose",
                    list(&next.follow)
                ));
            }
        }
    }
    Ok(((next != *policy).then_some(next), notes))
}

fn not_followed_note(pair: &Followed, follow: &[Followed]) -> String {
    format!(
        "the bundle is signed by {pair}, a series this store does not follow (it follows {}): \
         it is held and served by commit and digest, but moves no branch, tag, `latest` or \
         environment a followed series serves; `llmgw mirror policy follow {} {}` follows it",
        list(follow),
        llmgw_shared::shown(&pair.key_id),
        llmgw_shared::shown(&pair.channel),
    )
}

/// `key K channel C, key K2 channel C2`.
pub fn list(follow: &[Followed]) -> String {
    follow
        .iter()
        .map(ToString::to_string)
        .collect::<Vec<_>>()
        .join(", ")
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::test_ids::{id, name};

    fn pair(k: &str, c: &str) -> Followed {
        Followed {
            key_id: k.into(),
            channel: c.into(),
        }
    }

    #[test]
    fn the_first_series_is_followed_and_nothing_else_moves_its_names() {
        let m = Manifest::new(vec!["amd64".into()], 0);
        let bundles: Vec<Held> = ["u0", "s1", "o2", "u3", "s4"]
            .iter()
            .map(|n| crate::test_ids::held(n, m.clone()))
            .collect();
        let signer = |b: &BundleId, _: &Manifest| match name(b).as_bytes()[0] {
            b's' => Some(pair("K", "stable")),
            b'o' => Some(pair("K", "other")),
            _ => None,
        };
        let a = Authority::decide(&bundles, signer, &Policy::default());
        assert_eq!(a.standing(&id("u0")), Standing::Unsigned);
        assert_eq!(a.standing(&id("s1")), Standing::Followed);
        assert_eq!(a.standing(&id("o2")), Standing::OtherSeries);
        assert!(a.moves(None, &id("u3")));
        assert!(a.moves(Some(id("u0").as_str()), &id("u3")));
        assert!(a.moves(Some(id("u0").as_str()), &id("s1")));
        assert!(!a.moves(Some(id("s1").as_str()), &id("o2")));
        assert!(!a.moves(Some(id("s1").as_str()), &id("u3")));
        assert!(!a.moves(Some(id("o2").as_str()), &id("u3")));
        assert!(a.moves(Some(id("s1").as_str()), &id("s4")));
        // Following the other channel too; an override lifts u3.
        let policy = Policy {
            follow: vec![pair("K", "stable"), pair("K", "other")],
            unsigned_overrides: vec![id("u3").to_string()],
            ..Policy::default()
        };
        let a = Authority::decide(&bundles, signer, &policy);
        assert!(a.moves(Some(id("s1").as_str()), &id("o2")));
        assert!(a.moves(Some(id("o2").as_str()), &id("u3")));
        assert!(!a.moves(Some(id("s1").as_str()), &id("u0")));
    }
}
