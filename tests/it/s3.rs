//! The store in S3-compatible object storage (#16), against real S3
//! servers, never a mock: s3s-fs (the s3s crate's S3 protocol over a
//! folder) and Garage, started by the fixture's `S3Server` from the
//! binaries `scripts/setup.sh` builds and `scripts/test.sh` names in
//! `LLMGW_S3S_FS` and `LLMGW_GARAGE`. Without them these tests fail, saying
//! so. Every test runs on both servers in turn (`s3::server::on_each`); the
//! other modules are what they show.

// Volume sets made with the real `bundle create`, as tests/volumes.rs
// makes them; these tests use some of its helpers.
#[allow(dead_code)]
pub mod server;

mod backend;
mod cache;
mod gc;
mod have;
mod import;
mod lease;
mod models;
mod presigned;
mod replica_state;
pub mod replicas;
mod verify;
mod volumes;
