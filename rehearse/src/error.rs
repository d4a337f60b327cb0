//! Why a rehearsal could not run at all (a failing check is not an error:
//! it is a row of the report, with its fix).
//!
//! Invariant: each error names what it could not do and what to do; the
//! cause is its `#[source]`, never repeated in the message.

use std::path::PathBuf;

use thiserror::Error;

/// Why a rehearsal could not run.
#[derive(Debug, Error)]
pub enum RehearseError {
    /// The throwaway store could not be made.
    #[error("cannot make the rehearsal's throwaway store in {}", dir.display())]
    Work {
        /// The folder it was to be made in.
        dir: PathBuf,
        /// Why.
        #[source]
        source: std::io::Error,
    },
    /// A `--trust` key could not be added to the throwaway store.
    #[error("--trust {}", key.display())]
    Trust {
        /// The key file.
        key: PathBuf,
        /// Why.
        #[source]
        source: Box<dyn std::error::Error + Send + Sync>,
    },
    /// The bundle was refused, as `bundle import` would refuse it.
    #[error("the bundle {} is refused as `bundle import` would refuse it", bundle.display())]
    Refused {
        /// The bundle.
        bundle: PathBuf,
        /// The refusal.
        #[source]
        source: Box<llmgw_mirror::ImportError>,
    },
    /// The mirror could not be started on loopback.
    #[error("cannot start the mirror on loopback")]
    Serve {
        /// Why.
        #[source]
        source: Box<dyn std::error::Error + Send + Sync>,
    },
    /// The mirror never became ready.
    #[error(
        "the mirror on loopback was not ready after {seconds} s (GET /readyz answered {last}); \
         a model image still being hashed takes longer for a large bundle: give --ready-seconds"
    )]
    NotReady {
        /// How long it waited.
        seconds: u64,
        /// The last answer.
        last: String,
    },
    /// The HTTP client could not be built.
    #[error("cannot build the rehearsal's HTTP client")]
    Client {
        /// Why.
        #[source]
        source: reqwest::Error,
    },
}
