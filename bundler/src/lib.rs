//! llmgw-bundler: `llmgw bundle create`. Fetches every build and model file
//! a site needs from GitHub-style releases and the Hugging Face Hub,
//! verifies each against what its publisher says, and writes one
//! content-addressed, reproducible bundle (directory, `.tar` or `.tar.zst`)
//! whose manifest sha256 is its identity.
//!
//! One module, one job: [`spec`] (what to bundle), [`http`] (requests,
//! redirects, credentials, retries), [`github`], [`llmgw_release`],
//! [`engines`], [`python`] and [`hub`] (the sources), [`fetch`] and [`cache`] (verified,
//! resumable downloads), [`pieces`] (downloads in a tar bundle's order),
//! [`space`] (free space), [`writer`] (the bundle),
//! [`progress`], [`report`], and [`create`] which runs them in order.

pub mod cache;
pub mod create;
pub mod delta;
pub mod dry_run;
pub mod engines;
pub mod error;
pub mod fetch;
pub mod github;
pub mod http;
pub mod hub;
pub mod limits;
pub mod llmgw_release;
pub mod pieces;
pub mod plan;
pub mod progress;
pub mod python;
pub mod report;
pub mod series;
pub mod sign;
pub mod space;
pub mod spec;
pub mod volumes;
pub mod writer;

pub use create::{Options, create};
pub use error::CreateError;
pub use report::CreateReport;
pub use spec::{CreateSettings, CreateSpec, SpecEnv};
