//! What a store holds, told to the connected side (`llmgw mirror have`),
//! and what a delta lacks in it (the prerequisite check of import).
//!
//! Invariants: the store id (`STORE/state/store-id`, 32 random hex digits)
//! is made once, through [`crate::store::state::write_file`], and never changes;
//! a have-list names only blobs a held manifest names and the store has
//! (at the named size), so `mirror gc` cannot take one away while its
//! bundle is held; the prerequisite check reads and writes nothing but
//! what it is handed, so a refused delta leaves the store as it was.

use std::collections::BTreeMap;
use std::io::Read;

use llmgw_shared::manifest::{BlobRef, Manifest, NeededBlob};
use llmgw_shared::shown;
use llmgw_shared::{BundleId, HaveList, NeedList, Sha256, blob_uses};

use crate::store::series::Series;
use crate::store::state;
use crate::store::{StateFault, StateFile, Store, StoreError};

const STORE_ID_FILE: &str = "store-id";

/// The store's id, if it has one yet.
pub fn store_id(store: &Store) -> Result<Option<String>, StoreError> {
    let Some(bytes) = state::read_file(store, STORE_ID_FILE)? else {
        return Ok(None);
    };
    let id = String::from_utf8_lossy(&bytes).trim().to_string();
    if id.len() != 32 || !id.bytes().all(|b| matches!(b, b'0'..=b'9' | b'a'..=b'f')) {
        return Err(StoreError::BadState {
            path: store.state_dir().join(STORE_ID_FILE),
            file: StateFile::StoreId,
            fault: StateFault::NotAnId { found: id },
            cause: None,
        });
    }
    Ok(Some(id))
}

/// The store's id, made (random, once) if it has none. The caller holds
/// the store lock.
pub fn store_id_or_make(store: &Store) -> Result<String, StoreError> {
    if let Some(id) = store_id(store)? {
        return Ok(id);
    }
    let mut raw = [0u8; 16];
    let urandom = std::path::Path::new("/dev/urandom");
    std::fs::File::open(urandom)
        .and_then(|mut f| f.read_exact(&mut raw))
        .map_err(|e| StoreError::io(urandom, e))?;
    let id = hex::encode(raw);
    state::write_file(store, STORE_ID_FILE, format!("{id}\n").as_bytes())?;
    Ok(id)
}

/// What the store holds: its id (made if missing), the held manifests,
/// the signed series, and every blob a held manifest names that is in
/// `blobs/` (or, for a store in a bucket, in the bucket) at its size. A
/// manifest that cannot be read is an error: a list that left it out would
/// make the next bundle carry its blobs for nothing, and hide the damage.
/// Holds the store lock, since it may make the store's id.
pub fn have_list(store: &Store) -> Result<HaveList, StoreError> {
    let _lock =
        crate::store::fsutil::StoreLock::acquire(&store.lock_path(), "`llmgw mirror have`")?;
    let id = store_id_or_make(store)?;
    let mut manifests = Vec::new();
    let mut blobs: BTreeMap<llmgw_shared::Sha256, u64> = BTreeMap::new();
    // One listing of the folder (and of the bucket, for a store in one),
    // not a look-up per blob: a bucket answers a listing a thousand keys a
    // request.
    let held = store.held_blobs()?;
    for held_manifest in crate::store::state::held_in_order(store)? {
        let (sha, m) = (held_manifest.id, held_manifest.manifest?);
        for (b, size) in m.blobs() {
            if held.get(b.as_str()) == Some(&size) {
                blobs.insert(b, size);
            }
        }
        manifests.push(sha);
    }
    let series = Series::load(store)?.series;
    let blobs = blobs
        .into_iter()
        .map(|(sha256, size)| BlobRef { sha256, size })
        .collect();
    Ok(HaveList::new(id, manifests, series, blobs))
}

/// The prerequisites of a delta that `have` says are not at hand, each
/// with what uses it in the delta's manifest. Empty for a bundle that is
/// not a delta.
pub fn missing_prerequisites(m: &Manifest, have: impl Fn(&Sha256, u64) -> bool) -> Vec<NeededBlob> {
    let Some(delta) = &m.delta else {
        return Vec::new();
    };
    let uses = blob_uses(m);
    delta
        .prerequisites
        .iter()
        .filter(|p| !have(&p.sha256, p.size))
        .map(|p| NeededBlob {
            sha256: p.sha256.clone(),
            size: p.size,
            uses: uses.get(p.sha256.as_str()).cloned().unwrap_or_default(),
        })
        .collect()
}

/// Refuses a delta (bundle `sha256`) whose prerequisites `have` says are
/// not at hand, with the need-list (the import words the refusal:
/// [`missing_message`]). Import calls it before it stages anything, for a
/// bundle and for a volume set.
pub fn check_prerequisites(
    store: &Store,
    sha256: &BundleId,
    m: &Manifest,
    have: impl Fn(&Sha256, u64) -> bool,
) -> Result<(), Box<NeedList>> {
    let missing = missing_prerequisites(m, have);
    if missing.is_empty() {
        return Ok(());
    }
    let id = store_id(store).ok().flatten();
    Err(Box::new(NeedList::new(sha256.clone(), id, missing)))
}

/// How a need-list reads in a message: one line per blob and use,
/// escaped, at most `max` lines and a count of the rest.
pub fn need_text(need: &NeedList, max: usize) -> String {
    let mut lines = Vec::new();
    for b in &need.blobs {
        if b.uses.is_empty() {
            lines.push(format!("  blob {} ({} bytes)", b.sha256, b.size));
        }
        for u in &b.uses {
            lines.push(format!(
                "  {} (sha256 {}, {} bytes)",
                shown(u),
                b.sha256,
                b.size
            ));
        }
    }
    lines.sort();
    let total = lines.len();
    lines.truncate(max);
    let mut out = lines.join("\n");
    if total > max {
        out.push_str(&format!("\n  … and {} more", total - max));
    }
    out
}

/// Why a delta was refused: its prerequisites the store lacks, by what
/// uses them, and what to do.
pub fn missing_message(need: &NeedList) -> String {
    format!(
        "bundle {} is a delta, and this store lacks {} of the blobs it relies on ({} bytes); \
         nothing was staged and the store is unchanged:\n{}\nimport the bundles that carry \
         them first, or write the list with --need-out need.json and make a repair bundle on \
         the connected side with `llmgw bundle create … --need need.json` (the same request)",
        need.bundle,
        need.blobs.len(),
        need.bytes(),
        need_text(need, 50)
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_store_id_is_made_once() {
        let d = tempfile::tempdir().unwrap();
        let store = Store::at(d.path());
        store.create_dirs().unwrap();
        assert_eq!(store_id(&store).unwrap(), None);
        let id = store_id_or_make(&store).unwrap();
        assert_eq!(id.len(), 32);
        assert_eq!(store_id_or_make(&store).unwrap(), id);
        let list = have_list(&store).unwrap();
        assert_eq!(list.store_id, id);
        assert!(list.manifests.is_empty() && list.blobs.is_empty());
        std::fs::write(store.state_dir().join(STORE_ID_FILE), "../x\n").unwrap();
        let err = store_id(&store).unwrap_err().to_string();
        assert!(err.contains("store-id"), "{err}");
    }
}
