//! One repository of the mirror's OCI index as a [`PushRepo`]: its blobs
//! with where their bytes are (a stored file; a made document's bytes; a
//! tar layer as its headers, the stored file and zeros), its manifests
//! children first, and its tags.
//!
//! Invariant: a manifest comes after every manifest of the same repository
//! it lists (an index after its platforms and attestations), so a registry
//! that checks an index's children (distribution does) finds them; every
//! byte named is checked here against its digest or, for a file, its size,
//! so a plan never names a blob the store lacks.

use std::collections::{BTreeMap, BTreeSet, HashMap};

use llmgw_shared::push::{Part, PushBlob, PushManifest, PushRepo};
use llmgw_shared::{Sha256, shown};

use super::error::PushPlanError;
use crate::serve::index::Index;
use crate::serve::index::oci::made::{Made, Which};
use crate::serve::index::oci::models::{make, tar};
use crate::serve::index::oci::{MAX_MANIFEST_BYTES, OciRepo};
use crate::store::Store;

/// `repo` of `index` as it is pushed, under `name`; `what` names it in
/// messages.
pub fn of(
    store: &Store,
    index: &Index,
    repo: &OciRepo,
    name: &str,
    what: &str,
) -> Result<PushRepo, PushPlanError> {
    let made = made_docs(store, index, repo, what)?;
    let mut bytes: BTreeMap<Sha256, (String, Vec<u8>)> = BTreeMap::new();
    for (sha, entry) in &repo.manifests {
        let b = match made.get(sha) {
            Some(b) => b.clone(),
            None => read_held(store, sha, entry.blob.size, what)?,
        };
        bytes.insert(sha.clone(), (entry.media_type.to_string(), b));
    }
    let manifests = children_first(&bytes, what)?;
    let mut blobs = Vec::new();
    for (sha, size) in &repo.blobs {
        if repo.manifests.contains_key(sha) {
            continue;
        }
        let parts = match repo.made.get(sha) {
            Some(Made::Doc(_)) => match made.get(sha) {
                Some(b) => vec![Part::Bytes(b.clone())],
                None => return Err(unmade(what, sha, "not among its commit's documents")),
            },
            Some(Made::Tar(t)) => vec![
                Part::Bytes(tar::head(&t.path, t.file.size)),
                stored(store, &t.file.sha256, t.file.size, what)?,
                Part::Zeros(t.tail),
            ],
            None => vec![stored(store, sha, *size, what)?],
        };
        blobs.push(PushBlob {
            sha256: sha.clone(),
            size: *size,
            parts,
        });
    }
    Ok(PushRepo {
        name: name.to_string(),
        what: what.to_string(),
        blobs,
        manifests,
        tags: repo
            .tags
            .iter()
            .map(|(t, d)| (t.clone(), d.clone()))
            .collect(),
    })
}

/// A stored blob as a file part, when the store holds it whole.
fn stored(store: &Store, sha: &Sha256, size: u64, what: &str) -> Result<Part, PushPlanError> {
    if !store.has_blob(sha, size) {
        return Err(PushPlanError::Missing {
            what: shown(what).to_string(),
            sha256: sha.to_string(),
            size,
        });
    }
    Ok(Part::File {
        path: store.blob_file(sha),
        size,
    })
}

/// A carried manifest's bytes, checked against its digest.
fn read_held(store: &Store, sha: &Sha256, size: u64, what: &str) -> Result<Vec<u8>, PushPlanError> {
    let missing = || PushPlanError::Missing {
        what: shown(what).to_string(),
        sha256: sha.to_string(),
        size,
    };
    let b = store
        .read_small_blob(sha, MAX_MANIFEST_BYTES)
        .map_err(|_| missing())?;
    if Sha256::of(&b) != *sha {
        return Err(missing());
    }
    Ok(b)
}

/// Every made JSON document of `repo` (its commits' profiles made again),
/// by digest; only those whose digest the index names.
fn made_docs(
    store: &Store,
    index: &Index,
    repo: &OciRepo,
    what: &str,
) -> Result<HashMap<Sha256, Vec<u8>>, PushPlanError> {
    let mut out = HashMap::new();
    let Some(from) = repo.made_from.as_deref() else {
        return Ok(out);
    };
    let read = |sha: &Sha256, max: u64| store.read_small_blob(sha, max).ok();
    let mut done = BTreeSet::new();
    for (sha, m) in &repo.made {
        let Made::Doc(doc) = m else { continue };
        // One call makes every document of the commit's profile.
        let pack = matches!(doc.which, Which::PackConfig | Which::PackManifest);
        if out.contains_key(sha) || !done.insert((doc.commit.clone(), pack)) {
            continue;
        }
        let docs = make::make(index, from, doc, &read)
            .map_err(|e| unmade(what, sha, &llmgw_shared::Chain(&e).to_string()))?;
        for (_, bytes) in docs {
            let digest = Sha256::of(&bytes);
            if repo.made.contains_key(&digest) {
                out.insert(digest, bytes);
            }
        }
    }
    Ok(out)
}

