//! Where a store is ([`StoreLocation`]: a folder, or a bucket reached
//! through a local work folder) and the one transaction every command runs
//! on it ([`StoreLocation::transact`]): lock, pull, work, publish — blobs
//! first, manifests last. The command line only says where; opening,
//! locking, copying and publishing are here, once, for every command.
//!
//! Invariant: a command that writes to a bucket holds the store's lock
//! object for its whole run, copies the bucket's small files into the work
//! folder before it reads any, and publishes ([`Session::publish`], i.e.
//! [`Remote::push`]) only after its work in the folder succeeded. A folder
//! store is its own work folder: its commands' writes are published as
//! they commit (manifests last), under the store lock each one takes.

use std::path::{Path, PathBuf};

use thiserror::Error;

use super::remote::{OwnFile, Pushed, Remote, RemoteLock};
use super::s3::{S3Blobs, S3Config};
use super::{Store, StoreError};

/// Where a store is, as the command line names it.
#[derive(Debug, Clone)]
pub enum StoreLocation {
    /// A store folder (`--store DIR`).
    Folder(PathBuf),
    /// A store in S3-compatible object storage (`--store s3://BUCKET/PREFIX`).
    Bucket(BucketLocation),
}

/// A store in a bucket: how to reach it, and where its work folder is.
#[derive(Debug, Clone)]
pub struct BucketLocation {
    /// The address, endpoint, region (and, for tests and presigning,
    /// credentials) of the bucket.
    pub config: S3Config,
    /// `--work-dir`: the local folder its manifests and state are copied
    /// into; when unset, [`work_dir`] picks one.
    pub work_dir: Option<PathBuf>,
}

/// How the command line reaches a bucket: `--s3-endpoint`, `--s3-region`,
/// `--work-dir` (or their variables).
#[derive(Debug, Clone, Default)]
pub struct BucketAccess {
    /// The S3 server's URL.
    pub endpoint: Option<String>,
    /// The bucket's region.
    pub region: Option<String>,
    /// The work folder, when given.
    pub work_dir: Option<PathBuf>,
}

/// Why a store could not be opened or published.
#[derive(Debug, Error)]
pub enum SessionError {
    /// The runtime that runs a bucket's requests.
    #[error("starting the async runtime")]
    Runtime(#[source] std::io::Error),
    /// The work folder of a bucket.
    #[error("creating {}", path.display())]
    WorkDir {
        /// The folder.
        path: PathBuf,
        /// Why it could not be made.
        #[source]
        source: std::io::Error,
    },
    /// Connecting, or taking the lock object.
    #[error(transparent)]
    Store(Box<StoreError>),
    /// Copying the bucket's small files into the work folder.
    #[error("copying the manifests and state of {url}")]
    Pull {
        /// The store's `s3://` URL.
        url: String,
        /// What failed.
        #[source]
        source: Box<StoreError>,
    },
    /// Sending what the work changed up to the bucket.
    #[error("publishing to {url}")]
    Publish {
        /// The store's `s3://` URL.
        url: String,
        /// What failed.
        #[source]
        source: Box<StoreError>,
    },
}

impl From<StoreError> for SessionError {
    fn from(e: StoreError) -> Self {
        SessionError::Store(Box::new(e))
    }
}

impl StoreLocation {
    /// `store` as given to `--store`: `s3://…` is a bucket reached with
    /// `access`, anything else a folder.
    pub fn new(store: &Path, access: &BucketAccess) -> Self {
        match store.to_str().filter(|p| p.starts_with("s3://")) {
            None => StoreLocation::Folder(store.to_path_buf()),
            Some(url) => StoreLocation::Bucket(BucketLocation {
                config: S3Config {
                    url: url.to_string(),
                    endpoint: access.endpoint.clone(),
                    region: access.region.clone(),
                    credentials: None,
                    presign: None,
                },
                work_dir: access.work_dir.clone(),
            }),
        }
    }

    /// The folder or the `s3://` URL, as the operator gave it.
    pub fn display(&self) -> String {
        match self {
            StoreLocation::Folder(p) => p.display().to_string(),
            StoreLocation::Bucket(b) => b.config.url.clone(),
        }
    }

    /// Whether the store is in a bucket.
    pub fn is_bucket(&self) -> bool {
        matches!(self, StoreLocation::Bucket(_))
    }

    /// Opens the store: a folder as it is; a bucket through its work
    /// folder, under its lock object when `writer` names the command (a
    /// writer's work folder is the durable one, [`work_dir`]), its small
    /// files copied in.
    pub fn open(&self, writer: Option<&str>) -> Result<Session, SessionError> {
        let b = match self {
            StoreLocation::Folder(p) => {
                return Ok(Session {
                    store: Store::at(p),
                    bucket: None,
                });
            }
            StoreLocation::Bucket(b) => b,
        };
        let rt = tokio::runtime::Builder::new_multi_thread()
            .worker_threads(2)
            .enable_all()
            .build()
            .map_err(SessionError::Runtime)?;
        let s3 = S3Blobs::connect(&b.config, rt.handle().clone())?;
        let (work, work_is_temp) = work_dir(b, writer.is_some())?;
        let mut remote = Remote::new(s3, work);
        let lock = writer.map(|w| remote.lock(w)).transpose()?;
        remote.pull().map_err(|source| SessionError::Pull {
            url: b.config.url.clone(),
            source: Box::new(source),
        })?;
        Ok(Session {
            store: Store::in_bucket(remote.work(), remote.s3().clone()),
            bucket: Some(BucketHold {
                remote,
                lock,
                work_is_temp,
                _rt: rt,
            }),
        })
    }

