//! llmgw's own releases come from their signed `SHA256SUMS` and from
//! nowhere else.
//!
//! Invariant, checked at import under the store lock before anything is
//! added: every release the new bundle carries of an *llmgw repository* is
//! one whose `SHA256SUMS.minisig` verified with a trusted release key
//! ([`crate::bundle::signed::SignedRelease`]), whatever engine label the
//! bundle gives it. Otherwise an unsigned bundle carrying a crafted
//! `owner/llmgw v1.4.0` as `llamacpp` would be served first and then hold
//! the genuine signed release out (the claims check would see two versions
//! of one file, and the first one in wins).
//!
//! An llmgw repository, compared case-insensitively ([`repo_key`]), is one
//! whose name (after the `/`) is `llmgw` — what `bundle create --llmgw-repo`
//! is set to, a fork or the upstream — or one that any held bundle, or the
//! new one, carries as engine `llmgw` or with a signed `SHA256SUMS` (only a
//! trusted release key, i.e. llmgw's, can have signed that).

use std::collections::{BTreeMap, BTreeSet};

use llmgw_shared::manifest::{LLMGW_ENGINE, Manifest};
use llmgw_shared::{repo_key, shown};
use thiserror::Error;

use crate::bundle::signed::SignedRelease;

/// A release of an llmgw repository that no trusted release key signed.
#[derive(Debug, Error)]
#[error(
    "release {release} (engine \"{engine}\") is a release of llmgw itself ({why}), and llmgw's \
     releases are taken only with their SHA256SUMS signed by a trusted release key; bundle \
     {bundle} carries it unsigned, so it was not imported. Make the bundle with `llmgw bundle \
     create --llmgw TAG`, which carries the signed SHA256SUMS, and trust llmgw's release key \
     with `llmgw bundle trust add KEY.pub`"
)]
pub struct UnsignedOwnRelease {
    release: String,
    engine: String,
    why: String,
    bundle: String,
}

/// Why a repository counts as llmgw's, by its [`repo_key`].
fn llmgw_repos<'a>(
    held: impl IntoIterator<Item = (&'a str, &'a Manifest)>,
) -> BTreeMap<String, String> {
    let mut out = BTreeMap::new();
    for (id, m) in held {
        for r in &m.releases {
            let why = if r.engine == LLMGW_ENGINE {
                format!("bundle {id} carries {} as engine llmgw", r.repo)
            } else if r.signature.is_some() {
                format!("bundle {id} carries {} with a signed SHA256SUMS", r.repo)
            } else {
                continue;
            };
            out.entry(repo_key(&r.repo)).or_insert(why);
        }
    }
    out
}

/// Refuses the bundle `new_id` when it carries a release of an llmgw
/// repository that is not among `new_signed` (its releases whose signature
/// verified with a trusted release key). `held` are the other bundles the
/// store holds.
pub fn check<'a>(
    held: impl IntoIterator<Item = (&'a str, &'a Manifest)>,
    new_id: &'a str,
    new: &'a Manifest,
    new_signed: &[SignedRelease],
) -> Result<(), Box<UnsignedOwnRelease>> {
    let known = llmgw_repos(held.into_iter().chain(std::iter::once((new_id, new))));
    let verified: BTreeSet<(String, &str)> = new_signed
        .iter()
        .map(|s| (repo_key(&s.repo), s.tag.as_str()))
        .collect();
    for r in &new.releases {
        let key = repo_key(&r.repo);
        let why = match key.split_once('/') {
            Some((_, name)) if name == LLMGW_ENGINE => {
                format!("its repository is named {LLMGW_ENGINE}")
            }
            _ => match known.get(&key) {
                Some(why) => why.clone(),
                None => continue,
            },
        };
        if !verified.contains(&(key, r.tag.as_str())) {
            return Err(Box::new(UnsignedOwnRelease {
                release: format!("{} {}", r.repo, shown(&r.tag)),
                engine: shown(&r.engine).to_string(),
                why,
                bundle: new_id.to_string(),
            }));
        }
    }
    Ok(())
}
