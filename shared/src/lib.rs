//! What llmgw's bundler and mirror agree on: which builds exist (the recipe
//! table), what a bundle says it holds (the manifest), how bytes are
//! checked (digests, checksum files, minisign), which names are safe and how
//! untrusted text is printed.

pub mod digest;
pub mod have;
pub mod manifest;
pub mod names;
pub mod parity;
pub mod recipe;
pub mod shown;
pub mod signer;
pub mod signing;
pub mod sums;
pub mod time;
