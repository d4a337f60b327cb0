//! Why a bundle could not be read, as opposed to refused for its content.
//!
//! Invariant: every variant names the bundle's path and where in it the
//! stream failed; an entry name quoted from the bundle is escaped.

use std::io;
use std::path::PathBuf;

use llmgw_shared::shown;
use thiserror::Error;

use crate::bundle::tar_headers::ExtensionError;

/// Why the bundle could not be read (as opposed to refused for its content).
#[derive(Debug, Error)]
pub enum ReadError {
    #[error("cannot open bundle {path}")]
    Open {
        path: PathBuf,
        #[source]
        source: io::Error,
    },
    #[error(
        "reading bundle {path} {place}{}",
        if crate::bundle::unzstd::is_damaged(source) { "" } else {
            "; the bundle is damaged or was cut short (copy it again)"
        }
    )]
    Stream {
        path: PathBuf,
        place: String,
        #[source]
        source: io::Error,
    },
    #[error("bundle {path}: an entry name is not UTF-8: \"{}\"", shown(.name))]
    NotUtf8 { path: PathBuf, name: String },
    #[error(
        "bundle {path} is truncated: the tar ends after entry {} without its end-of-archive \
         marker; copy the bundle again",
        shown(.last)
    )]
    NoEndMarker { path: PathBuf, last: String },
    #[error("bundle {path} {place}: this is not a bundle llmgw wrote")]
    Header {
        path: PathBuf,
        place: String,
        #[source]
        source: ExtensionError,
    },
    #[error("bundle {path} is empty: expected manifest.json as its first entry")]
    Empty { path: PathBuf },
}
