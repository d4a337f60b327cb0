//! `llmgw mirror serve` end to end: the whole chain to `hf download` and
//! curl (`e2e`), what `--store` and `--listen` may be (`listen`), what a
//! branch names and what no untrusted bundle may change (`order`,
//! `shadowing`), the miss log that writes the next bundle (`want`), and Xet served
//! from the held blobs to the real `hf_xet` (`xet`).

mod e2e;
mod hub_surface;
mod listen;
mod order;
mod shadowing;
pub(crate) mod want;
mod want_quant;
mod xet;
mod xet_cache;
