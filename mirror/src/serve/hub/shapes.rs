//! The JSON shapes of the Hub's answers: a repository's info (with its
//! siblings), a tree entry, a commit time.
//!
//! Invariant: every value comes from the index; pure functions of it, so
//! the same index gives the same bytes (the JSON cache relies on that).

use llmgw_shared::manifest::RepoKind;
use serde_json::{Value, json};

use crate::serve::index::xet::XetTable;
use crate::serve::index::{HubFile, HubRepo, Snapshot, TreeEntry};

/// The Hub writes times with milliseconds: `2026-01-01T00:00:00.000Z`.
fn hub_time(rfc3339: &str) -> String {
    match rfc3339.strip_suffix('Z') {
        Some(t) if !t.contains('.') => format!("{t}.000Z"),
        _ => rfc3339.to_string(),
    }
}

pub(super) fn lfs_sibling(f: &HubFile) -> Value {
    json!({"sha256": f.blob.sha256, "size": f.blob.size, "pointerSize": f.pointer_size()})
}

pub(super) fn info_json(repo: &HubRepo, snap: &Snapshot, blobs: bool) -> Value {
    let siblings: Vec<Value> = snap
        .files()
        .map(|f| {
            if blobs {
                let mut v = json!({"rfilename": f.path, "size": f.blob.size, "blobId": f.git_oid});
                if f.lfs {
                    v["lfs"] = lfs_sibling(&f);
                }
                v
            } else {
                json!({"rfilename": f.path})
            }
        })
        .collect();
    let author = repo.id.split('/').next().unwrap_or_default();
    let mut v = json!({
        "_id": &snap.commit[..24],
        "id": repo.id,
        "author": author,
        "sha": snap.commit,
        "lastModified": hub_time(&snap.last_modified),
        "private": false,
        "disabled": false,
        "gated": false,
        "downloads": 0,
        "likes": 0,
        "tags": [],
        "siblings": siblings,
    });
    if repo.kind == RepoKind::Model {
        v["modelId"] = json!(repo.id);
    }
    v
}

/// A tree entry; an LFS file served over Xet gets its `xetHash`, as on
/// the Hub.
pub(super) fn tree_json(entry: &TreeEntry, snap: &Snapshot, xet: &XetTable, expand: bool) -> Value {
    let mut v = match entry {
        TreeEntry::Dir { path, oid } => {
            json!({"type": "directory", "oid": oid, "size": 0, "path": path})
        }
        TreeEntry::File(f) => {
            let mut v =
                json!({"type": "file", "oid": f.git_oid, "size": f.blob.size, "path": f.path});
            if f.lfs {
                v["lfs"] = json!({"oid": f.blob.sha256, "size": f.blob.size, "pointerSize": f.pointer_size()});
                if let Some(h) = xet.hash_of(&f.blob.sha256) {
                    v["xetHash"] = json!(h.as_str());
                }
            }
            v
        }
    };
    if expand {
        v["lastCommit"] = json!({
            "id": snap.commit,
            "title": "Mirrored by llmgw",
            "date": hub_time(&snap.last_modified),
        });
    }
    v
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn hub_times_have_milliseconds() {
        assert_eq!(hub_time("2026-01-01T00:00:00Z"), "2026-01-01T00:00:00.000Z");
        assert_eq!(hub_time("2026-01-01T00:00:00.5Z"), "2026-01-01T00:00:00.5Z");
    }
}
