//! `llmgw mirror have`: what a store holds, as a list to carry back to the
//! connected side, and the writing of such lists (also `--need-out`).

use std::path::{Path, PathBuf};

use anyhow::Context;
use clap::Args;

use crate::cli::print;

const HAVE_HELP: &str = "\
Writes canonical JSON of what the store holds: its id (made once, STORE/state/store-id),
every held manifest, the highest sequence per signing key and channel, and every blob's
sha256 and size. A store in a bucket (--store s3://BUCKET/PREFIX, reached with the AWS_*
variables) is listed under its lock object. Carry it to the connected side for `llmgw bundle create … --have FILE`,
which then carries only what the store lacks. stdout gets the list's sha256 (recorded in
the delta as delta.bases). The list needs no signature: a forged one can only make a
bundle carry more, or import name what is missing.

Exit codes: 0 written, 1 failed (the reason is on stderr), 2 usage error.";

#[derive(Args, Debug)]
#[command(after_help = crate::cli::help::after_notes(crate::cli::help::HAVE, HAVE_HELP))]
pub struct HaveArgs {
    #[command(flatten)]
    pub store: crate::cli::StoreArg,
    /// Where to write the list (replaced whole if it exists).
    #[arg(long, value_name = "FILE")]
    pub out: PathBuf,
}

pub fn run_have(a: HaveArgs) -> anyhow::Result<()> {
    // A bucket is worked on under its lock object: the list may make the
    // store's id, which then goes up with the state.
    let list = a
        .store
        .location_from_env()
        .transact(Some("llmgw mirror have"), |store| {
            if !store.is_store() {
                anyhow::bail!(
                    "{} is not a mirror store (no bundles/ folder, or in a bucket no manifest, \
                     trusted key or state under the prefix); give the --store that `llmgw \
                     bundle import` fills",
                    a.store.path.display()
                );
            }
            Ok(llmgw_mirror::have_list(store)?)
        })?;
    let bytes = list.to_canonical_json();
    write_whole(&a.out, &bytes)?;
    eprintln!(
        "wrote {}: store {}, {}, {} series, {}",
        a.out.display(),
        list.store_id,
        llmgw_shared::plural(list.manifests.len(), "bundle", "bundles"),
        list.series.len(),
        list.blobs.len()
    );
    print(&format!("{}\n", llmgw_shared::sha256_hex(&bytes)))
}

/// Writes `path` whole: a temporary file beside it, synced, renamed over.
pub fn write_whole(path: &Path, bytes: &[u8]) -> anyhow::Result<()> {
    let mut tmp = path.as_os_str().to_os_string();
    tmp.push(format!(".tmp-{}", std::process::id()));
    let tmp = PathBuf::from(tmp);
    let result = llmgw_mirror::write_durable(&tmp, bytes)
        .map_err(anyhow::Error::from)
        .and_then(|()| {
            std::fs::rename(&tmp, path).with_context(|| format!("writing {}", path.display()))
        });
    if result.is_err() {
        let _ = std::fs::remove_file(&tmp);
    }
    result
}
