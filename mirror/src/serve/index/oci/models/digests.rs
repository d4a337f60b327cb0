//! The digests of the models' tar layers, learned by hashing each layer
//! once and kept in `STORE/state/model-layers.json`, so a restart serves
//! the same digests without reading terabytes again.
//!
//! Invariant: a digest is recorded only after hashing exactly the bytes
//! the layer is served as (the headers of [`super::tar`], the held blob,
//! the zero tail), keyed by the blob's sha256 and the path in the tar and
//! by the tar layout's version, so a change of either is a new key, never
//! a stale digest. The file is a cache of the store's own making: one that
//! cannot be read is logged and hashed again, never trusted in part.

use std::collections::BTreeMap;
use std::io::Read;
use std::sync::Mutex;

use prometheus_client::metrics::counter::Counter;

use llmgw_shared::{BundleId, Chain, Sha256};
use serde::{Deserialize, Serialize};
use sha2::Digest;

use super::tar;
use crate::serve::index::entries::Blob;
use crate::store::{Store, StoreError, state};

/// The state file's name in `STORE/state/`.
pub const FILE: &str = "model-layers.json";

/// The tar layout these digests are of: bumped whenever [`tar::head`] or
/// [`tar::tail`] would give other bytes, so older digests are dropped.
const LAYOUT: u32 = 1;

/// Bytes hashed per read.
const READ: usize = 1 << 20;

/// Known layer digests, by (file sha256, path in the tar).
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct LayerDigests {
    known: BTreeMap<(Sha256, String), Sha256>,
}

#[derive(Serialize, Deserialize)]
struct OnDisk {
    kind: String,
    layout: u32,
    layers: Vec<Entry>,
}

#[derive(Serialize, Deserialize)]
struct Entry {
    file: Sha256,
    path: String,
    digest: Sha256,
}

const KIND: &str = "llmgw-model-layers";

impl LayerDigests {
    /// What the store's state file says; empty when it is missing, and
    /// (logged) when it cannot be read or is of another layout.
    pub fn load(store: &Store) -> Self {
        let bytes = match state::read_file(store, FILE) {
            Ok(Some(b)) => b,
            Ok(None) => return Self::default(),
            Err(e) => {
                tracing::warn!(error = %Chain(&e), "model layer digests unreadable; hashing again");
                return Self::default();
            }
        };
        Self::from_bytes(&bytes).unwrap_or_else(|| {
            tracing::warn!(
                file = FILE,
                "model layer digests not understood (another layout, or damaged); hashing again"
            );
            Self::default()
        })
    }

    /// Writes them into the store's state (atomically, as every state file).
    pub fn save(&self, store: &Store) -> Result<(), StoreError> {
        state::write_file(store, FILE, &self.to_bytes())
    }

    /// The state file's bytes.
    pub fn to_bytes(&self) -> Vec<u8> {
        let d = OnDisk {
            kind: KIND.into(),
            layout: LAYOUT,
            layers: self
                .known
                .iter()
                .map(|((file, path), digest)| Entry {
                    file: file.clone(),
                    path: path.clone(),
                    digest: digest.clone(),
                })
                .collect(),
        };
        let mut bytes = serde_json::to_vec(&d).expect("digests always serialize");
        bytes.push(b'\n');
        bytes
    }

    /// The digest of the tar of `file` at `path`, if known.
    pub fn get(&self, file: &Sha256, path: &str) -> Option<&Sha256> {
        self.known.get(&(file.clone(), path.to_string()))
    }

    /// Records a digest learned by [`hash_layer`].
    pub fn insert(&mut self, file: Sha256, path: String, digest: Sha256) {
        self.known.insert((file, path), digest);
    }

    pub fn len(&self) -> usize {
        self.known.len()
    }

    /// Every digest `other` knows, added (ours kept where both know one).
    pub fn merge(&mut self, other: LayerDigests) {
        for (k, v) in other.known {
            self.known.entry(k).or_insert(v);
        }
    }

    /// Reads a state file's bytes; none when they are not of this layout.
    pub fn from_bytes(bytes: &[u8]) -> Option<Self> {
        match serde_json::from_slice::<OnDisk>(bytes) {
            Ok(d) if d.kind == KIND && d.layout == LAYOUT => Some(Self {
                known: d
                    .layers
                    .into_iter()
                    .map(|e| ((e.file, e.path), e.digest))
                    .collect(),
            }),
            _ => None,
        }
    }
}

/// The state file in which an import keeps the layer digests it learned
/// for bundle `id` ([`crate::import::layers`]).
pub fn imported_file(id: &BundleId) -> String {
    format!("model-layers-{id}.json")
}

/// Adds to `known` the layer digests imports learned for the held bundles
/// not read yet (`read` remembers which were, across builds): one small
/// file per new bundle, so a model image is served with its bundle. A file
/// missing (imported before, or nothing learned) or unreadable is skipped:
/// the layers are hashed as before.
pub fn learn_imported<'a>(
    store: &Store,
    known: &mut LayerDigests,
    held: impl IntoIterator<Item = &'a BundleId>,
    read: &mut std::collections::HashSet<BundleId>,
) {
    for id in held {
        if !read.insert(id.clone()) {
            continue;
        }
        match state::read_file(store, &imported_file(id)) {
            Ok(Some(bytes)) => match LayerDigests::from_bytes(&bytes) {
                Some(d) => known.merge(d),
                None => {
                    tracing::warn!(bundle = %id, "its model layer digests are not understood; hashing them")
                }
            },
            Ok(None) => {}
            Err(e) => {
                tracing::warn!(bundle = %id, error = %Chain(&e), "its model layer digests are unreadable; hashing them")
            }
        }
    }
}

