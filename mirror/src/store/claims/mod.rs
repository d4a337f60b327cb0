//! What a bundle may claim, given what the store already holds.
//!
//! A mirror serves one file per name, so every bundle it holds must agree
//! about every name. Invariant, checked at import under the store lock
//! before anything is added:
//!
//! 1. All held manifests and the new one give the same sha256 for each
//!    release asset `(repo, tag, name)` and each Hub file
//!    `(kind, repo, commit, path)`. Repository ids compare
//!    case-insensitively, as GitHub and the Hub compare them, so `ACME/X`
//!    cannot shadow `acme/x`.
//! 2. A release whose `SHA256SUMS` is signed (in any held bundle or the new
//!    one) consists of exactly what that file lists: every asset any
//!    bundle carries under that repo and tag — whatever engine it claims —
//!    is listed there with the same sha256. An unsigned bundle can add
//!    nothing to a signed release, and a signed release cannot arrive while
//!    an unsigned bundle holds other bytes under its name.
//! 3. A release of llmgw's own repository comes with its signed
//!    `SHA256SUMS` or not at all ([`crate::store::own_release`]), so an
//!    unsigned one can never be first in and hold the signed one out.
//!
//! A refusal names both sha256s and both bundles; replacing a held file on
//! purpose is `llmgw mirror remove` of the bundle that holds it, first.
//! A held manifest that cannot be read is skipped: it is not served either,
//! and importing it again (the repair) checks it against the rest. Only the
//! held manifests whose [`names`] meet the new bundle's are read: no other
//! can hold a claim about what the new bundle names.

pub mod names;

use std::collections::BTreeMap;

use llmgw_shared::manifest::Manifest;
use llmgw_shared::parse_sha256sums;
use llmgw_shared::shown;
use llmgw_shared::{BundleId, repo_key};
use thiserror::Error;

use crate::bundle::signed::{MAX_SIGNATURE_FILE_BYTES, SignedRelease};
use crate::store::{Held, Store, StoreError};

/// Why a bundle may not join the store.
#[derive(Debug, Error)]
pub enum ClaimError {
    #[error(transparent)]
    Store(#[from] StoreError),
    #[error(transparent)]
    Disagree(Box<Disagreement>),
    #[error(transparent)]
    HeldSums(Box<HeldSums>),
    #[error(transparent)]
    NotSigned(Box<NotSigned>),
    #[error(transparent)]
    UnsignedOwnRelease(#[from] Box<crate::store::own_release::UnsignedOwnRelease>),
}

/// A bundle names a file a held bundle names, with other bytes.
#[derive(Debug, Error)]
#[error(
    "{what}: bundle {new} says sha256 {new_sha256}, but bundle {held} (held) says sha256 \
     {held_sha256}; the mirror serves one file per name, so it refuses a second version \
     of it. If bundle {new} is meant to replace it, remove the held bundle first \
     (`llmgw mirror remove {held}`) and import again"
)]
pub struct Disagreement {
    what: String,
    new: BundleId,
    new_sha256: String,
    held: BundleId,
    held_sha256: String,
}

/// A held bundle's signed `SHA256SUMS` could not be used.
#[derive(Debug, Error)]
#[error(
    "held bundle {bundle} names a signed SHA256SUMS that cannot be read from the store \
     (run `llmgw mirror verify`, and import that bundle again to repair it)"
)]
pub struct HeldSums {
    bundle: BundleId,
    /// Said in the message; the store's or the parser's words follow in
    /// the chain.
    #[source]
    reason: HeldSumsFault,
}

/// Why a held release's `SHA256SUMS` could not be used.
#[derive(Debug, Error)]
pub enum HeldSumsFault {
    /// Its blob could not be read (missing, too large, unreadable).
    #[error("its blob cannot be read")]
    Read(#[source] Box<StoreError>),
    /// Its blob is not a checksum list.
    #[error("it is not a SHA256SUMS file")]
    Parse(#[source] llmgw_shared::SumsError),
}

/// A bundle carries, under a signed release, what its SHA256SUMS does not list.
#[derive(Debug, Error)]
#[error(
    "release {release} is signed (its SHA256SUMS, in bundle {signed_in}, verified with key \
     {key_id}) and lists {listed}, but bundle {carrier} carries {asset} with sha256 \
     {sha256}: a signed release consists of exactly what its SHA256SUMS lists. {advice}"
)]
pub struct NotSigned {
    release: String,
    signed_in: BundleId,
    key_id: String,
    listed: String,
    carrier: BundleId,
    asset: String,
    sha256: String,
    advice: String,
}

