//! `llmgw mirror verify`: re-hash every blob in the store and check every
//! held manifest, to find disk rot or hand edits after import. Reads only.
//!
//! It holds the store lock shared for its whole walk, so an import, gc or
//! remove (which take it exclusively) cannot change the store under it: a
//! blob gc'd halfway through is never reported as damage. It is safe while
//! the store is served. Blobs no held manifest names are not damage: they
//! are listed apart as unreferenced (a removed bundle's, or verified blobs
//! an import killed during its commit left behind), for `mirror gc`.

use std::io::Read;
use std::path::PathBuf;

use sha2::{Digest, Sha256};

use crate::fsutil::StoreLock;
use crate::progress::Progress;
use crate::store::{Store, StoreError};

/// One thing found wrong.
#[derive(Debug, Clone, serde::Serialize)]
pub struct Damage {
    pub path: PathBuf,
    pub problem: String,
}

/// What `mirror verify` found.
#[derive(Debug, Clone, Default, serde::Serialize)]
pub struct StoreReport {
    pub bundles: usize,
    pub blobs_checked: usize,
    pub bytes_checked: u64,
    pub damaged: Vec<Damage>,
    /// Intact blobs that no held manifest names.
    pub unreferenced: Vec<PathBuf>,
}

/// Re-hashes every blob; checks each manifest's hash and that every blob
/// it names is present with its size.
pub fn verify_store(store: &Store, progress: &dyn Progress) -> Result<StoreReport, StoreError> {
    let _lock = StoreLock::acquire_shared(&store.lock_path(), "`llmgw mirror verify`")?;
    let mut report = StoreReport::default();
    let mut named = std::collections::BTreeMap::new();
    for id in store.bundle_ids()? {
        report.bundles += 1;
        match store.read_bundle(&id) {
            Ok(m) => named.extend(m.blobs()),
            Err(e) => report.damaged.push(Damage {
                path: store.bundle_path(&id).unwrap_or_default(),
                problem: llmgw_shared::chain(&e),
            }),
        }
    }
    let files = store.blob_files()?;
    let total: u64 = files
        .iter()
        .filter_map(|(_, p)| std::fs::metadata(p).ok())
        .map(|m| m.len())
        .sum();
    progress.begin(total);
    let mut buf = vec![0u8; crate::bundle_reader::CHUNK];
    for (name, path) in &files {
        if store.blob_path(name).as_deref() != Some(path.as_path()) {
            report.damaged.push(Damage {
                path: path.clone(),
                problem: "is not a blob: its name is not the 64-hex sha256 filed under its first two digits".into(),
            });
            continue;
        }
        progress.blob(&path.display().to_string(), 0);
        let mut f = match std::fs::File::open(path) {
            Ok(f) => f,
            Err(e) => {
                report.damaged.push(Damage {
                    path: path.clone(),
                    problem: format!("cannot be read: {e}"),
                });
                continue;
            }
        };
        let mut h = Sha256::new();
        let mut len = 0u64;
        let read = loop {
            match f.read(&mut buf) {
                Ok(0) => break Ok(()),
                Ok(n) => {
                    h.update(&buf[..n]);
                    len += n as u64;
                    progress.advance(n as u64);
                }
                Err(e) if e.kind() == std::io::ErrorKind::Interrupted => {}
                Err(e) => break Err(e),
            }
        };
        report.blobs_checked += 1;
        report.bytes_checked += len;
        if let Err(e) = read {
            report.damaged.push(Damage {
                path: path.clone(),
                problem: format!("cannot be read: {e}"),
            });
            continue;
        }
        let actual = hex::encode(h.finalize());
        if &actual != name {
            report.damaged.push(Damage {
                path: path.clone(),
                problem: format!("its bytes hash to sha256 {actual}, expected {name} (its name)"),
            });
        } else if !named.contains_key(name) {
            report.unreferenced.push(path.clone());
        }
    }
    progress.finish();
    for (sha, size) in &named {
        match store.blob_path(sha).map(std::fs::metadata) {
            Some(Ok(m)) if m.len() == *size => {}
            Some(Ok(m)) => {
                // Hashing above already names a damaged blob; a size that
                // differs and still hashes right cannot happen.
                if !report
                    .damaged
                    .iter()
                    .any(|d| Some(&d.path) == store.blob_path(sha).as_ref())
                {
                    report.damaged.push(Damage {
                        path: store.blob_path(sha).unwrap_or_default(),
                        problem: format!("is {} bytes, a held manifest declares {size}", m.len()),
                    });
                }
            }
            _ => report.damaged.push(Damage {
                path: store.blob_path(sha).unwrap_or_default(),
                problem: "is missing, but a held manifest names it".into(),
            }),
        }
    }
    Ok(report)
}