/// The state file's bytes a replica sends into a bucket several replicas
/// share ([`crate::store::remote::OwnFile`]'s merge): every digest either
/// file knows, ours where both know one (ours were hashed here). A copy in
/// the bucket that cannot be read, or is of another layout, is replaced.
pub fn merge_files(ours: &[u8], theirs: &[u8]) -> Vec<u8> {
    let (Some(mut all), Some(ours_read)) = (
        LayerDigests::from_bytes(theirs),
        LayerDigests::from_bytes(ours),
    ) else {
        return ours.to_vec();
    };
    all.known.extend(ours_read.known);
    all.to_bytes()
}

/// Hashes the tar layer of `file` at `path` as it is served: its headers,
/// the blob read from the store (which must be exactly its size), the
/// zero tail. Gives the digest and the bytes read from the store.
pub fn hash_layer(store: &Store, file: &Blob, path: &str) -> Result<(Sha256, u64), StoreError> {
    let mut h = sha2::Sha256::new();
    h.update(tar::head(path, file.size));
    let mut reader = store.read_blob(&file.sha256, file.size)?;
    let mut buf = vec![0u8; READ];
    let mut read = 0u64;
    let location = || format!("the blob {}", file.sha256);
    loop {
        let n = match reader.read(&mut buf) {
            Ok(0) => break,
            Ok(n) => n,
            Err(e) if e.kind() == std::io::ErrorKind::Interrupted => continue,
            Err(e) => return Err(StoreError::io(location(), e)),
        };
        read += n as u64;
        if read > file.size {
            break;
        }
        h.update(&buf[..n]);
    }
    if read != file.size {
        return Err(StoreError::io(
            location(),
            std::io::Error::new(
                std::io::ErrorKind::InvalidData,
                format!(
                    "{read} bytes read where the manifests say {}: the store is damaged, \
                     run `llmgw mirror verify`",
                    file.size
                ),
            ),
        ));
    }
    let zeros = vec![0u8; tar::tail(file.size) as usize];
    h.update(&zeros);
    let digest: [u8; 32] = h.finalize().into();
    Ok((Sha256::from_bytes(&digest), read))
}

/// Hashes the layers of `pending` not known yet, in order, for about
/// `budget` (at least one file), adds each to `known` (counting the bytes
/// read in `hashed`) and then saves them all into the store's state. Gives
/// how many of `pending` it went through and whether it learned anything.
///
/// Why a time budget and not a count of files: the save rewrites the whole
/// state file and what is learned is served by rebuilding the index, both
/// costs of the store's size. A fixed count of files made a repository of
/// 100 000 small files cost 1 500 saves and index rebuilds; by time, small
/// files are hashed thousands at a time and a model's large shards still
/// reach the index one by one. A file that cannot be read is logged and its
/// image left out.
pub fn learn(
    store: &Store,
    known: &Mutex<LayerDigests>,
    hashed: &Counter,
    pending: &[super::Pending],
    budget: std::time::Duration,
) -> (usize, bool) {
    let started = std::time::Instant::now();
    let (mut files, mut bytes, mut went) = (0u64, 0u64, 0usize);
    for p in pending {
        went += 1;
        let is_known = known
            .lock()
            .map(|k| k.get(&p.file.sha256, &p.path).is_some())
            .unwrap_or(false);
        if is_known {
            continue;
        }
        match hash_layer(store, &p.file, &p.path) {
            Ok((digest, read)) => {
                if let Ok(mut k) = known.lock() {
                    k.insert(p.file.sha256.clone(), p.path.clone(), digest);
                }
                hashed.inc_by(read);
                files += 1;
                bytes += read;
            }
            Err(e) => {
                tracing::error!(blob = %p.file.sha256, error = %Chain(&e), "cannot hash a model file's tar layer; its image is not served")
            }
        }
        if started.elapsed() >= budget {
            break;
        }
    }
    if files == 0 {
        return (went, false);
    }
    // Written under the lock (the index thread waits at most this long),
    // so the table is never copied whole.
    let saved = match known.lock() {
        Ok(all) => Some((all.save(store), all.len())),
        Err(_) => None,
    };
    if let Some((Err(e), _)) = &saved {
        tracing::warn!(error = %Chain(e), "model layer digests kept in memory only: the store's state cannot be written");
    }
    tracing::info!(
        files,
        bytes,
        seconds = started.elapsed().as_secs_f64(),
        known = saved.map_or(0, |(_, n)| n),
        "model tar layers hashed"
    );
    (went, true)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn sha(c: char) -> Sha256 {
        c.to_string().repeat(64).parse().unwrap()
    }

    fn of(entries: &[(char, &str, char)]) -> Vec<u8> {
        let mut d = LayerDigests::default();
        for (file, path, digest) in entries {
            d.insert(sha(*file), path.to_string(), sha(*digest));
        }
        d.to_bytes()
    }

    /// What two replicas learned is kept whole; where both know a layer,
    /// ours is sent; a bucket copy that cannot be read is replaced.
    #[test]
    fn merging_keeps_what_either_replica_learned() {
        let ours = of(&[('a', "x.bin", '1'), ('b', "y.bin", '2')]);
        let theirs = of(&[('b', "y.bin", '9'), ('c', "z.bin", '3')]);
        let merged = LayerDigests::from_bytes(&merge_files(&ours, &theirs)).unwrap();
        assert_eq!(merged.len(), 3);
        assert_eq!(merged.get(&sha('b'), "y.bin"), Some(&sha('2')));
        assert_eq!(merged.get(&sha('c'), "z.bin"), Some(&sha('3')));
        assert_eq!(merge_files(&ours, b"{not json"), ours);
    }
}
