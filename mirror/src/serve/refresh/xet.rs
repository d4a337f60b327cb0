//! The thread that makes the Xet records an index found missing: the LFS
//! files of bundles imported before import made records are served over
//! plain HTTP only, which every client takes below 50 GB but `hf download`
//! refuses above; this pass gives them a record without another import.
//! One blob at a time, off the index thread, each read once for both its
//! sha256 and its chunks.
//!
//! Invariant: a record is written only for a blob whose bytes hash to its
//! name (a damaged blob gets none, and is said, once); until its record is
//! written and the next index built, its file is served exactly as before.
//! Only a folder store's blobs are read here: a bucket store's records come
//! with the import that carried them, which reads the bytes anyway.

use std::io::Read;
use std::sync::Weak;
use std::sync::atomic::Ordering;
use std::time::{Duration, Instant};

use llmgw_shared::xet::{XetHasher, XetRecord};
use llmgw_shared::{Chain, Sha256};
use sha2::Digest;

use crate::serve::index::Blob;
use crate::serve::state::AppState;

/// How long the thread makes records between two index rebuilds (each
/// costs as much as the store is large).
const BATCH_TIME: Duration = Duration::from_secs(2);

/// Starts a thread making the records the current index found missing and
/// not tried yet, unless one is at it.
pub(super) fn make_missing(s: &AppState, weak: &Weak<AppState>) {
    if s.store.is_bucket() || s.xet_making.load(Ordering::Acquire) {
        return;
    }
    let index = s.index();
    let todo: Vec<Blob> = match s.xet_tried.lock() {
        Ok(mut tried) => index
            .xet
            .missing()
            .iter()
            .filter(|b| tried.insert(b.sha256.clone()))
            .cloned()
            .collect(),
        Err(_) => return,
    };
    if todo.is_empty() {
        return;
    }
    s.xet_making.store(true, Ordering::Release);
    let weak = weak.clone();
    let busy = s.xet_making.clone();
    let spawned = std::thread::Builder::new()
        .name("llmgw-xet-records".into())
        .spawn(move || {
            let mut since_rebuild = Instant::now();
            let mut made = false;
            for blob in &todo {
                // Not held between blobs: a server being dropped stops here.
                let Some(s) = weak.upgrade() else { break };
                made |= make_one(&s, blob);
                if made && since_rebuild.elapsed() >= BATCH_TIME {
                    s.rebuild.store(true, Ordering::Release);
                    since_rebuild = Instant::now();
                    made = false;
                }
            }
            if made && let Some(s) = weak.upgrade() {
                s.rebuild.store(true, Ordering::Release);
            }
            busy.store(false, Ordering::Release);
        });
    if let Err(e) = spawned {
        tracing::error!(error = %e, "cannot start the thread that makes missing Xet records; those files are served over plain HTTP only");
        s.xet_making.store(false, Ordering::Release);
    }
}

/// Makes and writes `blob`'s record; whether one was written.
fn make_one(s: &AppState, blob: &Blob) -> bool {
    let path = s.store.blob_file(&blob.sha256);
    let record = match record_of(&path, &blob.sha256) {
        Ok(Some(record)) if record.size() == blob.size => record,
        Ok(_) => {
            tracing::error!(blob = %blob.sha256, path = %path.display(),
                "held blob does not hash to its name: no Xet record made for it (run `llmgw mirror verify`)");
            return false;
        }
        // Gone since the index was built (a gc): nothing to serve.
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => return false,
        Err(e) => {
            tracing::error!(blob = %blob.sha256, path = %path.display(), error = %Chain(&e),
                "held blob unreadable: no Xet record made for it");
            return false;
        }
    };
    match crate::store::xet::write(&s.store, &blob.sha256, &record) {
        Ok(()) => {
            tracing::info!(blob = %blob.sha256, xet_hash = %record.file_hash, "Xet record made for a blob held without one");
            true
        }
        Err(e) => {
            tracing::error!(blob = %blob.sha256, error = %Chain(&e), "cannot write a Xet record");
            false
        }
    }
}

/// The record of the file at `path`, if its bytes hash to `sha256`.
fn record_of(path: &std::path::Path, sha256: &Sha256) -> std::io::Result<Option<XetRecord>> {
    let mut file = std::fs::File::open(path)?;
    let mut sha = sha2::Sha256::new();
    let mut xet = XetHasher::new();
    let mut buf = vec![0u8; 1 << 20];
    loop {
        let n = match file.read(&mut buf) {
            Ok(0) => break,
            Ok(n) => n,
            Err(e) if e.kind() == std::io::ErrorKind::Interrupted => continue,
            Err(e) => return Err(e),
        };
        sha.update(&buf[..n]);
        xet.update(&buf[..n]);
    }
    let digest: [u8; 32] = sha.finalize().into();
    Ok((Sha256::from_bytes(&digest) == *sha256).then(|| xet.finish()))
}