    /// The one transaction: opens the store (under its lock object when
    /// `writer` names the command), runs `work` on it, and when `work`
    /// succeeded and wrote, publishes what it changed — blobs first,
    /// manifests last.
    pub fn transact<T, E: From<SessionError>>(
        &self,
        writer: Option<&str>,
        work: impl FnOnce(&Store) -> Result<T, E>,
    ) -> Result<T, E> {
        let mut session = self.open(writer)?;
        let out = work(session.store())?;
        if writer.is_some() {
            session.publish()?;
        }
        Ok(out)
    }
}

/// A command's hold on a store: the store to work on and, for a bucket,
/// its lock object, work folder and the runtime its requests run on.
pub struct Session {
    store: Store,
    bucket: Option<BucketHold>,
}

/// What a session holds of a bucket.
struct BucketHold {
    remote: Remote,
    /// Held for the session; released before the runtime goes.
    lock: Option<RemoteLock>,
    work_is_temp: bool,
    /// Runs the requests; declared last, so dropped after the client.
    _rt: tokio::runtime::Runtime,
}

impl Drop for BucketHold {
    fn drop(&mut self) {
        drop(self.lock.take());
        if self.work_is_temp {
            let _ = std::fs::remove_dir_all(self.remote.work());
        }
    }
}

impl Session {
    /// The store to work on: the folder, or the bucket's work folder with
    /// its blobs in the bucket.
    pub fn store(&self) -> &Store {
        &self.store
    }

    /// Publishes what the work changed: for a bucket, every blob of the
    /// work folder, then the small files that changed, manifests last
    /// ([`Remote::push`]); `None` for a folder, whose writes are published
    /// as they commit.
    pub fn publish(&mut self) -> Result<Option<Pushed>, SessionError> {
        let Some(b) = &mut self.bucket else {
            return Ok(None);
        };
        let url = b.remote.s3().url().to_string();
        b.remote
            .push()
            .map(Some)
            .map_err(|source| SessionError::Publish {
                url,
                source: Box::new(source),
            })
    }
}

/// The bucket's work folder: `--work-dir`; else, when `durable` (a command
/// that writes to the bucket, under its lock object, so one process at a
/// time), the store's own folder under the user's cache folder
/// ([`durable_work_dir`]); else a new temporary folder. Answers whether it
/// is a temporary one (removed when the session ends).
pub fn work_dir(b: &BucketLocation, durable: bool) -> Result<(PathBuf, bool), SessionError> {
    let made = |d: &Path| {
        std::fs::create_dir_all(d).map_err(|source| SessionError::WorkDir {
            path: d.to_path_buf(),
            source,
        })
    };
    if let Some(d) = &b.work_dir {
        made(d)?;
        return Ok((d.clone(), false));
    }
    if let Some(d) = durable.then(|| durable_work_dir(b)).flatten() {
        match std::fs::create_dir_all(&d) {
            Ok(()) => {
                tracing::info!(work_dir = %d.display(), "the store's work folder (kept: a stopped import resumes from it)");
                return Ok((d, false));
            }
            // A home folder that cannot be written (a container's) is no
            // reason to fail: the command works as it did before, in a
            // temporary folder, and says what that costs.
            Err(e) => tracing::warn!(
                work_dir = %d.display(),
                error = %e,
                "cannot make the store's work folder; using a temporary one, so a stopped import \
                 will not resume from it: give --work-dir"
            ),
        }
    }
    let d = std::env::temp_dir().join(format!(
        "llmgw-s3-{}-{}",
        std::process::id(),
        std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .map(|d| d.as_nanos())
            .unwrap_or(0)
    ));
    made(&d)?;
    Ok((d, true))
}

/// The work folder a store in a bucket keeps between runs when no
/// `--work-dir` is given: `$XDG_CACHE_HOME/llmgw/s3/<hash>` (else
/// `$HOME/.cache/llmgw/s3/<hash>`), the hash the first 32 hex digits of
/// the sha256 of the store URL (without a trailing `/`) and the endpoint,
/// so the same store reached the same way always finds its folder, and two
/// stores never share one. `None` when neither variable names a folder.
pub fn durable_work_dir(b: &BucketLocation) -> Option<PathBuf> {
    let var = |k: &str| {
        std::env::var_os(k)
            .filter(|v| !v.is_empty())
            .map(PathBuf::from)
            .filter(|p| p.is_absolute())
    };
    let root = var("XDG_CACHE_HOME").or_else(|| var("HOME").map(|h| h.join(".cache")))?;
    let key = format!(
        "{}\n{}",
        b.config.url.trim_end_matches('/'),
        b.config.endpoint.as_deref().unwrap_or("")
    );
    let hash = llmgw_shared::sha256_hex(key.as_bytes());
    Some(root.join("llmgw").join("s3").join(&hash[..32]))
}

/// How a server follows a store in a bucket: how often it copies the
/// bucket's small files again, and the read-through cache of whole blobs
/// it keeps, if any.
#[derive(Debug, Clone)]
pub struct BucketServing {
    /// How often the bucket's manifests are listed, so a replica learns
    /// of bundles another import added.
    pub poll: std::time::Duration,
    /// The folder whole blobs are kept in once read from the bucket.
    pub cache_dir: Option<PathBuf>,
    /// The most bytes that folder holds; unbounded when unset.
    pub cache_size: Option<u64>,
}

impl Default for BucketServing {
    fn default() -> Self {
        Self {
            poll: std::time::Duration::from_secs(5),
            cache_dir: None,
            cache_size: None,
        }
    }
}

impl StoreLocation {
    /// Opens the store for a server running on the current tokio runtime:
    /// a folder as it is; a bucket through a fresh temporary work folder (a
    /// replica's pulls must not remove what an import on the same host
    /// staged), its small files copied in, with the [`Remote`] the server
    /// keeps pulling through.
    pub(crate) async fn open_served(
        &self,
        serving: &BucketServing,
    ) -> Result<(Store, Option<Follower>), SessionError> {
        let b = match self {
            StoreLocation::Folder(p) => return Ok((Store::at(p), None)),
            StoreLocation::Bucket(b) => b,
        };
        let mut s3 = S3Blobs::connect(&b.config, tokio::runtime::Handle::current())?;
        // A task that panicked: named by the folder it worked on.
        let lost = |dir: &Path| {
            let dir = dir.to_path_buf();
            move |e| StoreError::io(dir, std::io::Error::other(e))
        };
        if let Some(dir) = serving.cache_dir.clone() {
            let limit = serving.cache_size;
            let failed = lost(&dir);
            s3 = tokio::task::spawn_blocking(move || s3.with_cache(&dir, limit))
                .await
                .map_err(failed)??;
        }
        let (work, _) = work_dir(b, false)?;
        let failed = lost(&work);
        let mut remote = Remote::new(s3, work);
        let url = b.config.url.clone();
        let remote = tokio::task::spawn_blocking(move || remote.pull().map(|_| remote))
            .await
            .map_err(failed)?
            .map_err(|source| SessionError::Pull {
                url,
                source: Box::new(source),
            })?;
        Ok((
            Store::in_bucket(remote.work(), remote.s3().clone()),
            Some(Follower { remote }),
        ))
    }
}

/// What a [`Follower`] follows for: the server's state, which it reports
/// a failed copy to, and whose going stops it.
pub trait Served: Send + Sync + 'static {
    /// A copy to or from the bucket failed (the index serves what it had).
    fn failed(&self);
}

