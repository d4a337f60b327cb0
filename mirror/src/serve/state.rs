//! The server's state: the store, the current index and the settings.
//!
//! The index is rebuilt when `bundles/` changes, so a bundle imported while
//! the server runs is served without a restart. Each request looks at the
//! folder's mtime and the import order's (two `stat`s); the listing is read
//! again only when one moved or is so recent that a second change could
//! share it (file times tick coarsely), and the index is rebuilt only when
//! what is listed differs: the set of manifests, or any manifest's file
//! (inode, size, mtime) — so a manifest repaired by importing it again is
//! served at once — or the import order. Import writes a manifest last,
//! atomically, so a listed bundle is complete.

use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Arc, Mutex, RwLock};
use std::time::{Duration, Instant, SystemTime};

use prometheus_client::registry::Registry;

use super::index::Index;
use super::metrics::Metrics;
use crate::state::{self, ImportOrder};
use crate::store::Store;

/// How long after a change the listing is re-read on every check: longer
/// than any file-time tick.
const RECENT: Duration = Duration::from_secs(2);

/// How often requests look at `bundles/`: a new bundle is served within
/// this long, and a busy server does not `stat` on every request.
const CHECK_EVERY_MS: u64 = 100;

/// What the server needs to answer a request.
pub struct AppState {
    pub store: Store,
    index: RwLock<Arc<Index>>,
    watch: Mutex<Watch>,
    ready: AtomicBool,
    /// Why the last read of the store failed, until one succeeds.
    problem: Mutex<Option<String>>,
    started: Instant,
    /// Milliseconds after `started` of the last look at `bundles/`.
    last_check_ms: AtomicU64,
    /// JSON answers already built from the current index.
    pub json_cache: super::cache::JsonCache,
    pub metrics: Metrics,
    pub registry: Registry,
    /// sha256 of the bearer token, when one is required.
    pub token_sha256: Option<[u8; 32]>,
    /// `--public-url`, without a trailing `/`.
    pub public_url: Option<String>,
    /// Whether this server speaks TLS (the scheme of URLs it builds from `Host`).
    pub tls: bool,
}

/// Whether the server can answer from the store yet.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Readiness {
    /// The store was read; it holds this many bundles.
    Ready { bundles: usize },
    /// The first read has not finished.
    Reading,
    /// The store could not be read, for this reason; tried again.
    Failing(String),
}

#[derive(Default)]
struct Watch {
    mtime: Option<SystemTime>,
    state_mtime: Option<SystemTime>,
    /// What the index was built from: each manifest's file, and the
    /// import order's.
    files: Vec<(String, Option<FileId>)>,
}

/// Enough of a file's metadata to tell that it was replaced or changed.
#[derive(Debug, Clone, PartialEq, Eq)]
struct FileId {
    ino: u64,
    len: u64,
    mtime: Option<SystemTime>,
}

fn file_id(path: &std::path::Path) -> Option<FileId> {
    use std::os::unix::fs::MetadataExt;
    let m = std::fs::metadata(path).ok()?;
    Some(FileId {
        ino: m.ino(),
        len: m.len(),
        mtime: m.modified().ok(),
    })
}

impl AppState {
    pub fn new(
        store: Store,
        token: Option<&str>,
        public_url: Option<String>,
        tls: bool,
    ) -> Arc<Self> {
        let metrics = Metrics::default();
        let registry = metrics.registry();
        Arc::new(Self {
            store,
            index: RwLock::new(Arc::new(Index::default())),
            watch: Mutex::new(Watch::default()),
            ready: AtomicBool::new(false),
            problem: Mutex::new(None),
            started: Instant::now(),
            last_check_ms: AtomicU64::new(0),
            json_cache: Default::default(),
            metrics,
            registry,
            token_sha256: token.map(super::auth::token_digest),
            public_url: public_url.map(|u| u.trim_end_matches('/').to_string()),
            tls,
        })
    }

    /// Whether the store has been read once.
    pub fn is_ready(&self) -> bool {
        self.ready.load(Ordering::Acquire)
    }

