//! The air-gapped half of llmgw offline: the mirror store, importing and
//! checking bundles into it, and serving it to nodes over HTTP.

mod bundle;
mod import;
mod push;
mod serve;
mod store;
#[cfg(test)]
mod test_ids;

// The face: what the CLI (`src/cli/`) and the integration tests use, and
// nothing else. Every module is private, so a module's `pub` means "for the
// rest of this crate" and an item nothing uses is reported as dead code.

// The store: one object whatever keeps its blobs, where it is, and the one
// transaction every command runs on it (lock, pull, work, publish).
pub use store::Store;
pub use store::fsutil::{StoreLock, read_bounded, throwaway_stores_only, write_durable};
pub use store::new_store::NewStore;
pub use store::session::{
    BucketAccess, BucketLocation, BucketServing, Session, SessionError, StoreLocation,
};

// The blob backends (a folder, a bucket, #16) behind the `BlobStore` trait,
// and a bucket's lock object and the local copy of its manifests and state.
pub use store::backend::{BlobMeta, BlobStore};
pub use store::remote::{Pushed, Remote, RemoteLock};
pub use store::s3::{PART as S3_PART, S3Blobs, S3Config};

// What every `BlobStore` backend must do, for a backend's tests (the
// `testing` feature): not part of the shipped crate.
#[cfg(feature = "testing")]
pub use store::conformance;

// `llmgw bundle import` and `bundle verify`: a bundle checked as it streams,
// and taken into the store.
pub use bundle::signed::SignedRelease;
pub use bundle::verify::{
    HashOnly, Outcome, Proved, PublisherVerified, WrittenBy, WrittenFor, blob_names, check_bundle,
};
pub use import::run::{ImportRunError, Imported, import_into};
pub use import::{ImportError, ImportOptions, ImportOutcome, ImportReport, import_with};

// The same for a bundle cut into volumes.
pub use import::volumes::import::{Incomplete, Progressed, VolumesOutcome, import_volumes};
pub use import::volumes::index::Slot;
pub use import::volumes::verify::{
    SetCheck, describe as describe_volume, describe_read as describe_volume_read, is_volume_set,
    verify_volumes,
};

// `llmgw bundle sbom`: the SBOM a bundle carries, checked against its manifest.
pub use bundle::sbom::{SbomError, read_sbom as bundle_sbom};

// What a store holds: listing, summaries, have-lists, checking, gc.
pub use store::HeldManifest;
pub use store::export::{ExportError, Exportable, exportable};

// `llmgw mirror push`: what the store holds, as a plan the registry client sends.
pub use push::{Pick as PushPick, PushPlanError, plan as push_plan};
pub use store::gc::{GcOptions, gc, remove as remove_bundle};
pub use store::have::have_list;
pub use store::inspect::{Summary, human_bytes, inspect};
pub use store::model_files::ModelFiles;
pub use store::series::follow::{Followed, first_signed as first_followed, list as followed_list};
pub use store::series::{Policy, read_head};
pub use store::state::held_in_order;
pub use store::summaries::held_summaries;
pub use store::verify::verify_store;

// `llmgw bundle trust`: the keys a store trusts, by role.
pub use store::trust::{
    Added, Role, add as add_trusted_key, load_role as trusted_keys, read_key_file,
    remove as remove_trusted_key,
};

// `llmgw mirror serve`.
pub use serve::cache::MAX_BYTES as CACHE_MAX_BYTES;
pub use serve::conn::{ConnLimits, default_max_connections};
pub use serve::http::files::MMAP_THRESHOLD;
pub use serve::misses::{Miss, WantList, read_all as read_misses, to_bytes as want_list_bytes};
pub use serve::node::{
    EnvSettings, Holds as NodeHolds, LeftOut as ExtraLeftOut, NodeEnv, node_env,
};
pub use serve::ops::store_check::Held;
pub use serve::state::{AppState, Readiness};
pub use serve::{Running, ServeConfig, TlsFiles, router, start};
