//! End-to-end tests of `llmgw bundle import | verify | inspect | trust` and
//! `llmgw mirror list | gc | remove | verify`, running the real binary on
//! bundles made by `llmgw_fixture::kit` (good ones and damaged ones). Grouped by
//! what they show under `tests/it/import/` (with the import attacks: `bounded`,
//! `output`); `import::common` sets up a store.

pub mod common;

mod accepts;
mod commands;
mod durability;
mod refusals;

mod bounded;
mod e2e;
mod output;
