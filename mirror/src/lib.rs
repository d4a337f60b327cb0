//! The air-gapped half of llmgw offline: the mirror store, importing and
//! checking bundles into it, and serving it to nodes over HTTP.

mod bundle_reader;
mod claims;
mod fsutil;
pub mod gc;
mod have;
pub mod import;
pub mod inspect;
mod new_store;
mod progress;
mod series;
pub mod serve;
mod signed;
mod state;
mod store;
mod store_verify;
mod tar_headers;
pub mod trust;
mod unzstd;
pub mod verify;
pub mod volumes;

// The face. The command namespaces above are public (`import`, `verify`,
// `volumes`, `serve`, `trust`, `gc`, `inspect`: what each command of the CLI
// calls); the plumbing under them is private, and what the CLI and the tests
// need of it is named here.
pub use fsutil::{StoreLock, read_bounded, write_durable};
pub use have::have_list;
pub use new_store::NewStore;
pub use progress::Terminal;
pub use series::{Policy, read_head};
pub use state::held_in_order;
pub use store::backend::{BlobMeta, BlobStore, Put};
#[doc(hidden)]
pub use store::conformance;
pub use store::fs::FsBlobs;
pub use store::{Store, StoreError, layout, remote, s3};
pub use store_verify::verify_store;
