//! The held manifests as the index thread keeps them between builds: each
//! read whole once, then kept without its Hub repositories' file lists (its
//! *head*), so a rebuild after an import reads whole only the new bundles
//! and the bundles carrying a repository the import changed (issue 35: no
//! doubling during a rebuild).
//!
//! Why this is safe: a bundle's id is its manifest's sha256, and every read
//! checks the bytes against it ([`Store::read_bundle`]), so the head kept
//! is of the very bytes a read would give. A manifest whose file changed
//! (a repair imported again, or a file damaged on disk) is read again: a
//! head is kept with the identity (inode, size, mtime) of the file it was
//! read from. The file lists a head leaves out are in the index already,
//! in the pool of every repository part ([`crate::serve::index::HubRepo`]), and a part
//! is built again only from manifests read whole.
//!
//! What a head costs: a manifest without its Hub file lists is a few
//! hundred bytes for a model bundle (a few kilobytes with a Python
//! environment), where the whole of a 100 000-file dataset's is 47 MB of
//! JSON, parsed into about 30 MB.

use std::collections::HashMap;

use llmgw_shared::BundleId;
use llmgw_shared::manifest::Manifest;

use crate::serve::index::Whole;
use crate::store::{Held, Store, StoreError};

/// Enough of a file's metadata to tell that it was replaced or changed.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct FileId {
    ino: u64,
    len: u64,
    mtime: Option<std::time::SystemTime>,
}

/// What a manifest's file is now ([`FileId`]; `None` for a file that
/// cannot be looked at).
pub type FileStamp = Option<FileId>;

/// The identity of the file at `path`.
pub fn file_id(path: &std::path::Path) -> FileStamp {
    use std::os::unix::fs::MetadataExt;
    let m = std::fs::metadata(path).ok()?;
    Some(FileId {
        ino: m.ino(),
        len: m.len(),
        mtime: m.modified().ok(),
    })
}

/// What a build asks of the held bundles beyond what it is given.
pub trait Heads {
    /// The bytes of the bundle's distinct blobs, its Hub files counted.
    fn bytes(&self, held: &Held) -> u64;

    /// The bundle's manifest whole, read again, when `held` is a head
    /// (`None`: `held` is whole already).
    fn whole(&self, id: &BundleId) -> Option<Result<Manifest, StoreError>>;
}

/// Manifests given whole, as [`crate::serve::index::Index::build`] takes them.
impl Heads for Whole {
    fn bytes(&self, held: &Held) -> u64 {
        held.manifest.total_bytes()
    }

    fn whole(&self, _: &BundleId) -> Option<Result<Manifest, StoreError>> {
        None
    }
}

/// One held bundle known to the index thread.
struct Entry {
    /// The file the manifest was read from.
    file: FileStamp,
    /// [`Heads::bytes`], counted when it was read whole.
    bytes: u64,
    /// The manifest without its Hub file lists, once a build has used it.
    head: Option<Manifest>,
}

/// The heads of the bundles the last build was made from.
#[derive(Default)]
pub struct HeadCache {
    entries: HashMap<BundleId, Entry>,
}

impl HeadCache {
    /// The manifests of `ids` (each with its file's identity), in that
    /// order: a head where one is kept for the same file, else the manifest
    /// read whole. A bundle that cannot be read is left out, with why.
    pub fn read(
        &mut self,
        store: &Store,
        ids: &[(BundleId, FileStamp)],
    ) -> (Vec<Held>, Vec<(BundleId, StoreError)>) {
        let (mut held, mut failed) = (Vec::with_capacity(ids.len()), Vec::new());
        for (id, file) in ids {
            if let Some(e) = self.entries.get(id).filter(|e| e.file == *file)
                && let Some(head) = &e.head
            {
                held.push(Held {
                    id: id.clone(),
                    manifest: head.clone(),
                });
                continue;
            }
            match store.read_bundle(id) {
                Ok(manifest) => {
                    let bytes = manifest.total_bytes();
                    let entry = Entry {
                        file: file.clone(),
                        bytes,
                        head: None,
                    };
                    self.entries.insert(id.clone(), entry);
                    held.push(Held {
                        id: id.clone(),
                        manifest,
                    });
                }
                Err(e) => {
                    self.entries.remove(id);
                    failed.push((id.clone(), e));
                }
            }
        }
        (held, failed)
    }

    /// Keeps the heads of the manifests a build was made from, and forgets
    /// every bundle not among them.
    pub fn keep(&mut self, held: Vec<Held>) {
        let mut kept = HashMap::with_capacity(held.len());
        for Held { id, mut manifest } in held {
            let Some(mut entry) = self.entries.remove(&id) else {
                continue;
            };
            for r in &mut manifest.repos {
                r.files = Vec::new();
            }
            entry.head = Some(manifest);
            kept.insert(id, entry);
        }
        self.entries = kept;
    }

