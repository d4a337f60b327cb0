//! The thread that keeps the server's index current (`llmgw-index`):
//! it reads the store into the state ([`AppState::new`] starts it), builds
//! each next index and what is made from it before it is served
//! ([`build`]), hashes the models' layers an index left out
//! ([`layers`]), and makes the Xet records it found missing ([`xet`]).
//!
//! Invariant: a request never waits on the store's folders: it only loads
//! the index this thread swapped in whole.
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

mod build;
mod layers;
mod xet;

use super::index::Index;
use super::state::{AppState, SAVE_MISSES_EVERY, Watch, WatchedFile};
use crate::serve::index::hub::heads::file_id;
use crate::serve::index::oci::models::{LayerDigests, Pending};
use crate::serve::ops::metrics::Metrics;
use crate::store::Store;
use crate::store::state;
use layers::hash_pending;

/// How long after a change the listing is re-read on every check: longer
/// than any file-time tick.
const RECENT: Duration = Duration::from_secs(2);

/// How often the refresh thread looks at `bundles/`: a new bundle is
/// served within about this long, and an idle server costs three `stat`s
/// per tick.
pub const CHECK_EVERY: Duration = Duration::from_millis(100);

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
            xet_making: Arc::new(AtomicBool::new(false)),
            xet_tried: Mutex::new(Default::default()),
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
        xet::make_missing(&s, state);
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
