//! The air-gapped half of llmgw offline: the mirror store, importing and
//! checking bundles into it, and serving it to nodes over HTTP.

pub mod store;
