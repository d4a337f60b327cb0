//! The mirror store on disk: what the server reads and import writes.
//!
//! ```text
//! STORE/blobs/sha256/<2 hex>/<64 hex>    verified content, read-only once written
//! STORE/bundles/<manifest-sha256>.json   the manifests imported: what the mirror holds
//! STORE/trust/<key id>.pub               minisign public keys trusted for llmgw releases
//! STORE/state/                           trusted state: the import order (crate::store::state)
//! STORE/tmp/                             work in progress; never served
//! ```
//!
//! A bundle is visible once its manifest is in `bundles/`, and import writes
//! that file last, after every blob it names is in `blobs/`. So a reader
//! that starts from `bundles/` never sees a half-added bundle.
//!
//! The keys of blobs and manifests are spelled in [`layout`] only; the
//! blob-store layer ([`backend::BlobStore`]) keeps blobs and manifests in
//! this folder ([`fs::FsBlobs`]) or in S3-compatible object storage.
//!
//! [`Store`] is the one object the rest of the mirror works on, whatever
//! keeps its blobs: it answers "is this blob held", "read this small
//! blob", "list every blob" and "which blobs are published" through the
//! [`backend::BlobStore`] trait, so no caller asks which backend it is:
//! serving, whose ways of sending a blob differ, asks
//! [`Store::open_blob`]. Where it is and the transaction a command runs on
//! it are [`session`]'s; the transaction that makes a bundle held is
//! [`Store::commit`].

pub mod backend;
mod cache_lru;
mod checked_file;
pub mod claims;
pub mod commit;
#[cfg(any(test, feature = "testing"))]
pub mod conformance;
pub(crate) mod error;
pub mod export;
pub mod fs;
pub mod fsutil;
pub mod gc;
pub mod have;
pub mod inspect;
pub mod layout;
pub mod leftovers;
pub mod model_files;
pub mod new_store;
pub mod open_blob;
mod own_release;
pub mod remote;
pub mod s3;
pub mod s3_cache;
pub mod series;
pub mod session;
pub mod state;
mod state_file;
pub mod summaries;
pub mod trust;
pub mod verify;
pub mod xet;

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use llmgw_shared::manifest::Manifest;
use llmgw_shared::{BundleId, Sha256};

pub use error::StoreError;
pub use state_file::{StateFault, StateFile};

/// A held bundle: its id and its manifest, which hashed to that id when it
/// was read ([`Store::read_bundle`]).
#[derive(Debug, Clone)]
pub struct Held {
    /// The bundle's id: its manifest's sha256, the name of its file.
    pub id: BundleId,
    /// The manifest, parsed.
    pub manifest: Manifest,
}

/// A file under `blobs/sha256/` ([`Store::blob_files`]).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct BlobFile {
    /// Where it is.
    pub path: PathBuf,
    /// The blob it is: its name is 64 lower-case hex digits and it is
    /// filed under them ([`layout::blob_key`]). `None` for anything else.
    pub sha256: Option<Sha256>,
}

/// A held bundle's id and its manifest, or why it cannot be read (one
/// damaged manifest does not hide the others of a listing).
#[derive(Debug)]
pub struct HeldManifest {
    /// The bundle's id: its manifest's sha256, the name of its file.
    pub id: BundleId,
    /// Its manifest, or why it cannot be read.
    pub manifest: Result<Manifest, StoreError>,
}

/// A mirror store rooted at a directory; or, for a store in object
/// storage, the local work folder its small files are copied into
/// ([`remote::Remote`]), with its blobs looked up in the bucket.
#[derive(Debug, Clone)]
pub struct Store {
    root: PathBuf,
    /// The folder's own blobs: a folder store's, or what a bucket store's
    /// import staged and has not published yet.
    folder: fs::FsBlobs,
    /// The bucket that holds a bucket store's published blobs.
    bucket: Option<s3::S3Blobs>,
}

impl Store {
    /// Whether its blobs are published in a bucket (not files at hand).
    pub fn is_bucket(&self) -> bool {
        self.bucket.is_some()
    }

    /// A store at `root`; nothing is read or created yet.
    pub fn at(root: impl Into<PathBuf>) -> Self {
        let root = root.into();
        Self {
            folder: fs::FsBlobs::at(&root),
            root,
            bucket: None,
        }
    }

