//! The server's state: the store, the current index, the counters and
//! the settings, which every request reads.
//!
//! Invariant: a request never waits on the store's folders. It only loads
//! the current index (an `Arc` swapped whole); a thread of its own
//! (`refresh/`, started by [`AppState::new`]) keeps that index current, so a
//! slow or hung read of a manifest delays the next index, never an answer.

use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Arc, Mutex, mpsc};
use std::time::{Duration, SystemTime};

use arc_swap::ArcSwap;
use llmgw_shared::Chain;
use prometheus_client::registry::Registry;

use super::index::Index;
use crate::serve::index::hub::heads::{FileStamp, HeadCache};
use crate::serve::index::oci::models::{LayerDigests, Pending};
use crate::serve::ops::metrics::Metrics;
use crate::store::Store;
use crate::store::state;

/// What the server needs to answer a request.
pub struct AppState {
    /// The store the index is read from and blobs are opened in.
    pub store: Store,
    /// The index requests answer from; replaced whole, never edited.
    pub(super) index: ArcSwap<Index>,
    /// Indexes built so far: each new one gets the next number, which the
    /// JSON cache keys on.
    pub(super) generation: AtomicU64,
    pub(super) watch: Mutex<Watch>,
    pub(super) ready: AtomicBool,
    /// Why the last read of the store failed, until one succeeds.
    pub(super) problem: Mutex<Option<String>>,
    /// Dropped with the state, which tells the refresh thread to stop at
    /// once rather than at its next tick.
    pub(super) _stop: mpsc::Sender<()>,
    /// JSON answers already built from the current index.
    pub json_cache: super::cache::JsonCache,
    /// One permit a core: the JSON builds on the blocking pool at once.
    pub builders: tokio::sync::Semaphore,
    /// The counters every answer updates.
    pub metrics: Arc<Metrics>,
    /// What `/metrics` renders: the counters above, registered once.
    pub registry: Registry,
    /// sha256 of the bearer token, when one is required.
    pub token_sha256: Option<[u8; 32]>,
    /// `--public-url`, without a trailing `/`.
    pub public_url: Option<String>,
    /// Whether this server speaks TLS (the scheme of URLs it builds from `Host`).
    pub tls: bool,
    /// What nodes asked for and this mirror did not hold.
    pub misses: super::misses::MissLog,
    /// This server's name among replicas: its misses file's name.
    pub instance: String,
    /// The models' tar layer digests known (`STORE/state/model-layers.json`).
    pub(super) layer_digests: Mutex<LayerDigests>,
    /// Set when digests were learned: the next tick rebuilds the index.
    pub(super) rebuild: AtomicBool,
    /// The tar layers the last index left out, their digests unknown.
    pub(super) pending: Mutex<Vec<Pending>>,
    /// Whether a thread is hashing them (one at a time).
    pub(super) hashing: Arc<AtomicBool>,
    /// Whether a thread is making the Xet records the index found
    /// missing ([`super::refresh`]), and the blobs it was given already
    /// (a damaged one is tried once a server's life, not every tick).
    pub(super) xet_making: Arc<AtomicBool>,
    pub(super) xet_tried: Mutex<std::collections::HashSet<llmgw_shared::Sha256>>,
}

/// Whether the server can answer from the store yet.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Readiness {
    /// The store was read; it holds this many bundles.
    Ready {
        /// Bundles in the index.
        bundles: usize,
    },
    /// The first read has not finished.
    Reading,
    /// The store was read, but model images of it are still being hashed
    /// (bundles imported before import learned their layer digests): a
    /// kubelet pulling one now would get NAME_UNKNOWN.
    HashingModels,
    /// The store could not be read, for this reason; tried again.
    Failing(String),
}

/// What the refresh thread remembers between its looks at the store.
#[derive(Default)]
pub(super) struct Watch {
    pub(super) mtime: Option<SystemTime>,
    pub(super) state_mtime: Option<SystemTime>,
    /// What the index was built from: each manifest's file, and the
    /// import order's.
    pub(super) files: Vec<WatchedFile>,
    /// What earlier builds parsed of carried OCI manifests, by digest.
    pub(super) parsed: super::index::oci::ParsedManifests,
    /// The bundles whose imported layer digests were read.
    pub(super) layers_read: std::collections::HashSet<llmgw_shared::BundleId>,
    /// The held manifests without their Hub file lists, so a rebuild reads
    /// whole only what an import changed.
    pub(super) heads: HeadCache,
}

/// A bundle's id (empty for a state file) and its file's identity.
pub(super) type WatchedFile = (String, FileStamp);

impl AppState {
    /// Whether the store has been read once.
    pub fn is_ready(&self) -> bool {
        self.ready.load(Ordering::Acquire)
    }

    /// What `/readyz` answers: ready (with what is held), the store being
    /// read for the first time, or why it cannot be read (it is tried
    /// again at every tick, so this never sticks once the cause is gone).
    pub fn readiness(&self) -> Readiness {
        let index = self.index();
        if let Some(why) = self.problem.lock().ok().and_then(|p| p.clone())
            && !self.is_ready()
        {
            return Readiness::Failing(why);
        }
        if !self.is_ready() {
            return Readiness::Reading;
        }
        // While a thread hashes them, not while they merely wait: a server
        // whose index thread is held up (a hung manifest read) must not
        // stay unready for a hash that never started.
        if self.hashing.load(Ordering::Acquire) {
            return Readiness::HashingModels;
        }
        Readiness::Ready {
            bundles: index.bundles.len(),
        }
    }

    /// The current index. Never touches the store: the refresh thread
    /// swaps a new one in when `bundles/` changed.
    pub fn index(&self) -> Arc<Index> {
        self.index.load_full()
    }

    /// How many indexes were built so far (0 until the store was read);
    /// the index answered now carries this number.
    pub fn generation(&self) -> u64 {
        self.generation.load(Ordering::Acquire)
    }
}

/// How often new misses are written to the store's state: a restart or a
/// replica's loss costs at most this much of the miss log.
pub const SAVE_MISSES_EVERY: Duration = Duration::from_secs(5);

impl AppState {
    /// Writes this server's misses into `STORE/state/` if any is new. A
    /// store this server may not write (mounted read-only) keeps them in
    /// memory only, said once in the log.
    pub fn save_misses(&self) {
        if !self.misses.take_dirty() {
            return;
        }
        let list = super::misses::WantList::merge([self.misses.misses()]);
        let name = super::misses::file_name(&self.instance);
        if let Err(e) = state::write_file(&self.store, &name, &super::misses::to_bytes(&list)) {
            static SAID: AtomicBool = AtomicBool::new(false);
            if !SAID.swap(true, Ordering::Relaxed) {
                tracing::warn!(error = %Chain(&e), "the miss log is kept in memory only: the store's state cannot be written");
            }
        }
    }
}
