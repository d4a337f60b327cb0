//! Reading and checking a bundle as it streams: the reader (a directory,
//! a tar, a tar.zst), the tar headers it trusts, the zstd frames, the
//! checks of every blob against the manifest, and the bundle's signature.
//!
//! Invariant: nothing here writes into a store; a bundle's bytes reach the
//! store only through a [`verify::Target`] that import gives it, and only
//! after they hashed to their names.

pub mod reader;
pub mod sbom;
pub mod signed;
pub mod tar_headers;
pub mod unzstd;
pub mod verify;

/// A signature entry (`manifest.json.minisig`) larger than this is not a
/// minisign signature: refused before it is read.
pub const MAX_SIGNATURE_BYTES: u64 = 64 * 1024;
