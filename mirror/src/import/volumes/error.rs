//! Why a volume, the staging of volumes, or the state kept between runs
//! could not be taken, each in its own layer's words.
//!
//! Invariant: a message says what this layer was doing and what to do; the
//! error that caused it (an I/O error, a parser's message, the parity
//! code's refusal) is its `source()` and is never repeated in the message,
//! so `llmgw_shared::chain` prints each once.

use std::io;
use std::path::PathBuf;

use llmgw_shared::manifest::{MAX_MANIFEST_BYTES, SIGNATURE_NAME};
use llmgw_shared::parity::CodeError;
use llmgw_shared::{shown, shown_message};
use thiserror::Error;

use crate::bundle::reader::ReadError;
use crate::store::fsutil;
use crate::store::series::SeriesError;

/// Why a file cannot be taken as a volume of this bundle at all.
#[derive(Debug, Error)]
pub enum VolumeError {
    #[error(
        "{} is a volume of another bundle (manifest sha256 {found}), not of bundle {expected}: \
         skipped; keep it for that bundle's import",
        path.display()
    )]
    OtherBundle {
        path: PathBuf,
        found: String,
        expected: String,
    },
    #[error("{} is not a volume of an llmgw bundle: {reason}", path.display())]
    NotAVolume { path: PathBuf, reason: NotVolume },
    #[error("{} is not a volume of an llmgw bundle: reading its {entry}", path.display())]
    Unreadable {
        path: PathBuf,
        entry: &'static str,
        #[source]
        source: io::Error,
    },
    #[error(transparent)]
    Read(#[from] ReadError),
    #[error(
        "the volume's bytes could not be staged; the volumes and what was verified before are unchanged"
    )]
    Stage(#[source] StageError),
}

/// What shows a file is not a volume, said after its name.
#[derive(Debug, Error)]
pub enum NotVolume {
    #[error("its first entry is {}, not manifest.json", shown(.0))]
    FirstEntry(String),
    #[error("manifest.json is {0} bytes; at most {MAX_MANIFEST_BYTES} are accepted")]
    ManifestTooBig(u64),
    #[error("{SIGNATURE_NAME} is {size} bytes; at most {max}")]
    SignatureTooBig { size: u64, max: u64 },
    #[error(
        "its first piece is {}, which the manifest does not place in any volume",
        shown(.0)
    )]
    Unplaced(String),
    #[error("it is empty")]
    Empty,
}

/// Why writing what the volumes brought into the staging folder (or
/// rebuilding from parity into it) stopped. What was verified and saved
/// before is kept.
#[derive(Debug, Error)]
pub enum StageError {
    #[error(
        "the disk filled up while writing {}; free space on the store's filesystem and run the \
         import again (what was verified is kept)",
        path.display()
    )]
    DiskFull {
        path: PathBuf,
        #[source]
        source: io::Error,
    },
    #[error("writing {}", path.display())]
    Write {
        path: PathBuf,
        #[source]
        source: io::Error,
    },
    #[error("reading {}", path.display())]
    Read {
        path: PathBuf,
        #[source]
        source: io::Error,
    },
    /// A second handle on a staged file (for the writer thread).
    #[error("opening a staged file again for the writer")]
    Reopen(#[source] io::Error),
    #[error("reading the staged pieces of the data volumes for a rebuild from parity")]
    ReadShards(#[source] llmgw_shared::parity::SegmentError),
    #[error("reading parity shard {shard}")]
    ReadParity {
        /// 1-based, as the operator counts parity volumes.
        shard: usize,
        #[source]
        source: io::Error,
    },
    #[error("rebuilding from parity")]
    Decode(#[source] CodeError),
    /// The parity code answered without a shard it was asked for: a bug.
    #[error("the parity code did not give back volume {volume}")]
    NotDecoded { volume: usize },
    #[error(
        "volume {volume} rebuilt from parity does not hash right (a piece gives sha256 {got}, \
         expected {expected}): a parity volume or a staged piece is damaged; bring volume \
         {volume} itself"
    )]
    RebuiltMismatch {
        volume: usize,
        got: String,
        expected: String,
    },
    #[error(
        "{} ({what}) changed since an earlier run of this import checked it: it now hashes to \
         {got}, not {expected} (a byte of the staging folder changed between two runs: bit \
         rot, or another process). Nothing was published; it was set aside, so read volume \
         {volumes} again: run the import again with that volume",
        path.display()
    )]
    ChangedSinceChecked {
        path: PathBuf,
        what: String,
        expected: String,
        got: String,
        volumes: String,
    },
}

impl StageError {
    /// Writing `path` failed: said as a full disk when it is one.
    pub(crate) fn write(path: impl Into<PathBuf>, source: io::Error) -> Self {
        let path = path.into();
        if fsutil::is_disk_full(&source) {
            StageError::DiskFull { path, source }
        } else {
            StageError::Write { path, source }
        }
    }
}

