//! The server's state: the store, the current index and the settings.
//!
//! Invariant: a request never waits on the store's folders. It only loads
//! the current index (an `Arc` swapped whole); a thread of its own
//! ([`AppState::new`] starts it) keeps that index current, so a slow or
//! hung read of a manifest delays the next index, never an answer.
//!
//! The index is rebuilt when `bundles/` changes, so a bundle imported while
//! the server runs is served without a restart. Every 100 ms the thread
//! looks at the folder's mtime and the import order's and the policy's (three `stat`s); the
//! listing is read again only when one moved or is so recent that a second
//! change could share it (file times tick coarsely), and the index is
//! rebuilt only when what is listed differs: the set of manifests, or any
//! manifest's file (inode, size, mtime) — so a manifest repaired by
//! importing it again is served at once — or the import order, or the
//! policy (which signed series move names). Import
//! writes a manifest last, atomically, so a listed bundle is complete.

use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Arc, Mutex, Weak, mpsc};
use std::time::{Duration, SystemTime};

use arc_swap::ArcSwap;
use llmgw_shared::{BundleId, Chain, chain};
use prometheus_client::registry::Registry;

use super::index::Index;
use crate::serve::index::hub::heads::{FileStamp, HeadCache, file_id};
use crate::serve::index::oci::models::{LayerDigests, Pending};
use crate::serve::ops::metrics::Metrics;
use crate::store::Store;
use crate::store::state;

#[path = "state_build.rs"]
mod build;
#[path = "state_layers.rs"]
mod layers;
use layers::hash_pending;

/// How long after a change the listing is re-read on every check: longer
/// than any file-time tick.
const RECENT: Duration = Duration::from_secs(2);

/// How often the refresh thread looks at `bundles/`: a new bundle is
/// served within about this long, and an idle server costs three `stat`s
/// per tick.
pub const CHECK_EVERY: Duration = Duration::from_millis(100);

/// What the server needs to answer a request.
pub struct AppState {
    /// The store the index is read from and blobs are opened in.
    pub store: Store,
    /// The index requests answer from; replaced whole, never edited.
    index: ArcSwap<Index>,
    /// Indexes built so far: each new one gets the next number, which the
    /// JSON cache keys on.
    generation: AtomicU64,
    watch: Mutex<Watch>,
    ready: AtomicBool,
    /// Why the last read of the store failed, until one succeeds.
    problem: Mutex<Option<String>>,
    /// Dropped with the state, which tells the refresh thread to stop at
    /// once rather than at its next tick.
    _stop: mpsc::Sender<()>,
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
    layer_digests: Mutex<LayerDigests>,
    /// Set when digests were learned: the next tick rebuilds the index.
    rebuild: AtomicBool,
    /// The tar layers the last index left out, their digests unknown.
    pending: Mutex<Vec<Pending>>,
    /// Whether a thread is hashing them (one at a time).
    hashing: Arc<AtomicBool>,
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

#[derive(Default)]
struct Watch {
    mtime: Option<SystemTime>,
    state_mtime: Option<SystemTime>,
    /// What the index was built from: each manifest's file, and the
    /// import order's.
    files: Vec<WatchedFile>,
    /// What earlier builds parsed of carried OCI manifests, by digest.
    parsed: super::index::oci::ParsedManifests,
    /// The bundles whose imported layer digests were read.
    layers_read: std::collections::HashSet<llmgw_shared::BundleId>,
    /// The held manifests without their Hub file lists, so a rebuild reads
    /// whole only what an import changed.
    heads: HeadCache,
}

/// A bundle's id (empty for a state file) and its file's identity.
type WatchedFile = (String, FileStamp);

impl AppState {
    /// The state, and the thread that reads the store into it: at once,
    /// then every `CHECK_EVERY` (100 ms) until the state is dropped.
    pub fn new(
        store: Store,
        token: Option<&str>,
        public_url: Option<String>,
        tls: bool,
    ) -> Arc<Self> {
        let metrics = Metrics::default();
        let registry = metrics.registry();
        let (stop, stopped) = mpsc::channel();
        let state = Arc::new(Self {
            store,
            index: ArcSwap::from_pointee(Index::default()),
            generation: AtomicU64::new(0),
            watch: Mutex::new(Watch::default()),
            ready: AtomicBool::new(false),
            problem: Mutex::new(None),
            _stop: stop,
            json_cache: Default::default(),
            builders: tokio::sync::Semaphore::new(
                std::thread::available_parallelism().map_or(2, |n| n.get()),
            ),
            metrics: Arc::new(metrics),
            registry,
            token_sha256: token.map(super::auth::token_digest),
            public_url: public_url.map(|u| u.trim_end_matches('/').to_string()),
            tls,
            misses: super::misses::MissLog::new(super::misses::DEFAULT_CAPACITY),
            instance: super::misses::instance_name(),
            layer_digests: Mutex::new(LayerDigests::default()),
            rebuild: AtomicBool::new(false),
            pending: Mutex::new(Vec::new()),
            hashing: Arc::new(AtomicBool::new(false)),
        });
        if let Ok(mut d) = state.layer_digests.lock() {
            *d = LayerDigests::load(&state.store);
        }
        // A restart keeps counting where this server's misses file left off.
        let own = state
            .store
            .state_dir()
            .join(super::misses::file_name(&state.instance));
        if let Some(misses) = super::misses::read_one(&own) {
            state.misses.restore(misses);
        }
        let weak = Arc::downgrade(&state);
        let spawned = std::thread::Builder::new()
            .name("llmgw-index".into())
            .spawn(move || keep_current(&weak, &stopped));
        if let Err(e) = spawned {
            // Without the thread nothing would ever read the store: say so
            // where /readyz looks, rather than "being read" for ever.
            tracing::error!(error = %e, "cannot start the thread that reads the store");
            if let Ok(mut p) = state.problem.lock() {
                *p = Some(format!(
                    "cannot start the thread that reads the store ({e}); restart the server \
                     with more threads or memory available"
                ));
            }
        }
        state
    }

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

