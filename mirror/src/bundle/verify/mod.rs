//! The checks every bundle must pass before anything of it is used, in the
//! order the bundle format promises:
//!
//! 1. The first entry is `manifest.json`, no larger than
//!    [`MAX_MANIFEST_BYTES`]; its sha256 is the one the operator was given;
//!    it parses, its format version is known and every name in it is safe
//!    (`manifest`, the gate).
//! 2. Every signed release (llmgw's own) has its `SHA256SUMS.minisig`
//!    verified with a trusted key, and its `SHA256SUMS` agrees with the
//!    manifest about every asset of that release (`signature`).
//! 3. Every later entry is a regular file `blobs/sha256/<64 hex>` that the
//!    manifest names, of the declared size, whose bytes hash to its name;
//!    anything else (links, devices, stray directories or files,
//!    duplicates) is refused (`classify` tells what an entry is from its
//!    header alone). Blobs the bundle lacks must be at hand already.
//!
//! The signature files are ordinary blobs, and blobs come in hash order, so
//! they may arrive after other blobs. Rather than read the bundle twice,
//! the check (`check`, the driver) streams every blob once (`stream`)
//! into the caller's [`Target`] — for an import, a private staging folder
//! under `STORE/tmp/` that is never served — and verifies the signature as
//! soon as both files have passed (or at once, when the store already
//! holds them). A blob only becomes *accepted* (visible in `blobs/`) after
//! this whole check has succeeded, so no blob is accepted before its
//! bundle's signature was checked; see [`crate::import`].
//!
//! 4. Every image and chart is a closed tree under its top digest: each
//!    carried manifest is parsed from its bytes (bounded) and every blob
//!    recorded must be named by one with the same size and media type
//!    (`oci`).
//!
//! Invariant: the check decides; the target only stores. A refusal is a
//! [`VerifyError`]; what goes wrong on the target's side is the target's
//! own error type, carried out as it is.
//!
//! [`MAX_MANIFEST_BYTES`]: llmgw_shared::manifest::MAX_MANIFEST_BYTES

mod check;
mod classify;
mod error;
mod manifest;
mod oci;
mod publisher;
mod signature;
mod stream;
mod target;

pub use check::{Outcome, Proved, check_bundle};
pub use error::VerifyError;
pub use manifest::{blob_names, read_manifest_unverified};
pub use publisher::PublisherVerified;
pub(crate) use stream::{stream_blob_hashed, stream_blob_onto};
pub use target::{BlobSink, HashOnly, Target, WrittenBy, WrittenFor};

#[cfg(test)]
mod tests;
