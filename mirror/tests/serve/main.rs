//! `llmgw mirror serve` against real clients on 127.0.0.1.

mod common;
mod github;
mod hostile;
mod hub;
mod misc;
mod pypi;
mod pypi_clients;
mod readiness;
mod traversal;
