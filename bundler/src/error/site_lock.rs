//! Why a site's own lock (`--python-env NAME=PATH`) cannot be carried. The
//! lock is untrusted input: every message names the lock file, the package
//! and file, the expected and the actual value, and what to do; every
//! string taken from the lock is escaped when printed.

use std::path::PathBuf;

use llmgw_shared::shown;

/// A site lock refused; `lock` is the file as given.
#[derive(Debug, thiserror::Error)]
pub enum SiteLockError {
    #[error("{}: cannot be read", .lock.display())]
    Read {
        lock: PathBuf,
        #[source]
        error: std::io::Error,
    },
    #[error("{}: is over {max} bytes; a lock that large is refused", .lock.display())]
    TooLarge { lock: PathBuf, max: u64 },
    #[error("{}: is not UTF-8 TOML", .lock.display())]
    NotText { lock: PathBuf },
    #[error("{}: is not a {format} this llmgw reads", .lock.display())]
    Parse {
        lock: PathBuf,
        format: &'static str,
        #[source]
        error: toml::de::Error,
    },
    #[error("{}: is {what} {}; this llmgw reads {reads}", .lock.display(), shown(.found))]
    Version {
        lock: PathBuf,
        what: &'static str,
        found: String,
        reads: &'static str,
    },
    #[error(
        "{}: package \"{}\" comes from {kind}, which a bundle cannot carry; {advice}",
        .lock.display(), shown(.package)
    )]
    Source {
        lock: PathBuf,
        package: String,
        kind: String,
        advice: &'static str,
    },
    #[error(
        "{}: has no project (a package whose source is `virtual` or `editable` \".\"); give \
         the uv.lock of a project, made by `uv lock` in its folder",
        .lock.display()
    )]
    NoProject { lock: PathBuf },
    #[error(
        "{}: needs the project's pyproject.toml beside it ({}), which `uv sync --frozen` reads \
         on the node",
        .lock.display(), .project.display()
    )]
    NoPyproject {
        lock: PathBuf,
        project: PathBuf,
        #[source]
        error: std::io::Error,
    },
    #[error(
        "{}: package \"{}\" has the marker \"{}\", which cannot be read: {detail}",
        .lock.display(), shown(.package), shown(.marker)
    )]
    Marker {
        lock: PathBuf,
        package: String,
        marker: String,
        detail: String,
    },
    #[error(
        "{}: requires-python is \"{}\", which CPython {python} does not meet; pass --python \
         with a version it allows",
        .lock.display(), shown(.requires)
    )]
    Python {
        lock: PathBuf,
        requires: String,
        python: String,
    },
    #[error(
        "{}: {} {} has no locked wheel for {platform} (the lock has: {}){sdist}; lock a version \
         that publishes one, or pass --manylinux with the glibc the nodes have if a wheel needs a \
         newer one",
        .lock.display(), shown(.package), shown(.version), shown(.have),
        sdist = if *.has_sdist {
            "; its sdist is not carried, since building it on a node needs a build backend the \
             lock does not pin"
        } else { "" }
    )]
    NoWheel {
        lock: PathBuf,
        package: String,
        version: String,
        platform: String,
        have: String,
        has_sdist: bool,
    },
    #[error(
        "{}: {} {}: the file \"{}\" has {problem}; each file of a site lock must carry its \
         sha256 (`uv lock` writes them)",
        .lock.display(), shown(.package), shown(.version), shown(.file)
    )]
    Hash {
        lock: PathBuf,
        package: String,
        version: String,
        file: String,
        problem: String,
    },
    #[error(
        "{}: {} {}: the file \"{}\" is named by neither a file name nor a URL",
        .lock.display(), shown(.package), shown(.version), shown(.file)
    )]
    NoFileName {
        lock: PathBuf,
        package: String,
        version: String,
        file: String,
    },
    #[error(
        "{}: {}: the lock says {what} {} but its index {} says {}; refusing it (a lock \
         edited, or an index that changed: lock again with `uv lock`)",
        .lock.display(), shown(.file), shown(.in_lock), shown(.index), shown(.at_index)
    )]
    Disagree {
        lock: PathBuf,
        file: String,
        what: &'static str,
        in_lock: String,
        at_index: String,
        index: String,
    },
    #[error(
        "{}: {} {}: its index {} does not list \"{}\"; refusing a file its index does not \
         vouch for",
        .lock.display(), shown(.package), shown(.version), shown(.index), shown(.file)
    )]
    NotAtIndex {
        lock: PathBuf,
        package: String,
        version: String,
        file: String,
        index: String,
    },
    #[error(
        "{}: {}: its index {} gives no sha256 for it, so the lock's cannot be checked there",
        .lock.display(), shown(.file), shown(.index)
    )]
    IndexNoHash {
        lock: PathBuf,
        file: String,
        index: String,
    },
}
