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
    /// The next enclave's have-list (`llmgw mirror have` there): leave out the blobs it holds.
    #[arg(long, value_name = "FILE")]
    pub have: Option<PathBuf>,
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
    let held = match &a.have {
        Some(path) => Some(read_have(path)?),
        None => None,
    };
    let location = a.store.location_from_env();
    let (id, bytes, left_out) = location.transact(None, |store| -> anyhow::Result<_> {
        let mut e = llmgw_mirror::exportable(store, &a.sha256)?;
        let before = e.blobs.len();
        if let Some(held) = &held {
            e.blobs.retain(|(sha, size, _)| held.get(sha) != Some(size));
        }
        let left_out = before - e.blobs.len();
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
        let checker = crate::cli::check_written::AsImportWould::with_keys(trusted.clone());
        let id = e.id.clone();
        let check = |path: &Path| -> Result<(), llmgw_bundler::CheckError> {
            use llmgw_bundler::CheckWritten;
            match &held {
                None => checker.check(path, &id),
                Some(held) => {
                    let read =
                        |sha: &llmgw_shared::Sha256, max: u64| store.read_small_blob(sha, max).ok();
                    let mut target = llmgw_mirror::WrittenFor {
                        held: held.clone(),
                        read: &read,
                    };
                    let quiet = llmgw_shared::progress::Quiet;
                    llmgw_mirror::check_bundle(path, &id, &trusted, &mut target, &quiet)?;
                    Ok(())
                }
            }
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
        Ok((e.id, bytes, left_out))
    })?;
    let sums = PathBuf::from(format!("{}.sha256", a.out.display()));
    std::fs::write(&sums, format!("{id}\n"))
        .with_context(|| format!("writing {}", sums.display()))?;
    let thin = match &a.have {
        Some(path) => format!(
            "; {left_out} blobs the have-list {} names left out (the store that wrote it must \
             still hold them at import)",
            path.display()
        ),
        None => String::new(),
    };
    print(&format!(
        "exported bundle {id} to {} ({bytes} bytes of blobs{thin}), checked as import will check \
         it; its manifest sha256 is in {} (carry it apart from the bundle)\n",
        a.out.display(),
        sums.display()
    ))
}

/// The next enclave's have-list: sha256 -> size, read bounded and checked.
fn read_have(path: &Path) -> anyhow::Result<std::collections::BTreeMap<llmgw_shared::Sha256, u64>> {
    let bytes = llmgw_mirror::read_bounded(path, llmgw_shared::MAX_LIST_BYTES)
        .with_context(|| format!("--have {}", path.display()))?;
    let list = llmgw_shared::HaveList::from_json_bytes(&bytes).with_context(|| {
        format!(
            "--have {}: expected a have-list written by `llmgw mirror have` in the next enclave",
            path.display()
        )
    })?;
    Ok(list.blob_map())
}