    /// Reads the store if it changed (or `force`), on the caller's thread;
    /// the refresh thread calls it, and so may a test. A caller that does
    /// not force does not wait for another one already reading.
    pub fn refresh(&self, force: bool) {
        let force = force || self.rebuild.swap(false, Ordering::AcqRel);
        let mut watch = if force {
            match self.watch.lock() {
                Ok(w) => w,
                Err(p) => p.into_inner(),
            }
        } else {
            match self.watch.try_lock() {
                Ok(w) => w,
                Err(_) => return,
            }
        };
        let Some((ids, files)) = self.changed(&mut watch, force) else {
            return;
        };
        let (index, pending) = self.build(ids, &files, &mut watch);
        self.publish(index, pending);
        watch.files = files;
    }

    /// The bundles held (not yet in import order) and the files
    /// they are read from, when the store changed since the index was
    /// built (or `force`); `None` when it did not, or cannot be listed
    /// (then said where `/readyz` looks).
    fn changed(&self, watch: &mut Watch, force: bool) -> Option<(Vec<BundleId>, Vec<WatchedFile>)> {
        let dir = self.store.bundles_dir();
        let state_path = state::path(&self.store);
        // The policy says which series move names: following another is a
        // change of what is served, like an import.
        let policy_path = self.store.state_dir().join("policy.json");
        let mtime = std::fs::metadata(&dir).and_then(|m| m.modified()).ok();
        let state_mtime = [&state_path, &policy_path]
            .iter()
            .filter_map(|p| std::fs::metadata(p).and_then(|m| m.modified()).ok())
            .max();
        let recent = [mtime, state_mtime].iter().any(|t| {
            t.and_then(|t| SystemTime::now().duration_since(t).ok())
                .is_some_and(|age| age < RECENT)
        }) || mtime.is_none();
        if !force && mtime == watch.mtime && state_mtime == watch.state_mtime && !recent {
            return None;
        }
        watch.mtime = mtime;
        watch.state_mtime = state_mtime;
        let ids = match self.store.bundle_ids() {
            Ok(ids) => ids,
            Err(e) => {
                tracing::error!(error = %Chain(&e), "cannot list the bundles held; serving the previous index");
                self.metrics.reload_errors.inc();
                // Look again next time, whatever the folder's times say.
                watch.mtime = None;
                watch.state_mtime = None;
                if let Ok(mut p) = self.problem.lock() {
                    *p = Some(chain(&e));
                }
                return None;
            }
        };
        let mut files: Vec<WatchedFile> = ids
            .iter()
            .map(|id| {
                let id_file = file_id(&self.store.bundle_file(id));
                (id.to_string(), id_file)
            })
            .collect();
        files.push((String::new(), file_id(&state_path)));
        files.push((String::new(), file_id(&policy_path)));
        if !force && files == watch.files && self.is_ready() {
            return None;
        }
        Some((ids, files))
    }

    /// Swaps `index` in under the next generation number, with its metrics,
    /// and marks the server ready.
    fn publish(&self, mut index: Index, pending: Vec<Pending>) {
        index.generation = self.generation.load(Ordering::Acquire) + 1;
        self.metrics.bundles.set(index.bundles.len() as i64);
        self.metrics.blobs.set(index.blob_count as i64);
        self.metrics.blob_bytes.set(index.blob_bytes as i64);
        self.metrics.reloads.inc();
        tracing::info!(
            bundles = index.bundles.len(),
            releases = index.releases.len(),
            repos = index.repos.len(),
            blobs = index.blob_count,
            "store read"
        );
        let generation = index.generation;
        self.index.store(Arc::new(index));
        self.generation.store(generation, Ordering::Release);
        if let Ok(mut p) = self.problem.lock() {
            *p = None;
        }
        self.ready.store(true, Ordering::Release);
        if let Ok(mut p) = self.pending.lock() {
            *p = pending;
        }
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

/// The refresh thread's loop: reads the store at once, then looks again
/// every [`CHECK_EVERY`]; ends when the state is dropped.
fn keep_current(state: &Weak<AppState>, stopped: &mpsc::Receiver<()>) {
    let mut force = true;
    let mut last_save = std::time::Instant::now();
    loop {
        let Some(s) = state.upgrade() else { return };
        let before = s.generation();
        s.refresh(force);
        if s.generation() != before {
            // What the build parsed is dropped by now.
            super::heap::give_back_freed();
        }
        hash_pending(&s, state);
        if last_save.elapsed() >= SAVE_MISSES_EVERY {
            s.save_misses();
            last_save = std::time::Instant::now();
        }
        drop(s);
        force = false;
        match stopped.recv_timeout(CHECK_EVERY) {
            Err(mpsc::RecvTimeoutError::Timeout) => {}
            Ok(()) | Err(mpsc::RecvTimeoutError::Disconnected) => return,
        }
    }
}
