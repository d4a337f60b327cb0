//! Signed bundles: made and checked with the real minisign CLI (`create`),
//! imported under the series rules (`import`), served by the highest
//! signed sequence (`serve`), and a signature that binds to its release
//! (`replay`).

mod create;
mod import;
mod replay;
mod serve;
