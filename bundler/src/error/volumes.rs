//! Why the volumes asked for (`--volume-size`, `--chunk-size`) cannot be
//! used: a size that is not one, or volumes too small for what they must
//! hold. Each says which flag to change, and to what.

use thiserror::Error;

pub use llmgw_shared::size::SizeError;

/// The volumes cannot hold the bundle.
#[derive(Debug, Clone, PartialEq, Eq, Error)]
pub enum PackError {
    #[error(
        "--volume-size {volume_size}: a volume must hold the manifest ({head_room} bytes with \
         its tar headers) and at least one piece; choose a larger size"
    )]
    /// A volume has no room for a piece beside the head entries.
    NoRoom {
        /// `--volume-size`, in bytes.
        volume_size: u64,
        /// The bytes the head entries take, with their tar headers.
        head_room: u64,
    },
    #[error(
        "{what} needs pieces of {piece} bytes, and a volume of {volume_size} bytes holds at \
         most {capacity} bytes of pieces beside the manifest; give a smaller --chunk-size (at \
         most {}) or a larger --volume-size",
        capacity - 512
    )]
    /// A piece does not fit an empty volume.
    PieceTooLarge {
        /// `blob <sha256>`, or the largest file for a check before planning.
        what: String,
        /// The piece's size in bytes.
        piece: u64,
        /// `--volume-size`, in bytes.
        volume_size: u64,
        /// The bytes of pieces (with their tar headers) a volume holds.
        capacity: u64,
    },
    #[error("more than 2^32 volumes: choose a larger --volume-size")]
    /// More volumes than the manifest can number.
    TooMany,
}
