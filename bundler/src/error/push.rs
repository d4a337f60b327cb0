//! Why `llmgw mirror push` stopped: each message names the registry and
//! repository, the blob, manifest or tag, what the registry answered and
//! what was expected, and what to do. Causes are `#[source]`s.

use std::path::PathBuf;

use thiserror::Error;

use super::oci::OciError;
use crate::http::HttpError;

/// Why a push stopped.
#[derive(Debug, Error)]
pub enum PushError {
    /// `--to` is not `HOST[:PORT][/PREFIX]` (exit code 2).
    #[error(
        "--to {given:?}: {why}; expected HOST[:PORT][/PREFIX], such as registry.site:5000/llmgw"
    )]
    Target {
        /// The value as given, escaped.
        given: String,
        /// What is wrong.
        why: &'static str,
    },
    /// Asking for a manifest, or the token dance, failed.
    #[error(transparent)]
    Oci(Box<OciError>),
    /// A request could not be made or answered.
    #[error("{at}: {doing}")]
    Http {
        /// `registry/repository`.
        at: String,
        /// What was being done.
        doing: String,
        /// Why.
        #[source]
        source: Box<HttpError>,
    },
    /// The registry refused (401, 403, 413, a denied or immutable tag…).
    #[error(
        "{at}: the registry refused {doing} with {status}{code}; {hint}. Nothing later was pushed; \
         what was pushed stays, and a rerun skips it"
    )]
    Refused {
        /// `registry/repository`.
        at: String,
        /// What was being done.
        doing: String,
        /// The HTTP status.
        status: u16,
        /// The registry's error codes and message, escaped (or empty).
        code: String,
        /// What to do.
        hint: &'static str,
    },
    /// The registry's answer contradicts what was sent.
    #[error("{at}: the registry cannot be trusted: {doing}, {detail}; nothing more is sent to it")]
    Lied {
        /// `registry/repository`.
        at: String,
        /// What was being done.
        doing: String,
        /// What it answered, escaped, and what was expected.
        detail: String,
    },
    /// A stored file could not be read while it was sent.
    #[error("reading {} to push it", path.display())]
    Read {
        /// The file.
        path: PathBuf,
        /// Why.
        #[source]
        source: std::io::Error,
    },
    /// A stored blob's bytes are not what its digest says.
    #[error(
        "the store's blob sha256:{expected} reads as sha256:{actual} ({bytes} bytes) while it is \
         pushed; nothing was tagged with it. Run `llmgw mirror verify` on the store"
    )]
    Damaged {
        /// The digest named.
        expected: String,
        /// The digest read.
        actual: String,
        /// How many bytes were read.
        bytes: u64,
    },
    /// `--tags merge` met a tag it cannot merge.
    #[error(
        "{at}:{tag}: --tags merge merges an image index with an image index; {why}. Pass \
         --tags overwrite to replace it or --tags keep to leave it"
    )]
    Merge {
        /// `registry/repository`.
        at: String,
        /// The tag, escaped.
        tag: String,
        /// What the tag or ours is instead.
        why: String,
    },
}

impl From<OciError> for PushError {
    fn from(e: OciError) -> Self {
        Self::Oci(Box::new(e))
    }
}
