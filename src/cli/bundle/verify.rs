//! `llmgw bundle verify`: checks a bundle (or volumes) against its manifest
//! sha256 without a store; nothing is written.

use std::path::PathBuf;

use crate::cli::progress::Blobs;
use clap::Args;
use llmgw_mirror::{HashOnly, Outcome, Summary};
use llmgw_shared::BundleId;

use super::import::{parse_sha256_arg, signatures_text};
use crate::cli::help::{self, EXIT_CODES};
use crate::cli::{OutputArg, print};

#[derive(Args, Debug)]
#[command(
    after_help = help::after(help::VERIFY, EXIT_CODES),
    mut_arg("json", |a| a.help("Print a JSON summary on stdout instead of text."))
)]
pub struct VerifyArgs {
    /// The bundle: a .tar, a .tar.zst or a directory; or one or more volumes of a set
    /// written with --volume-size (each checked on its own).
    #[arg(required = true, num_args = 1..)]
    pub bundle: Vec<PathBuf>,
    /// The bundle's manifest sha256: 64 hex digits, or the path of the
    /// `.sha256` file create wrote.
    #[arg(long, value_parser = parse_sha256_arg)]
    pub sha256: BundleId,
    /// A minisign public key (KEY.pub) trusted for llmgw's release; repeat
    /// for several.
    #[arg(long = "trust", value_name = "KEY.pub")]
    pub trust: Vec<PathBuf>,
    #[command(flatten)]
    pub output: OutputArg,
}

pub fn run_verify(a: VerifyArgs) -> anyhow::Result<()> {
    if llmgw_mirror::is_volume_set(&a.bundle) {
        return super::import::volumes::run_verify(&a.bundle, &a.sha256, a.output.json);
    }
    let bundle = a.bundle[0].clone();
    let keys = a
        .trust
        .iter()
        .map(|p| llmgw_mirror::read_key_file(p))
        .collect::<Result<Vec<_>, _>>()?;
    let progress = Blobs::new("verifying");
    let outcome = llmgw_mirror::check_bundle(&bundle, &a.sha256, &keys, &mut HashOnly, &progress)
        .map_err(|e| {
        let e = e.with_trust_fix(
            "if you trust that key, give its public key file with --trust KEY.pub (repeatable)",
        );
        anyhow::Error::new(e).context(format!("bundle {} refused", bundle.display()))
    })?;
    let Outcome::Verified(v) = outcome else {
        anyhow::bail!("the check stopped early");
    };
    let not_checked: String = v
        .unchecked
        .iter()
        .map(|u| format!("not checked here (no store): {u}\n"))
        .collect();
    if a.output.json {
        print(&format!(
            "{}\n",
            serde_json::to_value(super::Printed {
                status: "verified",
                result: &*v,
                bundle: Summary::of(&v.manifest_sha256, &v.manifest),
            })?
        ))
    } else {
        print(&format!(
            "{}{not_checked}verified: manifest sha256 {} as given; {}; {} ({} bytes) hashed \
             and matched; nothing was written\n",
            Summary::of(&v.manifest_sha256, &v.manifest).to_text(),
            v.manifest_sha256,
            signatures_text(&v.proved),
            llmgw_shared::plural(v.proved.blobs_hashed, "blob", "blobs"),
            v.proved.bytes_hashed
        ))
    }
}
