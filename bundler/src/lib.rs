//! llmgw-bundler: `llmgw bundle create`. Fetches every build and model file
//! a site needs from GitHub-style releases and the Hugging Face Hub,
//! verifies each against what its publisher says, and writes one
//! content-addressed, reproducible bundle (directory, `.tar` or `.tar.zst`)
//! whose manifest sha256 is its identity.
//!
//! One module, one job: `spec` (what to bundle, its settings layered),
//! `http` (requests, redirects, credentials, retries), `github`,
//! `llmgw_release`, `engines`, `python` and `hub` (the sources), `fetch` and
//! `cache` (verified, resumable downloads), `pieces` (downloads in a tar
//! bundle's order), `space` (free space), `writer` and `volumes` (the
//! bundle), `progress` (the events a run sends), `report`, and `create`
//! which runs them in order (plan, fetch, write). All are private; the face is the list below.

mod attest;
mod cache;
mod create;
mod delta;
mod dry_run;
mod error;
pub mod export;
mod fetch;
mod http;
pub mod kernels;
mod limits;
mod pieces;
mod plan;
mod progress;
pub mod push;
mod reach;
mod report;
mod sbom;
mod series;
mod sign;
mod sources;
mod space;
mod spec;
mod volumes;
mod want;
mod writer;

// The face: what the CLI and the tests use. Everything else is private, so
// a module's `pub` means "for the rest of this crate", and an item nothing
// uses is reported as dead code.
pub use create::{CheckWritten, Options, create};
pub use delta::DeltaSpec;
pub use dry_run::dry_run;
pub use error::CreateError;
pub use http::{RetryPolicy, Token};
pub use progress::Events;
pub use report::CreateReport;
pub use series::SeriesSpec;
pub use sign::sign_bundle;
pub use spec::{CreateSettings, CreateSpec, SpecEnv};
pub use writer::{BeforePublish, Blob as BlobFile, CheckError};
