//! The root crate's end-to-end tests, in one binary (`cargo test --test
//! it`): the real `llmgw` binary against the loopback fixture upstreams and
//! real clients, grouped by the feature they show, as ripgrep and uv lay
//! out theirs. One binary links the dependency tree once, where one per
//! file linked it 24 times. The shared kit is the fixture crate's
//! (`llmgw_fixture::kit`, here `bundle_kit`); what only one feature's
//! tests share sits in that feature's folder.
//!
//! Every test may run beside any other in this one process: a test sets
//! nothing process-wide (no `std::env::set_var`, no working directory, no
//! limits, no fixed port or path), only on the child processes it starts.

pub use llmgw_fixture::kit as bundle_kit;

mod cli;
mod create;
mod import;
mod kernels;
mod oci;
mod python;
mod s3;
mod sbom;
mod serve;
mod signed_store;
mod signing;
mod store;
mod volumes;
