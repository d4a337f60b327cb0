//! `llmgw mirror serve` against real clients on 127.0.0.1.

// A test that unwraps panics with the error: that is its failure message.
#![allow(clippy::unwrap_used)]

mod certs;
mod common;
mod front;
mod github;
mod github_gh;
mod head;
mod hub;
mod hub_cache;
mod hub_clients;
mod hub_paging;
mod limits;
mod misc;
mod misses;
mod pypi;
mod pypi_clients;
mod pypi_kit;
mod readiness;
mod removal;
mod router;
mod site_lock;
mod traversal;
