//! `llmgw mirror export`: a held bundle written again, for the next
//! enclave: the same manifest bytes (so the same sha256), the same
//! signature, channel and sequence, its blobs from the store, checked as
//! import will check it before it is put at `--out`.

use std::path::{Path, PathBuf};

use anyhow::Context;
use clap::Args;

use crate::cli::help::{self, EXIT_CODES};
use crate::cli::{StoreArg, print};

#[derive(Args, Debug)]
#[command(after_help = help::after(help::EXPORT, EXIT_CODES))]
pub struct ExportArgs {
    /// The bundle's manifest sha256, or a unique prefix of it (`llmgw mirror list`).
    pub sha256: String,
    /// Where to write it: NAME.tar, NAME.tar.zst, or a directory (any other name).
    #[arg(long, value_name = "PATH")]
    pub out: PathBuf,
    #[command(flatten)]
    pub store: StoreArg,
}

pub fn run_export(a: ExportArgs) -> anyhow::Result<()> {
    if a.out.exists() {
        anyhow::bail!(
            "{} exists; export never replaces a file: name another --out",
            a.out.display()
        );
    }
    let location = a.store.location_from_env();
    let (id, bytes) = location.transact(None, |store| -> anyhow::Result<_> {
        let e = llmgw_mirror::exportable(store, &a.sha256)?;
        let trusted: Vec<_> = llmgw_mirror::trusted_keys(store, llmgw_mirror::Role::Release)
            .context("reading the keys the store trusts for llmgw's releases")?
            .into_iter()
            .map(|(_, key)| key)
            .collect();
        let blobs: Vec<_> = e
            .blobs
            .iter()
            .map(|(sha256, size, path)| llmgw_bundler::BlobFile {
                sha256: sha256.clone(),
                size: *size,
                path: path.clone(),
            })
            .collect();
        let checker = crate::cli::check_written::AsImportWould::with_keys(trusted);
        let id = e.id.clone();
        let check = move |path: &Path| -> Result<(), llmgw_bundler::CheckError> {
            use llmgw_bundler::CheckWritten;
            checker.check(path, &id)
        };
        llmgw_bundler::export::export(
            &a.out,
            &e.manifest,
            e.signature.as_deref(),
            &blobs,
            0,
            Some(&check),
        )?;
        let bytes: u64 = e.blobs.iter().map(|(_, size, _)| size).sum();
        Ok((e.id, bytes))
    })?;
    let sums = PathBuf::from(format!("{}.sha256", a.out.display()));
    std::fs::write(&sums, format!("{id}\n"))
        .with_context(|| format!("writing {}", sums.display()))?;
    print(&format!(
        "exported bundle {id} to {} ({bytes} bytes of blobs), checked as import will check \
         it; its manifest sha256 is in {} (carry it apart from the bundle)\n",
        a.out.display(),
        sums.display()
    ))
}
