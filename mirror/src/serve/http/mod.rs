//! The HTTP plumbing every protocol answers through: a request's path and
//! query turned into checked names ([`paths`]), responses and the error
//! shapes clients key off ([`respond`]), and sending stored bytes — a blob
//! ([`files`]), a byte range of it ([`range`]), several blobs as one body
//! ([`concat`]).
//!
//! Invariant: nothing here knows a protocol or the server's state; it
//! reads the index only for a blob's sha256 and size, so every protocol
//! folder may use it and it uses none of them.

pub mod concat;
pub mod error;
pub mod files;
pub mod paths;
pub mod range;
pub mod respond;
