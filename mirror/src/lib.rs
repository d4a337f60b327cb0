//! The air-gapped half of llmgw offline: the mirror store, importing and
//! checking bundles into it, and serving it to nodes over HTTP.

pub mod bundle_reader;
pub mod claims;
pub mod fsutil;
pub mod gc;
pub mod have;
pub mod import;
pub mod inspect;
pub mod new_store;
pub mod progress;
pub mod series;
pub mod serve;
pub mod signed;
pub mod state;
pub mod store;
pub mod store_verify;
pub mod tar_headers;
pub mod trust;
pub mod unzstd;
pub mod verify;
pub mod volumes;
