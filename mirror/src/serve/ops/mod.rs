//! Running the server, not serving a protocol: the counters and `/metrics`
//! ([`metrics`], with the store's [`freshness`]), the access log
//! ([`access`]) and each request's line and counts ([`track`]), the look at
//! the store before starting ([`store_check`]), and `/v1/index`, the whole
//! held content for the control plane ([`v1_index`]).
//!
//! Invariant: nothing here reads the server's state or a route's request;
//! each is handed what it reports on (the counters, the index, the store),
//! so the state may own the counters without a loop between them.

pub mod access;
pub mod freshness;
pub mod metrics;
pub mod store_check;
pub mod track;
pub mod v1_index;