/// Who claims what, as the check goes.
#[derive(Default)]
struct Claims {
    /// `(repo key, tag, asset)` or `(kind, repo key, commit, path)` -> (sha256, bundle).
    files: BTreeMap<String, (String, BundleId)>,
}

impl Claims {
    /// Records that `bundle` says `key` is `sha256`; refuses a second
    /// opinion from the new bundle (held bundles that disagree among
    /// themselves came from an older llmgw: not this import's business).
    fn claim(
        &mut self,
        key: String,
        what: impl FnOnce() -> String,
        sha256: &str,
        bundle: &BundleId,
        new: &BundleId,
    ) -> Result<(), ClaimError> {
        // One bundle never names a file twice (Manifest::validate refuses
        // it, repository ids compared case-insensitively), so the first
        // claim of a key is a held bundle's whenever the new one disagrees.
        match self.files.get(&key) {
            Some((held_sha256, held)) if held_sha256 != sha256 && bundle == new => {
                Err(ClaimError::Disagree(Box::new(Disagreement {
                    what: what(),
                    new: new.clone(),
                    new_sha256: sha256.to_string(),
                    held: held.clone(),
                    held_sha256: held_sha256.clone(),
                })))
            }
            Some(_) => Ok(()),
            None => {
                self.files.insert(key, (sha256.to_string(), bundle.clone()));
                Ok(())
            }
        }
    }
}

/// The names of a held bundle that [`names::ALL_FILE`] did not record
/// (found in its own names file, or read in full): the import records them
/// once it has committed (never before: a refused import leaves the store
/// as it was).
#[derive(Debug)]
pub struct Unrecorded {
    pub id: BundleId,
    pub names: names::Names,
    /// Whether the bundle's own names file has them (else its manifest was
    /// read in full, and that file is written too).
    pub in_own_file: bool,
}

/// The held bundles (but `new_id`) that could hold a claim about what
/// `new_names` names, read; and the names of those [`names::ALL_FILE`]
/// lacks.
fn meeting(
    store: &Store,
    new_id: &BundleId,
    new_names: &names::Names,
) -> Result<(Vec<Held>, Vec<Unrecorded>), ClaimError> {
    let mut bundles: Vec<Held> = Vec::new();
    let mut unrecorded = Vec::new();
    let all = names::load_all(store);
    for id in store.bundle_ids()? {
        if id == *new_id {
            continue;
        }
        let (recorded, in_all) = match all.get(id.as_str()) {
            Some(n) => (Some(n.clone()), true),
            None => (names::load(store, &id), false),
        };
        if let Some(n) = recorded.as_ref().filter(|n| !n.meet(new_names)) {
            if !in_all {
                unrecorded.push(Unrecorded {
                    id: id.clone(),
                    names: n.clone(),
                    in_own_file: true,
                });
            }
            continue;
        }
        if let Ok(m) = store.read_bundle(&id) {
            if !in_all {
                unrecorded.push(Unrecorded {
                    id: id.clone(),
                    in_own_file: recorded.is_some(),
                    names: recorded.unwrap_or_else(|| names::Names::of(&m)),
                });
            }
            bundles.push(Held { id, manifest: m });
        }
    }
    Ok((bundles, unrecorded))
}