fn unmade(what: &str, sha: &Sha256, why: &str) -> PushPlanError {
    PushPlanError::Unmade {
        what: shown(what).to_string(),
        sha256: sha.to_string(),
        why: why.to_string(),
    }
}

/// The manifests ordered so each comes after those of `all` it lists
/// (`manifests[].digest`): a depth-first walk, children first.
fn children_first(
    all: &BTreeMap<Sha256, (String, Vec<u8>)>,
    what: &str,
) -> Result<Vec<PushManifest>, PushPlanError> {
    #[derive(serde::Deserialize)]
    struct Listed {
        #[serde(default)]
        manifests: Vec<Child>,
    }
    #[derive(serde::Deserialize)]
    struct Child {
        digest: String,
    }
    let mut children: BTreeMap<&Sha256, Vec<Sha256>> = BTreeMap::new();
    for (sha, (_, bytes)) in all {
        let listed: Listed =
            serde_json::from_slice(bytes).map_err(|_| PushPlanError::BadManifest {
                what: shown(what).to_string(),
                sha256: sha.to_string(),
            })?;
        let kids = listed
            .manifests
            .iter()
            .filter_map(|c| c.digest.strip_prefix("sha256:"))
            .filter_map(|h| Sha256::parse("digest", h).ok())
            .filter(|d| all.contains_key(d) && d != sha)
            .collect();
        children.insert(sha, kids);
    }
    let mut order = Vec::new();
    let mut seen = BTreeSet::new();
    for sha in all.keys() {
        visit(sha, &children, &mut seen, &mut order);
    }
    Ok(order
        .into_iter()
        .map(|sha| {
            let (media_type, bytes) = all[&sha].clone();
            PushManifest {
                sha256: sha,
                media_type,
                bytes,
            }
        })
        .collect())
}

/// Post-order from `sha`; `seen` before the children, so a cycle (which no
/// digest can make) ends.
fn visit(
    sha: &Sha256,
    children: &BTreeMap<&Sha256, Vec<Sha256>>,
    seen: &mut BTreeSet<Sha256>,
    order: &mut Vec<Sha256>,
) {
    if !seen.insert(sha.clone()) {
        return;
    }
    for c in children.get(sha).into_iter().flatten() {
        visit(c, children, seen, order);
    }
    order.push(sha.clone());
}

#[cfg(test)]
mod tests {
    use super::*;

    fn doc(children: &[&Sha256]) -> Vec<u8> {
        let m: Vec<_> = children
            .iter()
            .map(|d| serde_json::json!({"digest": format!("sha256:{d}")}))
            .collect();
        serde_json::to_vec(&serde_json::json!({"manifests": m})).unwrap()
    }

    #[test]
    fn an_index_comes_after_its_children_whatever_their_digests() {
        let a = Sha256::of(b"a");
        let b = Sha256::of(b"b");
        let leaf_a = (String::new(), br#"{"layers":[]}"#.to_vec());
        let leaf_b = (String::new(), br#"{"layers":[],"x":1}"#.to_vec());
        let top_bytes = doc(&[&a, &b]);
        let top = Sha256::of(&top_bytes);
        let mut all = BTreeMap::new();
        all.insert(a.clone(), leaf_a);
        all.insert(b.clone(), leaf_b);
        all.insert(top.clone(), (String::new(), top_bytes));
        let order: Vec<_> = children_first(&all, "t")
            .unwrap()
            .into_iter()
            .map(|m| m.sha256)
            .collect();
        assert_eq!(order.len(), 3);
        assert_eq!(order.last(), Some(&top), "{order:?}");
        let bad: BTreeMap<_, _> = [(a, (String::new(), b"not json".to_vec()))].into();
        assert!(matches!(
            children_first(&bad, "t"),
            Err(PushPlanError::BadManifest { .. })
        ));
    }
}
