//! What `mirror list` prints of each held bundle, kept small beside it in
//! `STORE/state/summary-<id>.json`, so that listing a store reads what it
//! prints and not every manifest in full (#35 item 5: a 100 000-file
//! bundle's manifest is 10 MB).
//!
//! Invariant: a summary file is a function of the manifest `<id>` alone
//! (whose name is its sha256), so it never goes stale; it names its own
//! bundle and the size of the manifest it was made from, and is used only
//! while the manifest's file still has that size. A held bundle without one
//! (an older store, a crash between the writes), or with one that does not
//! read back as its own, is read in full and its file written then (once).
//! A manifest changed in place to other bytes of the same size is listed
//! from its summary; `mirror verify` hashes every manifest and names it.

use llmgw_shared::BundleId;
use serde::{Deserialize, Serialize};

use crate::store::inspect::Summary;
use crate::store::{Store, StoreError};

/// A summary file is never bigger than this (a line per release,
/// repository and environment of one bundle).
const MAX_SUMMARY_BYTES: u64 = 16 << 20;

/// The format of the file; another is read as absent.
const VERSION: u32 = 1;

/// The file as written: the summary, whose it is, and the size of the
/// manifest it was made from.
#[derive(Serialize, Deserialize)]
struct SummaryFile {
    version: u32,
    bundle: String,
    manifest_bytes: u64,
    summary: Summary,
}

/// The summary file of bundle `id`, in `STORE/state/`.
pub fn file_name(id: &str) -> String {
    format!("summary-{id}.json")
}

/// The summary of held bundle `id` as its file says, or `None` when it has
/// no file, one that cannot be read, of another format, not its own, or
/// made from a manifest of another size than the one held now.
pub fn load(store: &Store, id: &BundleId) -> Option<Summary> {
    let path = store.state_dir().join(file_name(id));
    let bytes = crate::store::fsutil::read_bounded(&path, MAX_SUMMARY_BYTES).ok()?;
    let file: SummaryFile = serde_json::from_slice(&bytes).ok()?;
    let held = std::fs::metadata(store.bundle_file(id)).ok()?.len();
    let own = file.version == VERSION
        && file.bundle == id.as_str()
        && file.summary.manifest_sha256 == *id
        && file.manifest_bytes == held;
    own.then_some(file.summary)
}

/// Writes the summary file of held bundle `id`, made from its manifest of
/// `manifest_bytes` bytes. Best effort: without it `mirror list` reads
/// that manifest in full, so a failure is logged, never the caller's.
pub fn record(store: &Store, id: &BundleId, summary: &Summary, manifest_bytes: u64) {
    let file = SummaryFile {
        version: VERSION,
        bundle: id.to_string(),
        manifest_bytes,
        summary: summary.clone(),
    };
    if let Err(e) = crate::store::state::write_json(store, &file_name(id), &file) {
        tracing::warn!(
            bundle = %id,
            error = %llmgw_shared::Chain(&e),
            "the bundle's summary file was not written; `mirror list` reads its manifest in full"
        );
    }
}

/// Reads held bundle `id`'s manifest in full and records its summary.
pub fn record_from_manifest(store: &Store, id: &BundleId) -> Result<Summary, StoreError> {
    let m = store.read_bundle(id)?;
    let summary = Summary::of(id, &m);
    let size = std::fs::metadata(store.bundle_file(id))
        .ok()
        .map(|md| md.len());
    if let Some(size) = size {
        record(store, id, &summary, size);
    }
    Ok(summary)
}

/// Removes the summary file of a bundle no longer held (`mirror remove`).
/// Best effort: a file of a bundle not held is never read.
pub fn forget(store: &Store, id: &str) {
    let _ = std::fs::remove_file(store.state_dir().join(file_name(id)));
}

/// A held bundle's id and its summary, or why its manifest cannot be read.
pub type HeldSummary = (BundleId, Result<Summary, StoreError>);

/// Every held bundle's summary, or why its manifest cannot be read, in
/// import order: from the summary files, reading in full (and recording)
/// only the manifests without one.
pub fn held_summaries(store: &Store) -> Result<Vec<HeldSummary>, StoreError> {
    Ok(crate::store::state::ids_in_order(store)?
        .into_iter()
        .map(|id| {
            let s = load(store, &id).map_or_else(|| record_from_manifest(store, &id), Ok);
            (id, s)
        })
        .collect())
}