/// Checks the bundle `new_id` (its manifest, and what its verified
/// signatures proved) against every readable manifest the store holds
/// that could hold a claim about what it names.
pub fn check(
    store: &Store,
    new_id: &BundleId,
    new: &Manifest,
    new_signed: &[SignedRelease],
) -> Result<Vec<Unrecorded>, ClaimError> {
    let (bundles, unrecorded) = meeting(store, new_id, &names::Names::of(new))?;
    // The signed releases: each (repo key, tag) with its file list and the
    // bundle that proved it.
    let mut signed: BTreeMap<(String, String), (SignedRelease, BundleId)> = BTreeMap::new();
    for s in new_signed {
        signed
            .entry((repo_key(&s.repo), s.tag.clone()))
            .or_insert_with(|| (s.clone(), new_id.clone()));
    }
    for Held { id, manifest: m } in &bundles {
        for r in &m.releases {
            let key = (repo_key(&r.repo), r.tag.clone());
            if r.signature.is_some() && !signed.contains_key(&key) {
                signed.insert(key, (held_signed(store, id, r)?, id.clone()));
            }
        }
    }

    let mut claims = Claims::default();
    let order = bundles
        .iter()
        .map(|Held { id, manifest: m }| (id, m))
        .chain(std::iter::once((new_id, new)));
    for (id, m) in order {
        for r in &m.releases {
            let rk = repo_key(&r.repo);
            let sig = signed.get(&(rk.clone(), r.tag.clone()));
            for a in &r.assets {
                claims.claim(
                    format!("release\0{rk}\0{}\0{}", r.tag, a.name),
                    || format!("release asset {} {} {}", r.repo, r.tag, shown(&a.name)),
                    &a.sha256,
                    id,
                    new_id,
                )?;
                if let Some((s, signed_in)) = sig
                    && s.listed.get(&a.name) != Some(&a.sha256)
                    && (id == new_id || signed_in == new_id)
                {
                    return Err(not_signed(
                        s, signed_in, id, new_id, &r.repo, &a.name, &a.sha256,
                    ));
                }
            }
        }
        for r in &m.repos {
            let kind = r.kind.singular();
            for f in &r.files {
                claims.claim(
                    format!("{kind}\0{}\0{}\0{}", repo_key(&r.id), r.commit, f.path),
                    || {
                        format!(
                            "{kind} {} at commit {} file {}",
                            r.id,
                            r.commit,
                            shown(&f.path)
                        )
                    },
                    &f.sha256,
                    id,
                    new_id,
                )?;
            }
        }
    }
    // After the claims, whose refusals name both versions of a file.
    crate::store::own_release::check(
        bundles
            .iter()
            .map(|Held { id, manifest: m }| (id.as_str(), m)),
        new_id,
        new,
        new_signed,
    )?;
    Ok(unrecorded)
}

/// What a held signed release's `SHA256SUMS` lists: read from the store,
/// where import put it after verifying its signature.
fn held_signed(
    store: &Store,
    id: &BundleId,
    r: &llmgw_shared::manifest::Release,
) -> Result<SignedRelease, ClaimError> {
    let mut listed = BTreeMap::new();
    let mut key_id = String::new();
    if let Some(sig) = &r.signature {
        key_id = sig.key_id.clone();
        let held = |reason: HeldSumsFault| {
            ClaimError::HeldSums(Box::new(HeldSums {
                bundle: id.clone(),
                reason,
            }))
        };
        for a in &r.assets {
            if a.name != sig.sums && a.name != sig.minisig {
                continue;
            }
            listed.insert(a.name.clone(), a.sha256.clone());
            if a.name != sig.sums {
                continue;
            }
            let path = store.blob_file(&a.sha256);
            let bytes = store
                .read_small_blob(&a.sha256, MAX_SIGNATURE_FILE_BYTES)
                .map_err(|e| held(HeldSumsFault::Read(Box::new(e))))?;
            let text = String::from_utf8_lossy(&bytes);
            let lines = parse_sha256sums(&path.display().to_string(), &text)
                .map_err(|e| held(HeldSumsFault::Parse(e)))?;
            listed.extend(lines.into_iter().map(|l| (l.name, l.sha256)));
        }
    }
    Ok(SignedRelease {
        repo: r.repo.to_string(),
        tag: r.tag.clone(),
        key_id,
        listed,
    })
}

