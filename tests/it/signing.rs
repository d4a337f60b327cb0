//! Signed bundles: made and checked with the real minisign CLI (`create`),
//! imported under the series rules (`import`), served by the highest
//! signed sequence (`serve`), and a signature that binds to its release
//! (`replay`); publishers' Sigstore signatures carried and checked again
//! (`publishers`: GitHub artifact attestations; `pep740`: wheels' PyPI
//! provenance).

mod create;
mod import;
mod pep740;
mod publishers;
mod replay;
mod serve;
