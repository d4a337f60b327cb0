//! The store in S3-compatible object storage (#16), against a real S3
//! server, never a mock: s3s-fs (the s3s crate's S3 protocol over a
//! folder), whose binary `scripts/setup.sh` builds and `scripts/test.sh`
//! names in `LLMGW_S3S_FS`. Without it these tests fail, saying so.
//! `s3::server` starts one per test; the other modules are what they show.

mod bundle_kit;

mod s3 {
    pub mod server;

    mod backend;
    mod gc;
    mod import;
    mod presigned;
    mod replicas;
}
