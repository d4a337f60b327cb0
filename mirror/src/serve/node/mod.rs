//! What a node is told and what it fetches besides the protocols: one
//! answer to "how do I point a node at this mirror" — for what a store
//! holds, the exact variables, install lines and files a node sets, as JSON
//! (`GET /-/env`), as a shell block (`llmgw mirror env`) and on the front
//! page — and the runtime extras it downloads (`/extras/<host>/<path>`).
//!
//! Invariant: one function ([`node_env`]) decides every line from a
//! [`Holds`] — what is held, made either from the held manifests (the
//! command) or from the serving index (the route and the page) — so they
//! never disagree; a variable is named only for what the store holds, and
//! never two that clients refuse together (uv's interpreter list and its
//! install mirror: uv 0.13 rejects the install when both are set).

mod env;
pub mod extras;
pub mod extras_env;
mod holds;
mod shell;

pub use env::{EnvSettings, NodeEnv, node_env};
pub use extras_env::LeftOut;
pub use holds::Holds;

#[cfg(test)]
mod tests;
