//! Why a Hub kernel repository (`--kernel`, `--kernels-lock`) cannot be
//! carried. Names from the Hub or from a lock file are escaped when
//! printed; each message says what to do.

use std::path::PathBuf;

use llmgw_shared::kernels::BadVariant;
use llmgw_shared::shown;

/// A kernel refused.
#[derive(Debug, thiserror::Error)]
pub enum KernelError {
    /// `--kernel` names a build folder that is no variant name (exit 2).
    #[error(
        "--kernel {}: the build folder named is not one the kernels client loads; name folders \
         as the repository's build/ lists them (`llmgw recipe kernels ORG/NAME REV` shows them)",
        shown(.text)
    )]
    BadVariantArg {
        text: String,
        #[source]
        error: BadVariant,
    },
    /// `--kernel` is not `ORG/NAME[@REV][:VARIANT,…]` (exit 2).
    #[error(
        "--kernel {}: expected ORG/NAME[@vN|@REV][:VARIANT,...], e.g. \
         kernels-community/activation@v1:torch-cpu",
        shown(.text)
    )]
    Arg {
        text: String,
        #[source]
        error: llmgw_shared::UnsafeName,
    },
    #[error("{}: cannot be read", .lock.display())]
    LockRead {
        lock: PathBuf,
        #[source]
        error: std::io::Error,
    },
    #[error("{}: is over {max} bytes; a kernels.lock that large is refused", .lock.display())]
    LockTooLarge { lock: PathBuf, max: u64 },
    #[error(
        "{}: is not a kernels.lock as `kernels lock` (0.17) writes it: a JSON list of \
         {{\"dependency\": {{\"repo-id\": …}}, \"lock\": {{\"commit\": …}}}}",
        .lock.display()
    )]
    LockParse {
        lock: PathBuf,
        #[source]
        error: serde_json::Error,
    },
    #[error("{}: entry {index} names {what} {}; expected {expected}", .lock.display(), shown(.found))]
    LockEntry {
        lock: PathBuf,
        index: usize,
        what: &'static str,
        found: String,
        expected: &'static str,
    },
    #[error(
        "{what}: the repository has no vN branch (its branches: {}); name a revision, \
         --kernel ORG/NAME@REV",
        shown(.branches)
    )]
    NoVersion { what: String, branches: String },
    #[error(
        "{what}: nothing under build/ at commit {commit}; a kernel repository keeps one \
         folder per build there — is this a kernel repository?"
    )]
    NoBuilds { what: String, commit: String },
    #[error("{what}: its build folder {} cannot be chosen for any node", shown(.folder))]
    BadFolder {
        what: String,
        folder: String,
        #[source]
        error: BadVariant,
    },
    /// `have` lists folder names that parsed as variants: safe to print whole.
    #[error("{what}: has no build folder {}; it has: {have}", shown(.variant))]
    NotInRepo {
        what: String,
        variant: String,
        have: String,
    },
    #[error(
        "{what}: the bundle carries no Python environment with torch, so no node's build can be \
         chosen; name the build folders (--kernel ORG/NAME@REV:VARIANT,…) or carry the engine \
         whose nodes load it; it has: {have}"
    )]
    NoTargets { what: String, have: String },
    #[error(
        "{what}: no build folder loads on the nodes of {target}: {}; name folders by hand \
         (--kernel ORG/NAME@REV:VARIANT,…) or pass --allow-missing to carry the kernel \
         without them",
        shown(.reasons)
    )]
    NoneLoads {
        what: String,
        target: String,
        reasons: String,
    },
    #[error("{what}: the Hub's overview of its publisher {owner} ({url}) could not be read")]
    Publisher {
        what: String,
        owner: String,
        url: String,
        #[source]
        error: Box<crate::http::HttpError>,
    },
}

impl KernelError {
    /// Whether the request itself is wrong (exit code 2).
    pub fn is_usage(&self) -> bool {
        matches!(
            self,
            KernelError::BadVariantArg { .. }
                | KernelError::Arg { .. }
                | KernelError::LockRead { .. }
                | KernelError::LockTooLarge { .. }
                | KernelError::LockParse { .. }
                | KernelError::LockEntry { .. }
                | KernelError::NoTargets { .. }
        )
    }
}

impl From<KernelError> for super::CreateError {
    fn from(e: KernelError) -> Self {
        super::CreateError::Kernel(Box::new(e))
    }
}
