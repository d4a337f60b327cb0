//! What llmgw's bundler and mirror agree on: which builds exist (the recipe
//! table), what a bundle says it holds (the manifest), how bytes are
//! checked (digests, checksum files, minisign), which names are safe, how
//! untrusted text is printed, and how an error and its causes are printed
//! ([`chain`]).

pub mod chain;
pub mod digest;
pub mod git;
pub mod have;
pub mod ids;
pub mod manifest;
pub mod names;
pub mod parity;
pub mod recipe;
pub mod shown;
pub mod signer;
pub mod signing;
pub mod space;
pub mod sums;
pub mod time;
pub mod url;