fn not_signed(
    s: &SignedRelease,
    signed_in: &BundleId,
    carrier: &BundleId,
    new_id: &BundleId,
    repo: &str,
    asset: &str,
    sha256: &str,
) -> ClaimError {
    let listed = match s.listed.get(asset) {
        Some(sha) => format!("{} with sha256 {sha}", shown(asset)),
        None => format!("no asset named {}", shown(asset)),
    };
    let advice = if carrier == new_id {
        "The bundle cannot add to or change the signed release; it was not imported".to_string()
    } else {
        format!(
            "Held bundle {carrier} is not signed for it: remove it first (`llmgw mirror remove \
             {carrier}`), then import again"
        )
    };
    ClaimError::NotSigned(Box::new(NotSigned {
        release: s.name(),
        signed_in: signed_in.clone(),
        key_id: s.key_id.clone(),
        listed,
        carrier: carrier.clone(),
        asset: format!("{repo} {} {}", s.tag, shown(asset)),
        sha256: sha256.to_string(),
        advice,
    }))
}

#[cfg(test)]
mod tests {
    use super::*;
    use llmgw_shared::manifest::HfRepo;

    /// A bundle carrying repository `repo` at commit `c…c`, held in
    /// `store` (made at a time of its own, so each is another bundle); its
    /// id and manifest.
    fn hold(store: &Store, repo: &str, c: char) -> (BundleId, Manifest) {
        let made = u64::try_from(store.bundle_ids().unwrap().len()).unwrap();
        let mut m = Manifest::new(vec!["amd64".into()], made);
        m.repos.push(HfRepo {
            kind: llmgw_shared::manifest::RepoKind::Model,
            id: repo.parse().unwrap(),
            revision: "main".into(),
            ref_kind: None,
            commit: c.to_string().repeat(40),
            patterns: vec![],
            files: vec![],
            kernel: None,
        });
        let bytes = m.to_canonical_json();
        let id = BundleId::of(&bytes);
        std::fs::write(store.bundle_file(&id), &bytes).unwrap();
        (id, m)
    }

    /// The names of a held bundle come from the one file of every bundle's
    /// names, else its own file, else its manifest read in full; those the
    /// one file lacks are given back to be recorded, and a manifest is
    /// read only where its names meet the new bundle's or are not known.
    #[test]
    fn names_come_from_the_one_file_then_the_bundles_own_then_its_manifest() {
        let dir = tempfile::tempdir().unwrap();
        let store = Store::at(dir.path());
        store.create_dirs().unwrap();
        let (in_all, m_all) = hold(&store, "acme/a", '1');
        let (in_own, m_own) = hold(&store, "acme/b", '1');
        let (unknown, _) = hold(&store, "acme/c", '1');
        let (meets, m_meets) = hold(&store, "acme/new", '1');
        names::record_all(
            &store,
            &[
                (in_all.clone(), names::Names::of(&m_all)),
                (meets.clone(), names::Names::of(&m_meets)),
            ],
        );
        names::record(&store, &in_own, names::Names::of(&m_own));
        let (new_id, new) = hold(&store, "acme/new", '1');
        let (read, unrecorded) = meeting(&store, &new_id, &names::Names::of(&new)).unwrap();

        let read: Vec<&BundleId> = read.iter().map(|h| &h.id).collect();
        let mut expected = vec![&meets, &unknown];
        expected.sort();
        let mut read = read;
        read.sort();
        assert_eq!(
            read, expected,
            "read in full: the one meeting it, the one not known"
        );
        let mut found: Vec<(&BundleId, bool)> =
            unrecorded.iter().map(|u| (&u.id, u.in_own_file)).collect();
        found.sort();
        let mut expected = vec![(&in_own, true), (&unknown, false)];
        expected.sort();
        assert_eq!(found, expected);

        // Once recorded, nothing is unrecorded and only what meets is read.
        let all: Vec<_> = unrecorded.into_iter().map(|u| (u.id, u.names)).collect();
        names::record_all(&store, &all);
        let (read, unrecorded) = meeting(&store, &new_id, &names::Names::of(&new)).unwrap();
        assert!(unrecorded.is_empty(), "{unrecorded:?}");
        assert_eq!(read.iter().map(|h| &h.id).collect::<Vec<_>>(), [&meets]);
    }
}
