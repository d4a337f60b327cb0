//! Why a Python environment could not be carried. Each message names the
//! environment and the file, what its publisher says and what was found,
//! and what the operator can do.

use std::path::PathBuf;

use crate::limits::MAX_LOCK_BYTES;

#[derive(Debug, thiserror::Error)]
pub enum PythonError {
    /// No uv to resolve with.
    #[error(
        "no uv to resolve Python environments with: {tried}; install uv (pip install uv) or \
         pass --uv PATH"
    )]
    UvNotFound { tried: String },

    /// uv did not say its version.
    #[error("{}: {detail}", .uv.display())]
    UvUnusable { uv: PathBuf, detail: String },

    /// uv could not be started.
    #[error("{}: cannot run it", .uv.display())]
    UvRun {
        uv: PathBuf,
        #[source]
        error: std::io::Error,
    },

    /// uv's resolution failed for a reason other than a missing wheel;
    /// `hint` (empty, or `; at manylinux_2_34 …`) names a later manylinux
    /// tag that resolves when uv refused for the platform.
    #[error("{env}: uv pip compile failed ({status}): {stderr}{hint}")]
    UvFailed {
        env: String,
        status: String,
        stderr: String,
        hint: String,
    },

    /// A dependency has no wheel for the node's platform (only an sdist,
    /// which a node would have to build).
    #[error(
        "{env}: {project} has no wheel for {platform}, only a source distribution a node would \
         have to build; {hint}"
    )]
    NoWheel {
        env: String,
        project: String,
        platform: String,
        hint: String,
    },

    /// Resolved again with a companion wheel (`flashinfer-cubin`), the
    /// environment no longer has the package the companion follows at the
    /// version first resolved, which the companion must equal.
    #[error(
        "{env}: resolved again with the companion wheels of {project}, it has {project} \
         {actual}, expected {expected} (the version first resolved, which the companions are \
         pinned to); pin {project}=={expected} with --override or --no-extras to leave the \
         companions out"
    )]
    CompanionMoved {
        env: String,
        project: String,
        expected: String,
        actual: String,
    },

    /// A site's own lock (`--python-env NAME=PATH`) cannot be carried.
    #[error("{env}: the site's lock cannot be carried")]
    SiteLock {
        env: String,
        #[source]
        error: Box<super::SiteLockError>,
    },

    #[error("{env}: the lock uv wrote cannot be used")]
    Lock {
        env: String,
        #[source]
        error: LockError,
    },

    /// A file the lock names is not on its publisher's index.
    #[error(
        "{env}: the lock names {filename} ({project} {version}), which {index} does not list; \
         refusing a file its publisher does not vouch for"
    )]
    NotAtPublisher {
        env: String,
        project: String,
        version: String,
        filename: String,
        index: String,
    },

    /// The publisher gives no sha256 for a file.
    #[error(
        "{env}: {index} gives no sha256 for {filename}, so it cannot be verified and is not \
         carried; pass --allow-missing to make the bundle without it (recorded as a gap)"
    )]
    NoPublisherHash {
        env: String,
        filename: String,
        index: String,
    },

    /// The lock and the publisher disagree about a file.
    #[error(
        "{file}: the lock uv wrote says {what} {lock} but {index} says {publisher}; refusing it"
    )]
    Disagree {
        /// `{env}: {filename}`.
        file: String,
        what: &'static str,
        lock: String,
        publisher: String,
        index: String,
    },

    /// The interpreter uv expects could not be found or checked.
    #[error("python-build-standalone for {arch}: {detail}")]
    Interpreter { arch: String, detail: String },

    /// uv's list of interpreters could not be fetched.
    #[error("uv {uv_version}'s list of python-build-standalone interpreters, {path}")]
    InterpreterList {
        uv_version: String,
        path: &'static str,
        #[source]
        error: crate::http::HttpError,
    },

    /// uv's list of interpreters is not the JSON it should be.
    #[error("python-build-standalone for {arch}: uv's {path} is not readable")]
    InterpreterListUnreadable {
        arch: String,
        path: &'static str,
        #[source]
        error: serde_json::Error,
    },

    /// A file name from a lock or an index is unsafe as a path or URL part.
    #[error(transparent)]
    UnsafeName(Box<llmgw_shared::UnsafeName>),

    /// Writing or running in the scratch folder failed.
    #[error("{}", .path.display())]
    Io {
        path: PathBuf,
        #[source]
        error: std::io::Error,
    },
}

impl PythonError {
    pub(crate) fn io(path: impl Into<PathBuf>, error: std::io::Error) -> Self {
        PythonError::Io {
            path: path.into(),
            error,
        }
    }
}

/// Why a lock could not be used.
#[derive(Debug, thiserror::Error)]
pub enum LockError {
    #[error("pylock.toml is {0} bytes; at most {MAX_LOCK_BYTES} are read")]
    TooLarge(usize),
    #[error("pylock.toml is not a PEP 751 lock")]
    Parse(#[source] toml::de::Error),
    #[error("pylock.toml is lock-version {0:?}; this llmgw reads 1.x")]
    Version(String),
    #[error(
        "pylock.toml: {name} {version} is {what}, which a bundle cannot carry: a node must \
         install only wheels"
    )]
    NotAWheel {
        name: String,
        version: String,
        what: &'static str,
    },
    #[error("pylock.toml: {name}: the file URL {url:?} has no file name")]
    NoFileName { name: String, url: String },
}