/// A served bucket store's follower: keeps the work folder a copy of the
/// bucket's small files, so a replica learns of a bundle another one's
/// import added, and sends up what this replica writes itself.
pub struct Follower {
    remote: Remote,
}

impl Follower {
    /// Follows the bucket on a thread of its own, every `poll`, until
    /// `state` is gone; `own` are the state files this replica writes
    /// itself ([`OwnFile`]).
    pub fn start<F: Served>(
        mut self,
        own: Vec<OwnFile>,
        poll: std::time::Duration,
        state: std::sync::Weak<F>,
    ) -> std::io::Result<()> {
        self.remote.keep_own(own);
        std::thread::Builder::new()
            .name("llmgw-s3-poll".into())
            .spawn(move || self.follow(&state, poll))
            .map(drop)
    }

    /// Copies the bucket's small files into the work folder every `poll`
    /// until the server's state is gone; a failed copy is logged and tried
    /// again at the next tick, the index serving what it had. Before each
    /// copy, what this replica wrote into its state (its miss log, the
    /// layer digests it learned) goes up, so another replica and a
    /// restart read it.
    fn follow<F: Served>(mut self, state: &std::sync::Weak<F>, poll: std::time::Duration) {
        let remote = &mut self.remote;
        loop {
            std::thread::sleep(poll);
            let Some(s) = state.upgrade() else { return };
            if let Err(e) = remote.push_own() {
                s.failed();
                tracing::error!(error = %llmgw_shared::chain(&e), "cannot send this replica's state (miss log, layer digests) to the bucket; trying again");
            }
            match remote.pull() {
                Ok(true) => tracing::info!(store = %remote.s3().url(), "bucket changed; copied"),
                Ok(false) => {}
                Err(e) => {
                    s.failed();
                    tracing::error!(error = %llmgw_shared::chain(&e), "cannot read the bucket; serving the previous index");
                }
            }
        }
    }
}

impl From<PathBuf> for StoreLocation {
    fn from(folder: PathBuf) -> Self {
        StoreLocation::Folder(folder)
    }
}