    /// What `/readyz` answers: ready (with what is held), the store being
    /// read for the first time, or why it cannot be read (it is tried
    /// again at every look, so this never sticks once the cause is gone).
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
        Readiness::Ready {
            bundles: index.bundles.len(),
        }
    }

    /// The index, after a cheap check that `bundles/` has not changed
    /// (or, until the store was read once, another try at reading it).
    pub fn index(&self) -> Arc<Index> {
        let now = self.started.elapsed().as_millis() as u64;
        let last = self.last_check_ms.load(Ordering::Relaxed);
        if now.saturating_sub(last) >= CHECK_EVERY_MS
            && self
                .last_check_ms
                .compare_exchange(last, now, Ordering::Relaxed, Ordering::Relaxed)
                .is_ok()
        {
            self.refresh(false);
        }
        self.index.read().map(|i| i.clone()).unwrap_or_default()
    }

    /// Reads the store if it changed (or `force`). Concurrent callers do
    /// not wait: whoever holds the lock refreshes, the others answer from
    /// the index they have.
    pub fn refresh(&self, force: bool) {
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
        let dir = self.store.bundles_dir();
        let state_path = state::path(&self.store);
        let mtime = std::fs::metadata(&dir).and_then(|m| m.modified()).ok();
        let state_mtime = std::fs::metadata(&state_path)
            .and_then(|m| m.modified())
            .ok();
        let recent = [mtime, state_mtime].iter().any(|t| {
            t.and_then(|t| SystemTime::now().duration_since(t).ok())
                .is_some_and(|age| age < RECENT)
        }) || mtime.is_none();
        if !force && mtime == watch.mtime && state_mtime == watch.state_mtime && !recent {
            return;
        }
        watch.mtime = mtime;
        watch.state_mtime = state_mtime;
        let mut ids = match self.store.bundle_ids() {
            Ok(ids) => ids,
            Err(e) => {
                tracing::error!(error = %e, "cannot list the bundles held; serving the previous index");
                self.metrics.reload_errors.inc();
                // Look again next time, whatever the folder's times say.
                watch.mtime = None;
                watch.state_mtime = None;
                if let Ok(mut p) = self.problem.lock() {
                    *p = Some(e.to_string());
                }
                return;
            }
        };
        let mut files: Vec<(String, Option<FileId>)> = ids
            .iter()
            .map(|id| {
                let id_file = self.store.bundle_path(id).and_then(|p| file_id(&p));
                (id.clone(), id_file)
            })
            .collect();
        files.push((String::new(), file_id(&state_path)));
        if !force && files == watch.files && self.is_ready() {
            return;
        }
        let order = ImportOrder::load(&self.store).unwrap_or_else(|e| {
            tracing::error!(error = %e, "import order unreadable; ordering bundles by their manifests' file times");
            ImportOrder::default()
        });
        order.sort(&self.store, &mut ids);
        let mut manifests = Vec::new();
        for id in &ids {
            match self.store.read_bundle(id) {
                Ok(m) => manifests.push((id.clone(), m)),
                Err(e) => {
                    self.metrics.reload_errors.inc();
                    tracing::error!(bundle = %id, error = %e, "bundle not served");
                }
            }
        }
        crate::series::order_by_sequence(&self.store, &mut manifests);
        let mut index = Index::build(&manifests);
        let signers = super::freshness::signers(&self.store, &manifests);
        index.latest = super::freshness::signed_latest(&manifests, &signers);
        if let Ok(mut f) = self.metrics.freshness.lock() {
            *f = super::freshness::of(&self.store, &manifests, &signers);
        }
        index.generation = self.metrics.reloads.get() + 1;
        self.metrics.bundles.set(index.bundles.len() as i64);
        self.metrics.blobs.set(index.blobs.len() as i64);
        self.metrics
            .blob_bytes
            .set(index.blobs.values().sum::<u64>() as i64);
        self.metrics.reloads.inc();
        tracing::info!(
            bundles = index.bundles.len(),
            releases = index.releases.len(),
            repos = index.repos.len(),
            blobs = index.blobs.len(),
            "store read"
        );
        if let Ok(mut slot) = self.index.write() {
            *slot = Arc::new(index);
        }
        watch.files = files;
        if let Ok(mut p) = self.problem.lock() {
            *p = None;
        }
        self.ready.store(true, Ordering::Release);
    }
}