    /// The store in `s3`'s bucket, worked on through the folder `work`: a
    /// blob is held when the folder or the bucket has it.
    pub(crate) fn in_bucket(work: impl Into<PathBuf>, s3: s3::S3Blobs) -> Self {
        Self {
            bucket: Some(s3),
            ..Self::at(work)
        }
    }

    /// Where the store's published blobs are: the bucket, else the folder.
    /// `mirror verify` walks it, `mirror gc` sweeps it.
    pub fn published(&self) -> &dyn backend::BlobStore {
        match &self.bucket {
            Some(s3) => s3,
            None => &self.folder,
        }
    }

    /// Where a blob is looked for, in order: the folder, then the bucket
    /// (a bucket store's folder holds what an import has not published).
    fn holders(&self) -> impl Iterator<Item = &dyn backend::BlobStore> {
        let folder: &dyn backend::BlobStore = &self.folder;
        std::iter::once(folder).chain(self.bucket.iter().map(|s3| s3 as &dyn backend::BlobStore))
    }

    /// Whether this store's published blobs are shared with writers that
    /// do not hold the store lock gc takes: a bucket's are (every replica
    /// and importer reaches it, each from its own folder), so `mirror gc`
    /// keeps an unnamed blob younger than its grace period there; a
    /// folder's are not (every writer holds its lock).
    pub fn shared_blobs(&self) -> bool {
        self.bucket.is_some()
    }

    /// The bytes of a small blob held (a signature, a checksum list, a
    /// lock file), at most `max`: from the folder, else from the bucket.
    /// A [`Sha256`] by type, so there is no name to refuse here.
    pub fn read_small_blob(&self, sha: &Sha256, max: u64) -> Result<Vec<u8>, StoreError> {
        let from = self
            .holders()
            .find(|b| b.head(sha).ok().flatten().is_some())
            .unwrap_or(self.published());
        let location = from.blob_location(sha);
        let mut bytes = Vec::new();
        std::io::Read::read_to_end(
            &mut std::io::Read::take(from.read(sha, 0..max + 1)?, max + 1),
            &mut bytes,
        )
        .map_err(|e| StoreError::io(&location, e))?;
        if bytes.len() as u64 > max {
            return Err(StoreError::TooLarge {
                path: location.into(),
                max,
            });
        }
        Ok(bytes)
    }

    /// A held blob's bytes as a reader, from the folder, else the bucket:
    /// the server reads a model file once so, to learn the digest of the
    /// tar layer around it.
    pub fn read_blob(
        &self,
        sha: &Sha256,
        size: u64,
    ) -> Result<Box<dyn std::io::Read + Send>, StoreError> {
        let from = self
            .holders()
            .find(|b| b.head(sha).ok().flatten().is_some())
            .unwrap_or(self.published());
        from.read(sha, 0..size)
    }

    /// Bytes `range` of a held blob, from the folder, else the bucket: what
    /// import's model-file rule reads of a file already held (its head,
    /// a zip's central directory).
    pub fn read_blob_range(
        &self,
        sha: &Sha256,
        range: std::ops::Range<u64>,
    ) -> Result<Box<dyn std::io::Read + Send>, StoreError> {
        let from = self
            .holders()
            .find(|b| b.head(sha).ok().flatten().is_some())
            .unwrap_or(self.published());
        from.read(sha, range)
    }

    /// Creates the store's folders if they are missing.
    pub fn create_dirs(&self) -> Result<(), StoreError> {
        for dir in [
            self.blobs_dir(),
            self.bundles_dir(),
            self.trust_dir(),
            self.tmp_dir(),
        ] {
            std::fs::create_dir_all(&dir).map_err(|e| StoreError::io(&dir, e))?;
        }
        Ok(())
    }

    /// Whether the folder looks like a store a command may read: its
    /// `bundles/` is there; in a bucket store's work folder, any of
    /// `bundles/`, `trust/` or `state/` (an empty folder is no object, so a
    /// bucket's store may hold trusted keys or state and no manifest yet).
    pub fn is_store(&self) -> bool {
        if self.bucket.is_none() {
            return self.bundles_dir().is_dir();
        }
        [self.bundles_dir(), self.trust_dir(), self.state_dir()]
            .iter()
            .any(|d| d.is_dir())
    }

    /// The store folder, as given.
    pub fn root(&self) -> &Path {
        &self.root
    }

    /// `blobs/`: verified blobs only, each named by its sha256.
    pub fn blobs_dir(&self) -> PathBuf {
        self.root.join(layout::BLOBS)
    }

