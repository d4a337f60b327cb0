//! A list given by a flag (`--want`, `--need`, `--have`, `--base`) that
//! cannot be used: too large, not the list the flag takes, empty, or
//! naming what this request cannot fetch.
//!
//! Invariant: every list is read bounded, so a refusal for its size says
//! the bound; the parser's own refusal is the `#[source]`.

use std::path::PathBuf;

use llmgw_shared::WantListError;
use thiserror::Error;

/// A list named by a flag cannot be used.
#[derive(Debug, Error)]
pub enum ListError {
    /// `--want` is larger than any want-list.
    #[error(
        "--want {}: it is larger than {max} bytes; a want-list from `llmgw mirror misses` \
         never is",
        path.display()
    )]
    WantTooLarge {
        /// The file.
        path: PathBuf,
        /// The largest want-list, in bytes.
        max: u64,
    },
    /// `--want` is not a want-list.
    #[error("--want {}", path.display())]
    NotAWantList {
        /// The file.
        path: PathBuf,
        /// Why it does not parse as one.
        #[source]
        error: WantListError,
    },
    /// `--want` lists no miss.
    #[error("--want {}: the want-list is empty: the mirror missed nothing", path.display())]
    WantEmpty {
        /// The file.
        path: PathBuf,
    },
    /// A have-, base- or need-list larger than any llmgw writes.
    #[error("{}: larger than {max} bytes; not a list llmgw wrote", path.display())]
    TooLarge {
        /// The file.
        path: PathBuf,
        /// The bound, in bytes.
        max: u64,
    },
    /// `--need` names blobs this request does not plan.
    #[error(
        "--need: {} blob(s) of the need-list are not part of this request, so they cannot be \
         fetched and checked at their publisher: {}; give the same request (flags or --spec) \
         that made bundle {bundle}",
        absent.len(),
        absent.join("; ")
    )]
    NeedNotRequested {
        /// Each blob absent from the plan: digest, size and uses.
        absent: Vec<String>,
        /// The bundle the need-list was written for.
        bundle: String,
    },
}
