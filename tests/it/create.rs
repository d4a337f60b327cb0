//! `llmgw bundle create` end to end: the real binary against the loopback
//! fixture upstream (GitHub API + download redirects to another origin, a
//! Gitea-style llmgw release server, a Hub), read back with the real `tar`,
//! `zstd` and `sha256sum`. Grouped by what they show under
//! `tests/it/create/`; `create::common` has the shared helpers.

pub mod common;

mod downloads;
mod latest;
mod outputs;
mod ranges;
mod refusals;
mod rehearsal;
mod revisions;
mod terminal;
mod xet_hashes;

mod deltas;
