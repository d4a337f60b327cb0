//! What the store serves as a registry, built here as `mirror serve`'s index
//! thread builds it: the held bundles in index order (import order, then a
//! signed series by sequence), the store's authority over names, the OCI
//! index of carried images and charts, and the models' two profiles.
//!
//! Invariant: push sends exactly what the mirror would serve — the same
//! tags (moved only where [`Authority::moves`] lets them), the same
//! manifests, the same made documents and tar layers — because it is the
//! same index, built by the same functions; a model's tar layer whose
//! digest is not known yet is hashed here first (and kept in the store's
//! state, as the server keeps it), so no profile is left out for want of
//! it.

use std::collections::{BTreeMap, BTreeSet, HashSet};

use llmgw_shared::manifest::registry_key;
use llmgw_shared::{Chain, Sha256, shown};

use super::error::PushPlanError;
use crate::serve::index::Index;
use crate::serve::index::oci::models::{self, LayerDigests};
use crate::serve::index::oci::{OciIndex, ParsedManifests};
use crate::store::series::follow::Authority;
use crate::store::series::{Policy, order_by_sequence};
use crate::store::{Held, Store};

/// The store's index, and each held chart's name with the (registry,
/// repository) of its artifact.
pub struct Served {
    pub index: Index,
    pub charts: BTreeMap<String, BTreeSet<(Option<String>, String)>>,
}

/// The index of what the store holds, with its OCI part and, when
/// `with_models`, the models' profiles.
pub fn index(store: &Store, with_models: bool) -> Result<Served, PushPlanError> {
    let mut held = Vec::new();
    for id in crate::store::state::ids_in_order(store)? {
        let manifest = store.read_bundle(&id)?;
        held.push(Held { id, manifest });
    }
    order_by_sequence(store, &mut held);
    let mut charts: BTreeMap<String, BTreeSet<_>> = BTreeMap::new();
    for c in held.iter().flat_map(|h| &h.manifest.charts) {
        let registry = c.artifact.registry.as_deref().and_then(registry_key);
        charts
            .entry(c.name.clone())
            .or_default()
            .insert((registry, c.artifact.repository.clone()));
    }
    let policy = Policy::load(store)?;
    let authority = Authority::of(store, &held, &policy);
    let mut index = Index::build(&held, &authority);
    let read = |sha: &Sha256, max: u64| match store.read_small_blob(sha, max) {
        Ok(b) => Some(b),
        Err(e) => {
            tracing::warn!(blob = %sha, error = %Chain(&e), "carried manifest unreadable");
            None
        }
    };
    index.oci = OciIndex::build(&held, &authority, &read, &mut ParsedManifests::default());
    if with_models {
        let mut digests = LayerDigests::load(store);
        models::learn_imported(
            store,
            &mut digests,
            held.iter().map(|h| &h.id),
            &mut HashSet::new(),
        );
        let base = index.oci.clone();
        let mut oci = base.clone();
        let pending = models::add(&mut oci, &index.repos, &digests, &read, None);
        if !pending.is_empty() {
            for p in &pending {
                if digests.get(&p.file.sha256, &p.path).is_some() {
                    continue;
                }
                let (digest, _) =
                    models::hash_layer(store, &p.file, &p.path).map_err(|source| {
                        PushPlanError::Layer {
                            path: shown(&p.path).to_string(),
                            source: Box::new(source),
                        }
                    })?;
                digests.insert(p.file.sha256.clone(), p.path.clone(), digest);
            }
            if let Err(e) = digests.save(store) {
                tracing::warn!(error = %Chain(&e), "model layer digests not kept; the server will hash them again");
            }
            oci = base;
            models::add(&mut oci, &index.repos, &digests, &read, None);
        }
        index.oci = oci;
    }
    Ok(Served { index, charts })
}