/// Why the manifest of a set of volumes could not be found among them.
#[derive(Debug, Error)]
pub enum SetError {
    #[error("the manifest in {} cannot be read", path.display())]
    Manifest {
        path: PathBuf,
        #[source]
        source: llmgw_shared::manifest::ManifestError,
    },
    #[error(
        "bundle {expected} ({}) is not a set of volumes: import or verify it as one bundle",
        path.display()
    )]
    NotASet { expected: String, path: PathBuf },
    /// No file given holds the manifest; each is listed with why not (a
    /// list of causes, so each is put in its line with `chain`).
    #[error(
        "none of the volumes given holds the manifest of bundle {expected}: {}",
        tried.iter().map(Tried::to_string).collect::<Vec<_>>().join("; ")
    )]
    NoManifest { expected: String, tried: Vec<Tried> },
}

/// A file that did not hold the expected manifest, and why.
#[derive(Debug)]
pub enum Tried {
    /// It holds another bundle's manifest (its sha256).
    Other { path: PathBuf, sha256: String },
    /// Its head could not be read.
    Unreadable { path: PathBuf, error: SeriesError },
}

impl std::fmt::Display for Tried {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Tried::Other { path, sha256 } => {
                write!(f, "{} belongs to bundle {sha256}", path.display())
            }
            Tried::Unreadable { path, error } => {
                write!(f, "{}: {}", path.display(), llmgw_shared::chain(error))
            }
        }
    }
}

/// A state file (`volumes.json`) that cannot be taken: its path, what is
/// wrong ([`StateProblem`]) and how to start over. Its `source()` is the
/// problem's cause (an I/O or parse error), so the line reads `path:
/// problem; what to do: cause`.
#[derive(Debug)]
pub struct StateError {
    pub path: PathBuf,
    pub dir: PathBuf,
    pub problem: StateProblem,
}

impl std::fmt::Display for StateError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(
            f,
            "{}: {}; this file records what earlier runs of an import of volumes verified, and \
             only `llmgw bundle import` writes it: remove the folder {} and import the volumes \
             again",
            self.path.display(),
            self.problem,
            self.dir.display()
        )
    }
}

impl std::error::Error for StateError {
    fn source(&self) -> Option<&(dyn std::error::Error + 'static)> {
        std::error::Error::source(&self.problem)
    }
}

/// What is wrong with a state file.
#[derive(Debug, Error)]
pub enum StateProblem {
    #[error("it cannot be opened")]
    Open(#[source] io::Error),
    #[error("it cannot be read")]
    Read(#[source] io::Error),
    #[error("it is over {max} bytes, more than a state of this bundle ever takes")]
    TooLarge { max: u64 },
    #[error("it is not a state of an import of volumes")]
    Parse(#[source] serde_json::Error),
    #[error(
        "it records bundle {}, but its folder is bundle {folder}'s",
        shown_message(recorded)
    )]
    OtherBundle { recorded: String, folder: String },
    #[error("it names data volume {volume}; the bundle has volumes 1 to {count}")]
    NoSuchVolume { volume: u32, count: u32 },
    #[error("it names parity volume {shard}; the bundle has {count}")]
    NoSuchParity { shard: usize, count: usize },
    #[error("it names chunk {piece} of file {placement}, which the manifest does not cut that way")]
    NoSuchChunk { placement: usize, piece: usize },
    #[error(
        "it carries a hash of file {placement} up to chunk {next}, which the manifest does not \
         cut that way"
    )]
    RunningPast { placement: usize, next: usize },
    #[error(
        "it carries a hash of file {placement} over chunk {piece}, which it does not list as \
         verified"
    )]
    RunningUnverified { placement: usize, piece: usize },
    #[error(
        "its hash of file {placement} is not a sha256 state ({})",
        shown_message(state)
    )]
    NotAHashState { placement: usize, state: String },
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_cause_is_said_once_after_what_to_do() {
        let e = StateError {
            path: "/s/tmp/import-x/volumes.json".into(),
            dir: "/s/tmp/import-x".into(),
            problem: StateProblem::Read(io::Error::other("bad sector")),
        };
        let line = llmgw_shared::chain(&e);
        assert!(
            line.starts_with("/s/tmp/import-x/volumes.json: it cannot be read; "),
            "{line}"
        );
        assert!(
            line.ends_with("import the volumes again: bad sector"),
            "{line}"
        );
        assert_eq!(line.matches("bad sector").count(), 1, "{line}");
    }

    #[test]
    fn a_full_disk_is_named_as_one() {
        let full = StageError::write("/s/x.part", io::Error::from_raw_os_error(28));
        assert!(matches!(full, StageError::DiskFull { .. }), "{full:?}");
        let line = llmgw_shared::chain(&full);
        assert!(
            line.starts_with("the disk filled up while writing /s/x.part;"),
            "{line}"
        );
        let other = StageError::write("/s/x.part", io::Error::other("denied"));
        assert_eq!(llmgw_shared::chain(&other), "writing /s/x.part: denied");
    }
}
