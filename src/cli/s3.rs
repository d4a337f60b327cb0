//! `--store s3://BUCKET/PREFIX`: the flags that reach an S3-compatible
//! store, and the session a command works on it through (a runtime for the
//! requests, the local work folder, the store's lock object).
//!
//! Invariant: a command that writes to a bucket holds its lock object for
//! the whole run, copies the bucket's small files into the work folder
//! before it reads any, and publishes with [`Remote::push`] (blobs first,
//! manifests last) only after the command succeeded in the folder.

use std::path::{Path, PathBuf};

use anyhow::Context;
use clap::Args;
use llmgw_mirror::{Remote, RemoteLock};
use llmgw_mirror::{S3Blobs, S3Config};

use crate::cli::StoreArg;

/// How to reach a store in S3-compatible object storage; credentials come
/// from `AWS_ACCESS_KEY_ID` and `AWS_SECRET_ACCESS_KEY` (or the other usual
/// `AWS_*` variables).
#[derive(Args, Debug, Clone)]
pub struct S3Arg {
    /// With --store s3://BUCKET/PREFIX: the S3 server's URL (Ceph RGW, Garage, MinIO…);
    /// requests are path-style. Plain http:// is allowed when given here.
    #[arg(long, env = "AWS_ENDPOINT_URL", value_name = "URL")]
    pub s3_endpoint: Option<String>,
    /// With --store s3://…: the bucket's region.
    #[arg(long, env = "AWS_REGION", value_name = "REGION")]
    pub s3_region: Option<String>,
    /// With --store s3://…: the local folder the store's manifests and state are copied
    /// into (and an import stages its bundle in: room for one bundle). When unset, a
    /// command that writes to the bucket (import, gc, trust add/remove, remove, policy,
    /// have, verify) uses a folder of its own for that store, the same on every run:
    /// $XDG_CACHE_HOME/llmgw/s3/HASH (else ~/.cache/…; HASH of the store URL and the
    /// endpoint), so a stopped import, or a volume set taken in over several runs, picks
    /// up where it stopped; `mirror serve` and the commands that only read use a fresh
    /// temporary folder.
    #[arg(long, env = "LLMGW_WORK_DIR", value_name = "DIR")]
    pub work_dir: Option<PathBuf>,
}

impl StoreArg {
    /// The `s3://` URL when the store is in a bucket.
    pub fn s3_url(&self) -> Option<&str> {
        self.path.to_str().filter(|p| p.starts_with("s3://"))
    }
}

/// A command's hold on a store in a bucket.
pub struct S3Session {
    pub remote: Remote,
    /// Held for the session; dropped before the runtime.
    lock: Option<RemoteLock>,
    work_is_temp: bool,
    /// Runs the requests; declared last, so dropped after the client.
    _rt: tokio::runtime::Runtime,
}

impl S3Session {
    /// Connects, takes the lock object when `writer` names the command, and
    /// copies the bucket's small files into the work folder.
    pub fn open(url: &str, a: &S3Arg, writer: Option<&str>) -> anyhow::Result<Self> {
        let rt = tokio::runtime::Builder::new_multi_thread()
            .worker_threads(2)
            .enable_all()
            .build()
            .context("starting the async runtime")?;
        let s3 = S3Blobs::connect(&config(url, a), rt.handle().clone())?;
        let (work, work_is_temp) = work_dir(url, a, writer.is_some())?;
        let mut remote = Remote::new(s3, work);
        let lock = writer.map(|w| remote.lock(w)).transpose()?;
        remote
            .pull()
            .with_context(|| format!("copying the manifests and state of {url}"))?;
        Ok(Self {
            remote,
            lock,
            work_is_temp,
            _rt: rt,
        })
    }

    pub fn work(&self) -> &Path {
        self.remote.work()
    }

    /// The store as the mirror library works on it: the work folder, blobs
    /// in the bucket.
    pub fn store(&self) -> llmgw_mirror::Store {
        llmgw_mirror::Store::at(self.work()).with_remote(self.remote.s3().clone())
    }
}

