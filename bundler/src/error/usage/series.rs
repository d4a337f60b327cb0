//! The signed series refuses this bundle: its sequence counter cannot be
//! read or advanced, the site already holds this sequence, or `--expires`
//! is not after the bundle is made.
//!
//! Invariant: a sequence is never reused, so each refusal names the
//! sequence to give instead or the file to fix.

use std::path::PathBuf;

use llmgw_shared::shown;
use thiserror::Error;

/// The signed series refuses this bundle.
#[derive(Debug, Error)]
pub enum SeriesError {
    /// `KEY.sequence` does not hold a number.
    #[error(
        "sequence counter {}: expected the last sequence number, found {found:?}; fix it, or \
         give --sequence N (higher than every bundle this key signed in the channel)",
        path.display()
    )]
    Counter {
        /// The counter file.
        path: PathBuf,
        /// What it holds (trimmed, at most 32 bytes).
        found: String,
    },
    /// `KEY.sequence` is at `u64::MAX`.
    #[error("sequence counter {} is at its end", path.display())]
    CounterAtEnd {
        /// The counter file.
        path: PathBuf,
    },
    /// The have-list says the site holds this sequence, or a later one.
    #[error(
        "--have: the site is at sequence {held} of key {key_id} channel {}, and this bundle \
         would be sequence {sequence}; import would refuse it (rollback or equivocation). \
         Give --sequence {} or higher",
        shown(channel),
        held + 1
    )]
    Rollback {
        /// The site's sequence of this key and channel.
        held: u64,
        /// The signing key's id.
        key_id: String,
        /// The channel.
        channel: String,
        /// This bundle's sequence.
        sequence: u64,
    },
    /// `--expires` is a time at or before the bundle's creation.
    #[error("--expires {text}: it is not after the bundle's creation time {created}")]
    ExpiresBeforeCreated {
        /// The time as given (already parsed as RFC 3339).
        text: String,
        /// The bundle's creation time.
        created: String,
    },
}
