//! How a run of `bundle create` behaves, apart from what it bundles: where
//! it reports, the Hub token, retries, the time it records, the signing
//! key's password, and the check of what it wrote.
//!
//! Invariant: nothing here changes what a bundle carries; two runs of one
//! request with different options write the same manifest (but for the
//! time, when `source_date_epoch` is unset).

use std::path::Path;
use std::sync::Arc;

use llmgw_shared::BundleId;

use crate::http::{RetryPolicy, Token};
use crate::progress::Events;

/// How a run behaves, apart from what it bundles.
#[derive(Clone)]
pub struct Options {
    /// Where the run reports what it fetches and writes.
    pub progress: Events,
    /// `HF_TOKEN`: sent to the Hub's origin only, never written.
    pub hf_token: Option<Token>,
    /// How often a failed request is tried again, and how long between.
    pub retry: RetryPolicy,
    /// `SOURCE_DATE_EPOCH`: the time the manifest records and the tar
    /// entries carry. Without it the manifest records now and tar
    /// entries carry 0.
    pub source_date_epoch: Option<u64>,
    /// The password of an encrypted `--sign-key`.
    pub password: llmgw_shared::Password,
    /// The check a finished bundle must pass before it is renamed to
    /// `--out` (none: published unchecked, as a library caller may want).
    pub check: Option<Arc<dyn CheckWritten>>,
}

/// Checks a bundle just written, still under its temporary name, as the far
/// side will: the command line gives the mirror's whole import check here
/// (the bundler does not depend on the mirror). A bundle that fails is
/// never published at `--out`.
pub trait CheckWritten: Send + Sync {
    /// Checks the bundle at `path` whose manifest hashes to `sha256`; every
    /// blob in it was hashed by the writer as it was written.
    fn check(
        &self,
        path: &Path,
        sha256: &BundleId,
    ) -> Result<(), Box<dyn std::error::Error + Send + Sync>>;

    /// Checks a set of volumes just written (`paths`: data volumes, then
    /// parity) as `bundle verify` checks a set: each volume's manifest is
    /// the bundle's and each piece it holds hashes as placed, and the set
    /// is whole.
    fn check_volumes(
        &self,
        paths: &[std::path::PathBuf],
        sha256: &BundleId,
    ) -> Result<(), Box<dyn std::error::Error + Send + Sync>>;
}