    /// `bundles/`: the held manifests, each written last at its import.
    pub fn bundles_dir(&self) -> PathBuf {
        self.root.join(layout::BUNDLES)
    }

    /// `trust/`: the public keys the store trusts, by role.
    pub fn trust_dir(&self) -> PathBuf {
        self.root.join(layout::TRUST)
    }

    /// `tmp/`: staging, never served; `mirror gc` empties it.
    pub fn tmp_dir(&self) -> PathBuf {
        self.root.join(layout::TMP)
    }

    /// Trusted state kept beside the bundles (see the `state` module).
    pub fn state_dir(&self) -> PathBuf {
        self.root.join(layout::STATE)
    }

    /// The folder's blobs and manifests through the blob-store layer.
    pub fn blobs(&self) -> &fs::FsBlobs {
        &self.folder
    }

    /// The lock file writers (import, gc, remove, trust) hold; see
    /// [`crate::store::fsutil::StoreLock`].
    pub fn lock_path(&self) -> PathBuf {
        self.root.join("lock")
    }

    /// Whether the store holds a blob with this sha256 and size. The size
    /// is checked, not the bytes: blobs are verified when they are added,
    /// and `llmgw mirror verify` looks for rot.
    pub fn has_blob(&self, sha256: &Sha256, size: u64) -> bool {
        self.holders().any(|b| {
            b.head(sha256)
                .ok()
                .flatten()
                .is_some_and(|m| m.size == size)
        })
    }

    /// Every blob held, with its size: the folder's and, for a store in a
    /// bucket, the bucket's (which wins where both have one) — one listing
    /// each, where [`Store::has_blob`] asks once per blob.
    pub fn held_blobs(&self) -> Result<BTreeMap<Sha256, u64>, StoreError> {
        let mut held: BTreeMap<Sha256, u64> = BTreeMap::new();
        for b in self.holders() {
            for (sha, meta) in b.list_blobs()? {
                held.insert(sha, meta.size);
            }
        }
        Ok(held)
    }

    /// Every file under `blobs/sha256/`, each with the digest it is the
    /// blob of when it is filed under its own key, else none (a misfiled
    /// or misnamed file: a stray for `verify` and `gc`).
    pub fn blob_files(&self) -> Result<Vec<BlobFile>, StoreError> {
        let mut out = Vec::new();
        let dir = self.blobs_dir();
        let walk = walkdir::WalkDir::new(&dir)
            .follow_links(false)
            .sort_by_file_name()
            .min_depth(2)
            .max_depth(2);
        for item in walk {
            let item = match item {
                Ok(i) => i,
                Err(e) if e.io_error().map(|i| i.kind()) == Some(std::io::ErrorKind::NotFound) => {
                    continue;
                }
                Err(e) => {
                    let p = e.path().unwrap_or(&dir).to_path_buf();
                    return Err(StoreError::io(p, e.into()));
                }
            };
            if item.file_type().is_dir() {
                continue;
            }
            let path = item.path().to_path_buf();
            let sha256 = item
                .file_name()
                .to_str()
                .and_then(layout::digest)
                .filter(|sha| path == self.blob_file(sha));
            out.push(BlobFile { path, sha256 });
        }
        Ok(out)
    }

    /// Where the blob with this sha256 lives: its key
    /// (`layout::blob_key`, `blobs/sha256/<first two hex>/<all 64>`, the
    /// one function that spells it, as cacache's `content_path` is) under
    /// the root. A [`Sha256`] is 64 lower-case hex digits by type, so
    /// nothing else becomes a path.
    pub fn blob_file(&self, sha256: &Sha256) -> PathBuf {
        self.root.join(layout::blob_key(sha256))
    }

    /// Where the manifest of the bundle with this id lives. A
    /// [`BundleId`] is 64 lower-case hex digits by type; a name read from
    /// disk or given on the command line becomes one first
    /// ([`layout::bundle_id`], [`BundleId::parse`]).
    pub fn bundle_file(&self, manifest_sha256: &BundleId) -> PathBuf {
        self.root.join(layout::bundle_key(manifest_sha256))
    }

    /// The sha256s of the bundles held, sorted. A missing `bundles/`
    /// folder is an empty store.
    pub fn bundle_ids(&self) -> Result<Vec<BundleId>, StoreError> {
        self.listed(".json")
    }

    /// The held bundles with a kept signature (`<sha256>.json.minisig`),
    /// sorted: one listing, where looking for each bundle's file cost an
    /// `open` per bundle held.
    pub fn signed_bundle_ids(&self) -> Result<Vec<BundleId>, StoreError> {
        self.listed(".json.minisig")
    }

