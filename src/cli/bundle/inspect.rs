//! `llmgw bundle inspect`: what a bundle's manifest claims, unverified.

use std::path::PathBuf;

use anyhow::Context;
use clap::Args;
use llmgw_mirror::inspect;

use crate::cli::help::{self, EXIT_CODES};
use crate::cli::{OutputArg, print};

#[derive(Args, Debug)]
#[command(after_help = help::after(help::INSPECT, EXIT_CODES))]
pub struct InspectArgs {
    /// The bundle: a .tar, a .tar.zst or a directory.
    pub bundle: PathBuf,
    #[command(flatten)]
    pub output: OutputArg,
}

pub fn run_inspect(a: InspectArgs) -> anyhow::Result<()> {
    let s = inspect(&a.bundle)
        .with_context(|| format!("cannot read the manifest of {}", a.bundle.display()))?;
    let note = "UNVERIFIED: this is what the bundle's manifest claims; nothing was checked \
                against a hash or signature. Compare manifest_sha256 with the hash you were \
                given, and use `llmgw bundle verify` or `import` to check it.";
    if a.output.json {
        let mut v = serde_json::to_value(&s)?;
        if let Some(o) = v.as_object_mut() {
            o.insert("verified".into(), false.into());
            o.insert("note".into(), note.into());
        }
        print(&format!("{v}\n"))
    } else {
        print(&format!("{note}\n{}", s.to_text()))
    }
}