impl Drop for S3Session {
    fn drop(&mut self) {
        drop(self.lock.take());
        if self.work_is_temp {
            let _ = std::fs::remove_dir_all(self.remote.work());
        }
    }
}

/// The S3 settings of `url` and the flags.
pub fn config(url: &str, a: &S3Arg) -> S3Config {
    S3Config {
        url: url.to_string(),
        endpoint: a.s3_endpoint.clone(),
        region: a.s3_region.clone(),
        credentials: None,
        presign: None,
    }
}

/// `--work-dir`; else, when `durable` (a command that writes to the
/// bucket, under its lock object, so one process at a time), the store's
/// own folder under the user's cache folder ([`durable_work_dir`]); else a
/// new temporary folder. Answers whether it is a temporary one (removed
/// when the session ends).
pub fn work_dir(url: &str, a: &S3Arg, durable: bool) -> anyhow::Result<(PathBuf, bool)> {
    if let Some(d) = &a.work_dir {
        std::fs::create_dir_all(d).with_context(|| format!("creating {}", d.display()))?;
        return Ok((d.clone(), false));
    }
    if let Some(d) = durable.then(|| durable_work_dir(url, a)).flatten() {
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
    std::fs::create_dir_all(&d).with_context(|| format!("creating {}", d.display()))?;
    Ok((d, true))
}

/// The work folder a store in a bucket keeps between runs when no
/// `--work-dir` is given: `$XDG_CACHE_HOME/llmgw/s3/<hash>` (else
/// `$HOME/.cache/llmgw/s3/<hash>`), the hash the first 32 hex digits of
/// the sha256 of the store URL (without a trailing `/`) and the endpoint,
/// so the same store reached the same way always finds its folder, and two
/// stores never share one. `None` when neither variable names a folder.
pub fn durable_work_dir(url: &str, a: &S3Arg) -> Option<PathBuf> {
    let var = |k: &str| {
        std::env::var_os(k)
            .filter(|v| !v.is_empty())
            .map(PathBuf::from)
            .filter(|p| p.is_absolute())
    };
    let root = var("XDG_CACHE_HOME").or_else(|| var("HOME").map(|h| h.join(".cache")))?;
    let key = format!(
        "{}\n{}",
        url.trim_end_matches('/'),
        a.s3_endpoint.as_deref().unwrap_or("")
    );
    let hash = llmgw_shared::sha256_hex(key.as_bytes());
    Some(root.join("llmgw").join("s3").join(&hash[..32]))
}

impl S3Arg {
    /// The settings from the environment alone, for the commands that take
    /// no S3 flags.
    pub fn from_env() -> Self {
        let var = |k: &str| std::env::var(k).ok().filter(|v| !v.is_empty());
        Self {
            s3_endpoint: var("AWS_ENDPOINT_URL"),
            s3_region: var("AWS_REGION"),
            work_dir: var("LLMGW_WORK_DIR").map(PathBuf::from),
        }
    }
}

/// Runs `f` on the store `--store` names: a folder as it is; a bucket
/// (reached with the `AWS_*` variables, worked on in `LLMGW_WORK_DIR` or
/// the folder [`work_dir`] picks) through its work folder — and when `writer` names the
/// command, under the store's lock object, publishing what `f` changed once
/// it succeeded.
pub fn with_store<T>(
    arg: &StoreArg,
    writer: Option<&str>,
    f: impl FnOnce(&llmgw_mirror::Store) -> anyhow::Result<T>,
) -> anyhow::Result<T> {
    let Some(url) = arg.s3_url() else {
        return f(&llmgw_mirror::Store::at(&arg.path));
    };
    let mut session = S3Session::open(url, &S3Arg::from_env(), writer)?;
    let out = f(&session.store())?;
    if writer.is_some() {
        session
            .remote
            .push()
            .with_context(|| format!("publishing to {url}"))?;
    }
    Ok(out)
}