    /// Forgets one bundle: the next build reads it whole.
    pub fn forget(&mut self, id: &BundleId) {
        self.entries.remove(id);
    }

    /// What a build reads through: these heads, and `store` for a
    /// manifest wanted whole again.
    pub fn with<'a>(&'a self, store: &'a Store) -> InStore<'a> {
        InStore { cache: self, store }
    }
}

/// A [`HeadCache`] and the store its bundles are read again from.
pub struct InStore<'a> {
    cache: &'a HeadCache,
    store: &'a Store,
}

impl Heads for InStore<'_> {
    fn bytes(&self, held: &Held) -> u64 {
        match self.cache.entries.get(&held.id) {
            Some(e) => e.bytes,
            None => held.manifest.total_bytes(),
        }
    }

    fn whole(&self, id: &BundleId) -> Option<Result<Manifest, StoreError>> {
        self.cache.entries.get(id)?.head.as_ref()?;
        Some(self.store.read_bundle(id))
    }
}

#[cfg(test)]
mod tests {
    use std::cell::RefCell;

    use llmgw_shared::manifest::{DigestSource, HfFile, HfRepo, PublisherDigest, RepoKind};

    use super::*;
    use crate::serve::index::Index;
    use crate::store::series::follow::Authority;

    /// A bundle carrying `repo` at `commit` with one file per name (its
    /// bytes the name), written into `store`; its id.
    fn hold(store: &Store, repo: &str, commit: char, names: &[&str]) -> BundleId {
        let mut m = Manifest::new(vec!["amd64".into()], 1_780_000_000);
        let files = names
            .iter()
            .map(|n| {
                let sha = llmgw_shared::sha256_hex(n.as_bytes());
                HfFile {
                    path: format!("{n}.bin"),
                    size: n.len() as u64,
                    sha256: sha.parse().unwrap(),
                    git_oid: "b".repeat(40).parse().unwrap(),
                    lfs: true,
                    publisher_digests: vec![PublisherDigest {
                        source: DigestSource::HfLfsSha256,
                        value: sha,
                    }],
                    xet_hash: None,
                }
            })
            .collect();
        m.repos.push(HfRepo {
            kind: RepoKind::Model,
            id: repo.parse().unwrap(),
            revision: "main".into(),
            ref_kind: None,
            commit: commit.to_string().repeat(40),
            patterns: vec![],
            files,
            kernel: None,
        });
        let bytes = m.to_canonical_json();
        let id = BundleId::of(&bytes);
        std::fs::write(store.bundle_file(&id), &bytes).unwrap();
        id
    }

