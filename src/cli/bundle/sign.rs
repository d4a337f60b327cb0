//! `llmgw bundle sign BUNDLE --key site.key`: sign a bundle made earlier.
//! stdout gets the manifest sha256 (unchanged by signing); stderr says who
//! signed it, in which channel, at which sequence.

use std::path::PathBuf;

use clap::Args;
use llmgw_shared::SecretKey;

const AFTER_HELP: &str = "\
Adds manifest.json.minisig (a prehashed minisign signature over the exact bytes of
manifest.json) as the second entry of a .tar/.tar.zst (rewritten beside it and renamed
over it) or beside the manifest of a directory bundle; a signature already there is
replaced. The manifest, and so the bundle's sha256, is unchanged. Only a manifest with a
sequence is signed (make it with `bundle create --sequence N` or `--sign-key`). If
BUNDLE.sha256 exists, the manifest must hash to what it says.

Exit codes: 0 signed; 1 reading or writing failed; 2 usage: not a bundle, no sequence,
a key that cannot be used";

#[derive(Args, Debug)]
#[command(after_help = crate::cli::help::after_notes(crate::cli::help::SIGN, AFTER_HELP))]
pub struct SignArgs {
    /// The bundle: NAME.tar, NAME.tar.zst or a directory.
    #[arg(value_name = "BUNDLE")]
    pub bundle: PathBuf,
    /// minisign secret key as `minisign -G` writes it (encrypted: LLMGW_SIGN_PASSWORD, or asked).
    #[arg(long, value_name = "KEY")]
    pub key: PathBuf,
}

pub fn run(args: SignArgs) -> anyhow::Result<()> {
    // A key that cannot be used is a usage error (exit 2), as for create.
    let key = SecretKey::load(&args.key, super::create::sign_password())
        .map_err(llmgw_bundler::CreateError::from)?;
    let signed = llmgw_bundler::sign_bundle(&args.bundle, &key)?;
    eprintln!(
        "signed {} with key {}: channel {}, sequence {}{}",
        args.bundle.display(),
        signed.key_id,
        signed.channel,
        signed.sequence,
        if signed.replaced {
            " (replaced the signature it had)"
        } else {
            ""
        }
    );
    crate::cli::print(&format!("{}\n", signed.manifest_sha256))
}
