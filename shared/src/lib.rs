//! What llmgw's bundler and mirror agree on: which builds exist (the recipe
//! table), what a bundle says it holds (the manifest), how bytes are
//! checked (digests, checksum files, minisign), which names are safe, how
//! untrusted text is printed, how an error and its causes are printed
//! ([`chain`]), and the events a long run reports ([`progress`]).

// Everything public is documented: the crate is the vocabulary the bundler
// and the mirror share, so each type says what it is and why it exists.
mod chain;
mod digest;
mod git;
mod have;
mod ids;
pub mod kernels;
pub mod manifest;
mod names;
pub mod parity;
pub mod progress;
pub mod provenance;
pub mod push;
pub mod recipe;
mod shown;
mod signer;
pub mod signing;
pub mod size;
mod space;
mod sums;
mod time;
pub mod url;
mod want;
mod words;
pub mod xet;

// The face: the vocabulary both sides share is public by module (`manifest`,
// `recipe`, `signing`, `parity`, `progress`, `url`); the helpers are private, and what the other
// crates use of them is named here.
pub use chain::{Chain, chain};
pub use digest::{
    HashReader, StreamDigest, StreamHasher, git_blob_sha1_hex, lfs_pointer, sha256_hex,
};
pub use git::{TreeItem, tree_oid};
pub use have::{HaveList, HeldSeries, MAX_LIST_BYTES, NeedList, blob_uses};
pub use ids::{BadHex, BundleId, GitOid, RepoId, Sha256, XetHash};
pub use names::{
    UnsafeName, check_file_name, check_ref_name, check_relative_path, check_repo_id, is_sha1_hex,
    is_sha256_hex, pep503_normalize, repo_key,
};
pub use shown::{is_invisible_or_bidi, shown, shown_message};
pub use signer::{Password, SecretKey, SecretKeyFault, SignerError};
pub use space::{FreeSpace, free_space, is_fat};
pub use sums::{SumsError, parse_sha256sums, parse_sidecar};
pub use time::{build_time_unix, parse_rfc3339_utc, rfc3339_utc};
pub use want::{MAX_WANT_BYTES, MAX_WANTS, Miss, WANT_LIST_FORMAT, WantList, WantListError};
pub use words::{noun, plural};