    /// [`InStore`], writing down each bundle it reads again.
    struct Counting<'a>(InStore<'a>, RefCell<Vec<BundleId>>);

    impl Heads for Counting<'_> {
        fn bytes(&self, held: &Held) -> u64 {
            self.0.bytes(held)
        }
        fn whole(&self, id: &BundleId) -> Option<Result<Manifest, StoreError>> {
            let read = self.0.whole(id)?;
            self.1.borrow_mut().push(id.clone());
            Some(read)
        }
    }

    /// Builds from `ids` through `cache` as the index thread does, with
    /// `old` served now; the index and which bundles were read again.
    fn rebuild(
        cache: &mut HeadCache,
        store: &Store,
        ids: &[&BundleId],
        old: Option<&Index>,
    ) -> (Index, Vec<BundleId>) {
        let listed: Vec<_> = ids
            .iter()
            .map(|id| ((*id).clone(), file_id(&store.bundle_file(id))))
            .collect();
        let (held, failed) = cache.read(store, &listed);
        assert!(failed.is_empty(), "{failed:?}");
        let all = Authority::default();
        let counting = Counting(cache.with(store), RefCell::default());
        let index = Index::build_from(&held, &all, old, &counting).unwrap();
        let read_again = counting.1.into_inner();
        cache.keep(held);
        (index, read_again)
    }

    /// What a build from every manifest read whole makes.
    fn from_nothing(store: &Store, ids: &[&BundleId]) -> Index {
        let held: Vec<Held> = ids
            .iter()
            .map(|id| Held {
                id: (*id).clone(),
                manifest: store.read_bundle(id).unwrap(),
            })
            .collect();
        Index::build(&held, &Authority::default())
    }

    fn same(built: &Index, fresh: &Index) {
        assert_eq!(built.blob_count, fresh.blob_count);
        assert_eq!(built.blob_bytes, fresh.blob_bytes);
        let bytes = |ix: &Index| ix.bundles.iter().map(|b| b.bytes).collect::<Vec<_>>();
        assert_eq!(bytes(built), bytes(fresh));
        assert_eq!(built.repos.len(), fresh.repos.len());
        for (key, new) in &fresh.repos {
            let kept = &built.repos[key];
            assert_eq!((kept.version, &kept.refs), (new.version, &new.refs));
            for (commit, snap) in &new.snapshots {
                let files: Vec<_> = kept.snapshots[commit].files().collect();
                assert_eq!(
                    files,
                    snap.files().collect::<Vec<_>>(),
                    "{key:?} at {commit}"
                );
            }
        }
    }

    /// Issue 35's "no doubling during a rebuild": after the first build,
    /// an import reads whole only the bundles carrying a repository it
    /// changes, and what is built is what a build from every manifest read
    /// whole makes — the files served, the blobs counted, each bundle's
    /// bytes.
    #[test]
    fn a_rebuild_reads_whole_only_what_carries_a_repository_built_again() {
        let dir = tempfile::tempdir().unwrap();
        let store = Store::at(dir.path());
        store.create_dirs().unwrap();
        let x = hold(&store, "acme/a", '1', &["w", "shared"]);
        let y = hold(&store, "acme/b", '1', &["v", "shared"]);
        let z = hold(&store, "acme/a", '2', &["w", "more"]);
        let mut cache = HeadCache::default();

        let (first, read) = rebuild(&mut cache, &store, &[&x, &y, &z], None);
        assert!(
            read.is_empty(),
            "a first build is given every manifest whole"
        );
        same(&first, &from_nothing(&store, &[&x, &y, &z]));
        assert_eq!(first.blob_count, 4, "w, shared, v, more: each once");

        // A bundle of another repository: nothing held is read again.
        let w = hold(&store, "acme/c", '1', &["c"]);
        let (second, read) = rebuild(&mut cache, &store, &[&x, &y, &z, &w], Some(&first));
        assert_eq!(read, Vec::<BundleId>::new());
        same(&second, &from_nothing(&store, &[&x, &y, &z, &w]));

        // A new commit of `acme/a`: its carriers only are read again.
        let v = hold(&store, "acme/a", '3', &["w", "newest"]);
        let (third, mut read) = rebuild(&mut cache, &store, &[&x, &y, &z, &w, &v], Some(&second));
        read.sort();
        let mut carriers = vec![x.clone(), z.clone()];
        carriers.sort();
        assert_eq!(read, carriers);
        same(&third, &from_nothing(&store, &[&x, &y, &z, &w, &v]));

        // A removal changes `acme/a` again; the removed bundle's head goes.
        let (fourth, _) = rebuild(&mut cache, &store, &[&x, &y, &z, &w], Some(&third));
        same(&fourth, &from_nothing(&store, &[&x, &y, &z, &w]));
        assert!(!cache.entries.contains_key(&v));
    }

    /// A manifest whose file changed is read whole again, and one that no
    /// longer matches its id is left out with why; one that cannot be read
    /// again when a build needs it whole fails the build, naming it.
    #[test]
    fn a_changed_or_lost_manifest_is_read_again_or_named() {
        let dir = tempfile::tempdir().unwrap();
        let store = Store::at(dir.path());
        store.create_dirs().unwrap();
        let x = hold(&store, "acme/a", '1', &["w"]);
        let y = hold(&store, "acme/b", '1', &["v"]);
        let mut cache = HeadCache::default();
        let (first, _) = rebuild(&mut cache, &store, &[&x, &y], None);

        let damaged = store.read_bundle(&y).unwrap().to_canonical_json();
        std::fs::write(store.bundle_file(&y), [&damaged[..], b" "].concat()).unwrap();
        let listed: Vec<_> = [&x, &y]
            .iter()
            .map(|id| ((*id).clone(), file_id(&store.bundle_file(id))))
            .collect();
        let (held, failed) = cache.read(&store, &listed);
        assert_eq!(held.len(), 1);
        assert_eq!(failed.len(), 1);
        assert_eq!(failed[0].0, y);
        assert!(
            failed[0].1.to_string().contains(y.as_str()),
            "{}",
            failed[0].1
        );
        cache.keep(held);

        // `acme/a` changes while `x`'s manifest is gone: the build names it.
        let z = hold(&store, "acme/a", '2', &["u"]);
        let stamp = |id: &BundleId| file_id(&store.bundle_file(id));
        let listed = vec![(x.clone(), stamp(&x)), (z.clone(), stamp(&z))];
        std::fs::remove_file(store.bundle_file(&x)).unwrap();
        let (held, _) = cache.read(&store, &listed);
        assert_eq!(
            held.len(),
            2,
            "x's head stands until a build needs it whole"
        );
        let err = Index::build_from(
            &held,
            &Authority::default(),
            Some(&first),
            &cache.with(&store),
        )
        .unwrap_err();
        assert_eq!(err.id, x);
    }
}
