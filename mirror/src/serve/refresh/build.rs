//! Building the server's next index, on the index thread: the held
//! bundles read in the order that decides what a name serves, the index
//! of them (lent what the current one has unchanged), then what is made
//! from it before it is served — the Hub's large answers, the OCI index,
//! the models' images, freshness.
//!
//! Invariant: a bundle that cannot be read is said (a reload error) and
//! left out whole, as if it were not held; nothing here answers a request.

use llmgw_shared::{BundleId, Chain};

use crate::serve::index::hub::heads::FileStamp;
use crate::serve::index::oci::models::Pending;
use crate::serve::index::xet::XetTable;
use crate::serve::index::{Index, Unreadable};
use crate::serve::state::{AppState, Watch, WatchedFile};
use crate::store::Held;
use crate::store::series::follow::Authority;
use crate::store::state::ImportOrder;

impl AppState {
    /// A new index of the bundles `ids` (whose files are as `files` says),
    /// in import order, and the tar layers it left out (their digests not
    /// known yet).
    pub(super) fn build(
        &self,
        ids: Vec<BundleId>,
        files: &[WatchedFile],
        watch: &mut Watch,
    ) -> (Index, Vec<Pending>) {
        let mut manifests = self.held_in_order(ids, files, watch);
        let old = self.index();
        let (mut index, authority) = self.index_of(&mut manifests, &old, watch);
        // The large answers of what changed, made before it is served.
        crate::serve::hub::ahead::make(&index, crate::serve::index::hub::ahead::AHEAD_FROM_FILES);
        let store = &self.store;
        let read = |sha: &llmgw_shared::Sha256, max: u64| match store.read_small_blob(sha, max) {
            Ok(b) => Some(b),
            Err(e) => {
                tracing::warn!(blob = %sha, error = %Chain(&e), "carried manifest unreadable");
                None
            }
        };
        index.oci = crate::serve::index::oci::OciIndex::build(
            &manifests,
            &authority,
            &read,
            &mut watch.parsed,
        );
        index.xet = std::sync::Arc::new(XetTable::build(store, &index, Some(&old.xet)));
        let pending = self.add_models(&mut index, &manifests, &read, &old, watch);
        let signers = crate::serve::index::latest::signers(&self.store, &manifests);
        index.latest = crate::serve::index::latest::latest(&manifests, &authority);
        if let Ok(mut f) = self.metrics.freshness.lock() {
            *f = crate::serve::ops::freshness::of(&self.store, &manifests, &signers);
        }
        index.signers = signers;
        drop(authority);
        watch.heads.keep(manifests);
        (index, pending)
    }

    /// The held bundles `ids` read (heads, from `watch`'s cache where
    /// their files are unchanged), in import order then by signed
    /// sequence; one that cannot be read is said and left out.
    fn held_in_order(
        &self,
        mut ids: Vec<BundleId>,
        files: &[WatchedFile],
        watch: &mut Watch,
    ) -> Vec<Held> {
        let order = ImportOrder::load(&self.store).unwrap_or_else(|e| {
            tracing::error!(error = %Chain(&e), "import order unreadable; ordering bundles by their manifests' file times");
            ImportOrder::default()
        });
        order.sort(&self.store, &mut ids);
        let stamps: std::collections::HashMap<&str, &FileStamp> =
            files.iter().map(|(id, f)| (id.as_str(), f)).collect();
        let listed: Vec<(BundleId, FileStamp)> = ids
            .into_iter()
            .map(|id| {
                let stamp = stamps.get(id.as_str()).and_then(|f| (*f).clone());
                (id, stamp)
            })
            .collect();
        let (mut manifests, unread) = watch.heads.read(&self.store, &listed);
        for (id, e) in unread {
            self.not_served(&id, &e);
        }
        crate::store::series::order_by_sequence(&self.store, &mut manifests);
        manifests
    }

    /// The index of `manifests` and the authority it followed. The index
    /// served now (`old`) lends the new one every Hub repository an import
    /// left unchanged (the same `Arc`), so only what changed is built and
    /// held twice while both exist; the manifests are heads but for new
    /// bundles, and those carrying a repository built again are read whole
    /// again. One that cannot be is left out of `manifests`, as it would
    /// have been had it been unreadable from the start.
    fn index_of(
        &self,
        manifests: &mut Vec<Held>,
        old: &Index,
        watch: &mut Watch,
    ) -> (Index, Authority) {
        let policy = crate::store::series::Policy::load(&self.store).unwrap_or_else(|e| {
            tracing::error!(error = %Chain(&e), "policy unreadable; following the first signed series");
            Default::default()
        });
        loop {
            let authority = Authority::of(&self.store, manifests, &policy);
            let heads = watch.heads.with(&self.store);
            match Index::build_from(manifests, &authority, Some(old), &heads) {
                Ok(index) => return (index, authority),
                Err(Unreadable { id, error }) => {
                    self.not_served(&id, &error);
                    watch.heads.forget(&id);
                    manifests.retain(|h| h.id != id);
                }
            }
        }
    }

    /// The models' OCI profiles added to `index` from the layer digests
    /// learned so far (those imports recorded first read in), and the tar
    /// layers whose digests are still to be hashed.
    fn add_models(
        &self,
        index: &mut Index,
        manifests: &[Held],
        read: crate::serve::index::oci::ReadBlob<'_>,
        old: &Index,
        watch: &mut Watch,
    ) -> Vec<Pending> {
        // Read under the lock, not copied: the layer thread waits one build.
        if let Ok(mut digests) = self.layer_digests.lock() {
            let held = manifests.iter().map(|h| &h.id);
            crate::serve::index::oci::models::learn_imported(
                &self.store,
                &mut digests,
                held,
                &mut watch.layers_read,
            );
        }
        let oci = &mut index.oci;
        match self.layer_digests.lock() {
            Ok(digests) => crate::serve::index::oci::models::add(
                oci,
                &index.repos,
                &digests,
                read,
                Some(&old.oci),
            ),
            Err(p) => crate::serve::index::oci::models::add(
                oci,
                &index.repos,
                &p.into_inner(),
                read,
                Some(&old.oci),
            ),
        }
    }

    /// Says that a held bundle cannot be read, so is not served.
    fn not_served(&self, id: &BundleId, e: &crate::store::StoreError) {
        self.metrics.reload_errors.inc();
        tracing::error!(bundle = %id, error = %Chain(e), "bundle not served");
    }
}