#[cfg(test)]
mod tests {
    use super::*;
    use llmgw_shared::manifest::{HfRepo, Manifest, RepoKind};

    /// A held bundle of model `acme/m{i}` with `i + 1` files; its id.
    fn hold(store: &Store, i: usize) -> BundleId {
        let mut m = Manifest::new(vec!["amd64".into()], 1_780_000_000 + i as u64);
        let files = (0..=i)
            .map(|f| {
                let body = format!("file {f} of {i}");
                let sha = llmgw_shared::sha256_hex(body.as_bytes());
                llmgw_shared::manifest::HfFile {
                    path: format!("f{f}.txt"),
                    size: body.len() as u64,
                    sha256: sha.parse().unwrap(),
                    git_oid: "b".repeat(40).parse().unwrap(),
                    lfs: false,
                    publisher_digests: vec![llmgw_shared::manifest::PublisherDigest {
                        source: llmgw_shared::manifest::DigestSource::HfLfsSha256,
                        value: sha.clone(),
                    }],
                    xet_hash: None,
                }
            })
            .collect();
        m.repos.push(HfRepo {
            kind: RepoKind::Model,
            id: format!("acme/m{i}").parse().unwrap(),
            revision: "main".into(),
            ref_kind: None,
            commit: format!("{i:040}"),
            patterns: vec![],
            files,
            kernel: None,
        });
        let bytes = m.to_canonical_json();
        let id = BundleId::of(&bytes);
        std::fs::write(store.bundle_file(&id), &bytes).unwrap();
        id
    }

    /// What `mirror list` printed before summary files: every manifest
    /// read in full.
    fn listed_from_manifests(store: &Store) -> Vec<(BundleId, Summary)> {
        crate::store::state::held_in_order(store)
            .unwrap()
            .into_iter()
            .map(|h| {
                let s = Summary::of(&h.id, &h.manifest.unwrap());
                (h.id, s)
            })
            .collect()
    }

    fn listed(store: &Store) -> Vec<(BundleId, Summary)> {
        held_summaries(store)
            .unwrap()
            .into_iter()
            .map(|(id, s)| (id, s.unwrap()))
            .collect()
    }

    #[test]
    fn a_store_lists_from_its_summaries_without_parsing_a_manifest() {
        let dir = tempfile::tempdir().unwrap();
        let store = Store::at(dir.path());
        store.create_dirs().unwrap();
        let ids: Vec<BundleId> = (0..12).map(|i| hold(&store, i)).collect();
        let before = listed_from_manifests(&store);
        // No summary files yet: read in full once, and recorded.
        assert_eq!(listed(&store), before);
        for id in &ids {
            assert!(store.state_dir().join(file_name(id)).is_file());
        }
        // Every manifest's bytes replaced by others of the same size: not
        // one is parsed, so the list is the same; verify names them all.
        for id in &ids {
            let path = store.bundle_file(id);
            let len = std::fs::metadata(&path).unwrap().len() as usize;
            std::fs::write(&path, vec![b'#'; len]).unwrap();
        }
        // (This store has no import order file, so its order follows the
        // manifests' file times, which the writes just moved: by id.)
        let by_id = |mut l: Vec<(BundleId, Summary)>| {
            l.sort_by(|a, b| a.0.cmp(&b.0));
            l
        };
        assert_eq!(by_id(listed(&store)), by_id(before));
        let report =
            crate::store::verify::verify_store(&store, &llmgw_shared::progress::Quiet).unwrap();
        assert_eq!(report.damaged.len(), ids.len(), "{:?}", report.damaged);
        // A manifest of another size is read in full, and named damaged.
        let short = store.bundle_file(&ids[3]);
        std::fs::write(&short, b"{").unwrap();
        let all = held_summaries(&store).unwrap();
        let damaged: Vec<&BundleId> = all
            .iter()
            .filter(|(_, s)| s.is_err())
            .map(|(id, _)| id)
            .collect();
        assert_eq!(damaged, [&ids[3]]);
        // A summary under another bundle's name is not that bundle's.
        std::fs::copy(
            store.state_dir().join(file_name(&ids[0])),
            store.state_dir().join(file_name(&ids[1])),
        )
        .unwrap();
        assert!(load(&store, &ids[1]).is_none());
        forget(&store, &ids[0]);
        assert!(load(&store, &ids[0]).is_none());
    }
}
