//! `llmgw bundle sbom BUNDLE`: prints the CycloneDX 1.6 JSON SBOM the bundle
//! carries, its bytes checked against the sha256 the manifest names; the
//! manifest's own sha256 goes to stderr, to compare with the hash carried
//! apart (import checks it; this command, like `inspect`, does not).

use std::path::PathBuf;

use clap::Args;

use crate::cli::help::{self, EXIT_CODES};
use crate::cli::print;

#[derive(Args, Debug)]
#[command(after_help = help::after(help::SBOM, EXIT_CODES))]
pub struct SbomArgs {
    /// The bundle: a .tar, a .tar.zst, a directory, or the volume holding the SBOM.
    pub bundle: PathBuf,
}

pub fn run_sbom(a: SbomArgs) -> anyhow::Result<()> {
    let (manifest_sha256, bytes) = llmgw_mirror::bundle_sbom(&a.bundle)?;
    eprintln!(
        "SBOM of the bundle whose manifest sha256 is {manifest_sha256} (checked against that \
         manifest; compare the manifest sha256 with the hash you were given, or use `llmgw \
         bundle verify`)"
    );
    print(&String::from_utf8_lossy(&bytes))
}
