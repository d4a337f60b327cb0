//! Why `bundle create` failed. Every message names the file or entry, what
//! was expected and what was found, and, where there is one, what to do.
//! A message describes its own layer; what caused it is its `#[source]`,
//! printed after it by `llmgw_shared::chain` and never repeated in it.

use std::path::PathBuf;

use llmgw_shared::SumsError;
use llmgw_shared::manifest::ManifestError;
use llmgw_shared::recipe::RecipeError;
use llmgw_shared::signing::SigningError;
use thiserror::Error;

mod hub;
mod kernel;
mod latest;
pub mod oci;
pub mod push;
mod python;
mod reach;
mod signatures;
mod site_lock;
mod space;
mod spec;
mod usage;
mod volumes;

pub use hub::HubError;
pub use kernel::KernelError;
pub use latest::LatestError;
pub use python::{LockError, PythonError};
pub use reach::UnreachableHost;
pub use signatures::SignatureError;
pub use site_lock::SiteLockError;
pub use space::{Short, Shortfall};
pub use spec::{RepoArgFault, TomlSyntax};
pub use usage::{
    BundleFileError, FlagError, ListError, OutError, RequestError, SeriesError, UsageError,
};
pub use volumes::{PackError, SizeError};

/// Everything that can stop a bundle from being made.
#[derive(Debug, Error)]
pub enum CreateError {
    /// The command line or the spec file is wrong (exit code 2); what is
    /// wrong is a typed [`UsageError`].
    #[error(transparent)]
    Usage(#[from] UsageError),

    /// A `--model` or `--dataset` value is not a repository, revision and
    /// globs (exit code 2); what is wrong is printed by the chain.
    #[error(
        "{flag} {text:?}: expected REPO[@REVISION][:GLOB,...], e.g. acme/tiny@main or \
         org/m:*.Q4_K_M.gguf,config.json"
    )]
    RepoArg {
        /// `--model` or `--dataset`.
        flag: &'static str,
        /// The value as given.
        text: String,
        /// What is wrong with it.
        #[source]
        fault: RepoArgFault,
    },

    /// A file pattern (`REPO:GLOB`) does not compile (exit code 2).
    #[error("glob {pattern:?}")]
    Glob {
        /// The pattern as given (patterns joined with `,` when it is the
        /// set that does not build).
        pattern: String,
        /// globset's words for what is wrong with it.
        #[source]
        error: globset::Error,
    },

    /// The spec file (`--spec FILE`) is not TOML, or not a spec: an
    /// unknown setting, a value of the wrong type (exit code 2).
    #[error(
        "spec file {}{}",
        path.display(),
        at.map(|(line, column)| format!(", line {line}, column {column}")).unwrap_or_default()
    )]
    SpecFile {
        /// The file as given.
        path: PathBuf,
        /// Where in it (line and column, from 1), when the parser says.
        at: Option<(usize, usize)>,
        /// The parser's words for what is wrong there.
        #[source]
        error: TomlSyntax,
    },

    /// The recipe table has no build for what was asked (exit code 2: the
    /// request itself is wrong, e.g. an unknown engine or a bad version).
    #[error("--engine {engine}={version}")]
    Recipe {
        /// The engine as given (`llamacpp`).
        engine: String,
        /// The version as given (`b6123`).
        version: String,
        /// Why the table refuses it.
        #[source]
        error: Box<RecipeError>,
    },

    /// Reading or writing a local file (the cache, the bundle, a list).
    #[error("{}", path.display())]
    Io {
        /// The file or folder.
        path: PathBuf,
        /// What the filesystem said.
        #[source]
        error: std::io::Error,
    },

    /// A list given with `--have`, `--base` or `--need` cannot be read
    /// (exit code 2: the flag names a file that is not there).
    #[error("{}: cannot read it", path.display())]
    ListUnreadable {
        /// The list named by the flag.
        path: PathBuf,
        /// Why it could not be opened.
        #[source]
        error: std::io::Error,
    },

    /// A list given with `--have`, `--base` or `--need` is not the kind of
    /// file the flag takes (exit code 2).
    #[error("{}: expected {what}", path.display())]
    NotAList {
        /// The file named by the flag.
        path: PathBuf,
        /// What the flag takes: ``a have-list (`llmgw mirror have`)``.
        what: &'static str,
        /// The list's or the manifest's own refusal.
        #[source]
        error: Box<dyn std::error::Error + Send + Sync>,
    },

    /// A size flag's value is not a size (exit code 2).
    #[error(transparent)]
    Size(#[from] SizeError),

    /// `--engine ENGINE=latest` found no release to carry.
    #[error(transparent)]
    Latest(#[from] LatestError),

    /// The volumes asked for cannot hold the bundle (exit code 2).
    #[error(transparent)]
    Pack(#[from] PackError),

    /// A cached file changed between planning the volumes and writing them.
    #[error(
        "{} (entry {entry}) hashes to {got} now, not {planned} as when it was planned: the file \
         changed; run again",
        from.display()
    )]
    PieceChanged {
        /// The cached file the piece is read from.
        from: PathBuf,
        /// The piece's tar entry.
        entry: String,
        /// What the piece hashes to now.
        got: llmgw_shared::Sha256,
        /// What it hashed to when the volumes were planned (boxed: two
        /// inline digests would make every result of create this large).
        planned: Box<llmgw_shared::Sha256>,
    },

    /// A volume file appeared while the volumes were being written: another
    /// run's, left alone.
    #[error(
        "{} appeared while the volumes were being written; not replacing it",
        path.display()
    )]
    VolumeAppeared {
        /// The volume file.
        path: PathBuf,
    },

    /// The bundle written would be refused by `bundle import` (exit code 1):
    /// it was moved aside, never published at `--out`.
    #[error(
        "the bundle written would be refused at import, so it was not published at --out; it \
         is kept at {} for inspection. This is a fault of llmgw's bundle create (or of an \
         upstream it trusted): report it with the reason below",
        kept.display()
    )]
    RefusedAsWritten {
        /// Where the bundle was moved to.
        kept: PathBuf,
        /// Why the check refused it.
        #[source]
        source: Box<dyn std::error::Error + Send + Sync>,
    },

    /// A file a parity volume is computed from could not be read.
    #[error("computing the parity volumes of {}", out.display())]
    Parity {
        /// The bundle being written.
        out: PathBuf,
        /// Which file could not be read, and why.
        #[source]
        error: llmgw_shared::parity::SegmentError,
    },

    /// An upstream answered in a way that cannot be used.
    #[error(transparent)]
    Http(#[from] crate::http::HttpError),

    /// Another run holds the lock of the bundle being written.
    #[error(
        "{}: another `llmgw bundle create` is writing this bundle; wait for it to end or \
         choose another --out",
        path.display()
    )]
    Busy {
        /// The lock file beside the bundle.
        path: PathBuf,
    },

    /// A release does not have an asset the recipe (or SHA256SUMS) names.
    #[error(
        "{repo} {tag} has no asset {asset}; the release has: {have}. \
         Pick a version that publishes it, or pass --allow-missing to make the bundle without it \
         (the gap is recorded in the manifest)"
    )]
    MissingAsset {
        /// The release's repository (`owner/name`).
        repo: String,
        /// The release's tag.
        tag: String,
        /// The file name asked for.
        asset: String,
        /// The assets the release has, listed for the message.
        have: String,
    },

    /// One part of the request (the interpreter, a variant's upstream)
    /// failed, and the run cannot go on without it: names the part and
    /// what to pass; the cause says why.
    #[error("{part} ({advice})")]
    Part {
        /// `the Python interpreter`, `vllm-0.33.0-cu129-amd64: its upstream`.
        part: String,
        /// The flags that get past it.
        advice: String,
        /// Why the part failed.
        #[source]
        error: Box<CreateError>,
    },

    /// Several parts of the request cannot be had, all found in one
    /// planning pass (#53 item 2: every flag to pass learnt from one run,
    /// not one run per failure); each says what gets past it.
    #[error(
        "{}:\n{}",
        llmgw_shared::plural(errors.len(), "part of the request cannot be had", "parts of the request cannot be had"),
        errors.iter().map(|e| format!("  - {}", llmgw_shared::Chain(e))).collect::<Vec<_>>().join("\n")
    )]
    Several {
        /// Each part's failure, in the order planning met them.
        errors: Vec<CreateError>,
    },

    /// Hosts the plan fetches from answer nothing (each tried once before
    /// any large download): all listed at once, each with the flags that
    /// get past it.
    #[error(
        "cannot reach {}: {}",
        llmgw_shared::plural(hosts.len(), "host the run fetches from", "hosts the run fetches from"),
        hosts.iter().map(ToString::to_string).collect::<Vec<_>>().join("; ")
    )]
    Unreachable {
        /// Each host, with why and what it would have served.
        hosts: Vec<UnreachableHost>,
    },

    /// The release itself does not exist.
    #[error("{what}: {detail}")]
    MissingRelease {
        /// The release asked for (`ggml-org/llama.cpp b6123`).
        what: String,
        /// What the upstream answered.
        detail: String,
    },

    /// An asset has no digest from its publisher: nothing unverified is carried.
    #[error(
        "{repo} {tag} {asset}: its publisher gives no digest for it (no GitHub `digest` and no \
         {asset}.sha256 sidecar), so it cannot be verified and is not carried"
    )]
    NoPublisherDigest {
        /// The release's repository.
        repo: String,
        /// The release's tag.
        tag: String,
        /// The asset without a digest.
        asset: String,
    },

    /// Two publisher digests of the same file disagree.
    #[error(
        "{what}: {first_source} says sha256 {first} but {second_source} says {second}; refusing it"
    )]
    DigestConflict {
        /// The file.
        what: String,
        /// Where the first digest came from (a digest source's name).
        first_source: String,
        /// The first digest (hex).
        first: String,
        /// Where the second came from.
        second_source: String,
        /// The second digest (hex).
        second: String,
    },

    /// A publisher digest is not of a shape this project understands.
    #[error("{what}: {detail}")]
    BadDigest {
        /// The file the digest is for.
        what: String,
        /// What is wrong with it.
        detail: String,
    },

    /// A blob given to `mirror export` is not what its name says.
    #[error(
        "{path}: blob {sha256} is damaged ({actual}); nothing was exported. Run `llmgw mirror \
         verify` on the store, and import again a bundle that carries the blob to repair it"
    )]
    HeldBlobDamaged {
        /// Where its bytes are.
        path: std::path::PathBuf,
        /// Its name.
        sha256: String,
        /// What its bytes are instead (`N bytes, not M`, `sha256 X`).
        actual: String,
    },

    /// The bytes downloaded are not the bytes the publisher vouched for.
    #[error(
        "{what}: the downloaded bytes do not match its publisher's {algorithm}: expected {expected}, \
         got {actual}; the file was discarded"
    )]
    WrongBytes {
        /// The file.
        what: String,
        /// The digest checked (`sha256`, `git blob sha1`).
        algorithm: &'static str,
        /// The publisher's digest (hex).
        expected: String,
        /// The digest of the bytes received (hex).
        actual: String,
    },

    /// The download is not the size the publisher listed.
    #[error("{what}: expected {expected} bytes, the server sent {actual}; the file was discarded")]
    WrongSize {
        /// The file.
        what: String,
        /// The size the publisher listed, in bytes.
        expected: u64,
        /// The bytes the server sent.
        actual: u64,
    },

    /// llmgw's release signature did not check out.
    #[error("{what}")]
    Signature {
        /// What was signed (llmgw's `SHA256SUMS` of a release).
        what: String,
        /// Why the signature was refused.
        #[source]
        error: Box<SigningError>,
    },

    /// llmgw's `SHA256SUMS` could not be read as one.
    #[error(transparent)]
    Sums(#[from] SumsError),

    /// A Hugging Face repository could not be used.
    #[error(transparent)]
    Hub(#[from] HubError),

    /// The Hub answered with something that is not the JSON asked for.
    #[error("{what}: {url} is not a Hub {expected}")]
    HubAnswer {
        /// What was asked for (a repository at a revision).
        what: String,
        /// The URL that answered.
        url: String,
        /// The kind of answer expected (`revision object`, `tree listing`).
        expected: &'static str,
        /// Why the JSON did not parse as that.
        #[source]
        error: serde_json::Error,
    },

    /// Not enough room on disk: refused before anything is downloaded.
    #[error("not enough free space: {0}; free some space or put --cache or --out elsewhere")]
    NoSpace(Shortfall),

    /// The manifest this run built does not pass its own checks (a bug, or
    /// an upstream naming something unsafe).
    #[error("the manifest built is not valid")]
    Manifest(#[source] ManifestError),

    /// The signing key could not be used (`--sign-key`, `bundle sign --key`).
    #[error(transparent)]
    Key(#[from] llmgw_shared::SignerError),
    /// A Python environment could not be resolved or checked.
    #[error(transparent)]
    Python(Box<PythonError>),

    /// A name from upstream is unsafe to use as a path or URL part.
    #[error(transparent)]
    UnsafeName(#[from] llmgw_shared::UnsafeName),

    /// An image or chart could not be planned (exit code 2 when the
    /// reference or flag itself is wrong).
    #[error(transparent)]
    Oci(Box<oci::OciError>),

    /// A flag's value (`--channel`, `--llmgw-repo`) is not a safe name
    /// (exit code 2); the name check's message names the flag.
    #[error(transparent)]
    UnsafeFlag(llmgw_shared::UnsafeName),

    /// A publisher's signature could not be taken (exit code 2 when the
    /// policy flags themselves are wrong).
    #[error(transparent)]
    PublisherSignature(Box<SignatureError>),

    /// A Hub kernel repository could not be carried (exit code 2 when the
    /// request or its lock file is wrong).
    #[error(transparent)]
    Kernel(Box<KernelError>),
}

impl CreateError {
    /// Whether the request itself is wrong (exit code 2) rather than the
    /// world (exit code 1).
    pub fn is_usage(&self) -> bool {
        matches!(
            self,
            CreateError::Usage(_)
                | CreateError::RepoArg { .. }
                | CreateError::UnsafeFlag(_)
                | CreateError::Glob { .. }
                | CreateError::SpecFile { .. }
                | CreateError::Recipe { .. }
                | CreateError::Key(_)
                | CreateError::ListUnreadable { .. }
                | CreateError::NotAList { .. }
                | CreateError::Size(_)
                | CreateError::Pack(_)
        ) || matches!(self, CreateError::Oci(e) if e.is_usage())
            || matches!(self, CreateError::PublisherSignature(e) if e.is_usage())
            || matches!(self, CreateError::Kernel(e) if e.is_usage())
    }

    pub(crate) fn hub_answer(
        what: &str,
        url: &str,
        expected: &'static str,
        error: serde_json::Error,
    ) -> Self {
        CreateError::HubAnswer {
            what: what.to_string(),
            url: url.to_string(),
            expected,
            error,
        }
    }

    pub(crate) fn io(path: impl Into<PathBuf>, error: std::io::Error) -> Self {
        CreateError::Io {
            path: path.into(),
            error,
        }
    }
}

impl From<PythonError> for CreateError {
    fn from(e: PythonError) -> Self {
        CreateError::Python(Box::new(e))
    }
}

impl From<ManifestError> for CreateError {
    fn from(e: ManifestError) -> Self {
        CreateError::Manifest(e)
    }
}

impl From<SignatureError> for CreateError {
    fn from(e: SignatureError) -> Self {
        CreateError::PublisherSignature(Box::new(e))
    }
}

impl From<oci::OciError> for CreateError {
    fn from(e: oci::OciError) -> Self {
        CreateError::Oci(Box::new(e))
    }
}
