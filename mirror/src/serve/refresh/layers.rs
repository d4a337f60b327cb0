//! The thread that hashes the models' tar layers an index left out (stores
//! imported before import recorded their digests): one at a time, off the
//! index thread, a time budget per batch.
//!
//! Invariant: while it runs, `AppState::hashing` is set (so `/readyz` says
//! the models' images are being hashed); what it learns is saved in the
//! store's state and served from the next build on.

use std::sync::Weak;
use std::sync::atomic::Ordering;
use std::time::Duration;

use crate::serve::index::oci::models::learn;
use crate::serve::state::AppState;

/// Starts a thread hashing the tar layers the last index left out, unless
/// one is at it: the index thread never waits for a file to be read, so
/// imports are served while terabytes are hashed. What it learns is kept in
/// the store's state and served from the next tick on, a batch at a time.
pub(super) fn hash_pending(s: &AppState, weak: &Weak<AppState>) {
    // While a thread hashes, what a newer index left out waits for it.
    if s.hashing.load(Ordering::Acquire) {
        return;
    }
    let pending = match s.pending.lock() {
        Ok(mut p) if !p.is_empty() => std::mem::take(&mut *p),
        _ => return,
    };
    s.hashing.store(true, Ordering::Release);
    let weak = weak.clone();
    let busy = s.hashing.clone();
    let spawned = std::thread::Builder::new()
        .name("llmgw-layers".into())
        .spawn(move || {
            let mut rest = &pending[..];
            while !rest.is_empty() {
                // Not held between batches: a server being dropped stops here.
                let Some(s) = weak.upgrade() else { break };
                let (went, learned) = learn(
                    &s.store,
                    &s.layer_digests,
                    &s.metrics.model_layer_hashed_bytes,
                    rest,
                    LAYERS_BATCH_TIME,
                );
                rest = &rest[went..];
                if learned {
                    s.rebuild.store(true, Ordering::Release);
                }
            }
            busy.store(false, Ordering::Release);
        });
    if let Err(e) = spawned {
        tracing::error!(error = %e, "cannot start the thread that hashes model tar layers; their images are not served");
        s.hashing.store(false, Ordering::Release);
    }
}

/// How long the layer thread hashes between two saves of the digests (and
/// index rebuilds): each costs as much as the store is large.
const LAYERS_BATCH_TIME: Duration = Duration::from_secs(2);
