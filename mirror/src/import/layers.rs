//! The models' image layers, digested during import's one pass: every Hub
//! file a bundle carries is served as a one-file tar layer
//! (`models/<org>/<repo>`), whose digest is the sha256 of the tar's
//! headers, the file's bytes and the zero tail. The import reads every
//! byte anyway; a second hasher per path over the same bytes gives the
//! layer digests, recorded beside the bundle
//! (`STORE/state/model-layers-<bundle>.json`) before its manifest is
//! visible, so a serving mirror serves the model image the moment the
//! bundle is served, never after a hashing pass of its own.
//!
//! Invariant: a digest is recorded only for a blob whose bytes hashed to
//! its name (its hashers are finished when the sink is, and kept only when
//! the check keeps the blob), over exactly the bytes the layer is served as
//! ([`crate::serve::index::oci::models::tar`]); a blob not streamed (held
//! already) gets none here, and the server hashes it as before.

use std::collections::{BTreeMap, HashMap};
use std::sync::{Arc, Mutex};

use llmgw_shared::manifest::Manifest;
use llmgw_shared::{BundleId, Sha256};
use sha2::Digest;

use crate::serve::index::oci::models::{LayerDigests, imported_file, tar};
use crate::store::commit::Learned;

/// Blob sha256 -> the digests of its layers, by tar path, once its sink is
/// finished and before its hash verdict.
type Finished = Arc<Mutex<HashMap<String, Vec<(String, Sha256)>>>>;

/// What one import learns: the paths each Hub file is served at, and the
/// digests found so far.
#[derive(Default)]
pub(super) struct Layers {
    /// Blob sha256 -> (size, every tar path it is served at).
    paths: HashMap<String, (u64, Vec<String>)>,
    /// Blob sha256 -> its digests, waiting for the blob's hash verdict.
    finished: Finished,
    /// The digests of blobs kept.
    kept: BTreeMap<(Sha256, String), Sha256>,
}

impl Layers {
    /// For the Hub files of `m`.
    pub(super) fn of(m: &Manifest) -> Self {
        let mut paths: HashMap<String, (u64, Vec<String>)> = HashMap::new();
        for f in m.repos.iter().flat_map(|r| &r.files) {
            let entry = paths
                .entry(f.sha256.to_string())
                .or_insert_with(|| (f.size, Vec::new()));
            let path = format!("models/{}", f.path);
            if !entry.1.contains(&path) {
                entry.1.push(path);
            }
        }
        Self {
            paths,
            ..Self::default()
        }
    }

    /// The hashers for blob `sha256`, each seeded with its tar headers; none
    /// when it is not a Hub file.
    pub(super) fn hashers(&self, sha256: &str) -> Option<Hashers> {
        let (size, paths) = self.paths.get(sha256)?;
        let each = paths
            .iter()
            .map(|p| {
                let mut h = sha2::Sha256::new();
                h.update(tar::head(p, *size));
                (p.clone(), h)
            })
            .collect();
        Some(Hashers {
            sha256: sha256.to_string(),
            size: *size,
            each,
            finished: self.finished.clone(),
        })
    }

    /// The blob's bytes hashed to its name: its digests count.
    pub(super) fn keep(&mut self, sha256: &str) {
        let done = self.finished.lock().ok().and_then(|mut f| f.remove(sha256));
        let Ok(sha) = Sha256::parse_exact("blob", sha256) else {
            return;
        };
        for (path, digest) in done.into_iter().flatten() {
            self.kept.insert((sha.clone(), path), digest);
        }
    }

    /// What was learned, as the state file kept beside bundle `id` (no
    /// bytes when nothing was), for the store's commit to write.
    pub(super) fn learned(&self, id: &BundleId) -> Learned {
        let bytes = (!self.kept.is_empty()).then(|| {
            let mut d = LayerDigests::default();
            for ((file, path), digest) in &self.kept {
                d.insert(file.clone(), path.clone(), digest.clone());
            }
            d.to_bytes()
        });
        Learned {
            name: imported_file(id),
            bytes,
        }
    }
}

/// The tar-layer hashers of one blob as it streams.
pub(super) struct Hashers {
    sha256: String,
    size: u64,
    each: Vec<(String, sha2::Sha256)>,
    finished: Finished,
}

impl Hashers {
    /// More of the blob's bytes.
    pub(super) fn update(&mut self, buf: &[u8]) {
        for (_, h) in &mut self.each {
            h.update(buf);
        }
    }

    /// Every byte was given: the zero tail, then each digest waits for the
    /// blob's verdict ([`Layers::keep`]).
    pub(super) fn finish(self) {
        let zeros = vec![0u8; tar::tail(self.size) as usize];
        let digests = self
            .each
            .into_iter()
            .map(|(path, mut h)| {
                h.update(&zeros);
                let d: [u8; 32] = h.finalize().into();
                (path, Sha256::from_bytes(&d))
            })
            .collect();
        if let Ok(mut f) = self.finished.lock() {
            f.insert(self.sha256, digests);
        }
    }
}
