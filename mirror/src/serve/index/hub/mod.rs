//! The Hub part of the index: each repository's files by revision, pooled
//! ([`snapshot`]), the held manifests kept between builds without their
//! file lists ([`heads`]), and the answers made before an index is served
//! ([`ahead`]).
//!
//! Invariant: data only, built off the request path; nothing here reads a
//! request or knows the server's state.

pub mod ahead;
pub mod heads;
pub mod snapshot;