    /// The ids named by the files `<sha256><suffix>` in `bundles/`, sorted.
    fn listed(&self, suffix: &str) -> Result<Vec<BundleId>, StoreError> {
        let dir = self.bundles_dir();
        let entries = match std::fs::read_dir(&dir) {
            Ok(e) => e,
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(Vec::new()),
            Err(e) => return Err(StoreError::io(&dir, e)),
        };
        let mut ids = Vec::new();
        for entry in entries {
            let entry = entry.map_err(|e| StoreError::io(&dir, e))?;
            let name = entry.file_name();
            let Some(name) = name.to_str() else { continue };
            if let Some(id) = name.strip_suffix(suffix).and_then(layout::bundle_id) {
                ids.push(id);
            }
        }
        ids.sort();
        Ok(ids)
    }

    /// Reads one held manifest, checking that it still hashes to its name.
    pub fn read_bundle(&self, manifest_sha256: &BundleId) -> Result<Manifest, StoreError> {
        self.read_bundle_bytes(manifest_sha256).map(|(_, m)| m)
    }

    /// One held manifest's bytes as carried and what they say, checking
    /// that they still hash to its name.
    pub fn read_bundle_bytes(
        &self,
        manifest_sha256: &BundleId,
    ) -> Result<(Vec<u8>, Manifest), StoreError> {
        let path = self.bundle_file(manifest_sha256);
        let bytes = std::fs::read(&path).map_err(|e| StoreError::io(&path, e))?;
        let actual = BundleId::of(&bytes);
        if actual != *manifest_sha256 {
            return Err(StoreError::ManifestHash {
                path,
                expected: manifest_sha256.to_string(),
                actual: actual.to_string(),
            });
        }
        let m = Manifest::from_json_bytes(&bytes)
            .map_err(|source| StoreError::BadManifest { path, source })?;
        Ok((bytes, m))
    }

    /// Every held manifest with its sha256, sorted by sha256.
    pub fn read_bundles(&self) -> Result<Vec<Held>, StoreError> {
        self.bundle_ids()?
            .into_iter()
            .map(|id| self.read_bundle(&id).map(|manifest| Held { id, manifest }))
            .collect()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn blob_paths_only_from_hex() {
        let s = Store::at("/s");
        let hex = "ab".repeat(32);
        let path = |text: &str| layout::digest(text).map(|sha| s.blob_file(&sha));
        assert_eq!(
            path(&hex).unwrap(),
            PathBuf::from(format!("/s/blobs/sha256/ab/{hex}"))
        );
        assert!(path("../../etc/passwd").is_none());
        assert!(layout::bundle_id(&"AB".repeat(32)).is_none());
        // What the typed digest would forgive, the store's names do not.
        assert!(path(&format!(" {hex}")).is_none());
        assert!(path(&hex.to_ascii_uppercase()).is_none());
        let typed = Sha256::parse("test", &hex).unwrap();
        assert_eq!(Some(s.blob_file(&typed)), path(&hex));
        assert_eq!(
            s.bundle_file(&BundleId::from(typed)),
            PathBuf::from(format!("/s/bundles/{hex}.json"))
        );
    }

    #[test]
    fn empty_and_tampered_stores() {
        let dir = tempfile::tempdir().unwrap();
        let s = Store::at(dir.path());
        assert!(s.bundle_ids().unwrap().is_empty());
        s.create_dirs().unwrap();
        let m = Manifest::new(vec!["amd64".into()], 0).to_canonical_json();
        let id = BundleId::of(&m);
        std::fs::write(s.bundle_file(&id), &m).unwrap();
        std::fs::write(s.bundles_dir().join("notes.txt"), b"x").unwrap();
        assert_eq!(s.read_bundles().unwrap().len(), 1);
        std::fs::write(s.bundle_file(&id), b"{}").unwrap();
        let err = s.read_bundle(&id).unwrap_err().to_string();
        assert!(err.contains("llmgw mirror verify"), "{err}");
    }

    #[test]
    fn an_io_error_names_its_path_and_leaves_the_cause_to_the_chain() {
        let e = StoreError::io("/s/bundles", std::io::Error::other("disk says no"));
        assert_eq!(e.to_string(), "/s/bundles");
        assert_eq!(llmgw_shared::chain(&e), "/s/bundles: disk says no");
    }
}
