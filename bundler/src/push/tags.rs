//! What a tag the registry already holds becomes, by `--tags`: replaced
//! (`overwrite`), left alone and said (`keep`), or `merge`d — the image
//! index pushed, plus every platform the tag's index holds that ours does
//! not (as mindthegap's merge-with-retain), each attestation kept with the
//! platform manifest it is about.
//!
//! Invariant: a merged index lists only manifests the registry already
//! holds (ours were pushed first, the others are the tag's own), ours win
//! where both name a platform, and it is canonical JSON of our index with
//! the kept entries appended, so the same two indexes merge to the same
//! bytes.

use std::collections::BTreeSet;

use serde_json::Value;

/// `--tags`: what to do with a tag that names another manifest.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum TagPolicy {
    /// Move the tag to ours.
    Overwrite,
    /// Leave it, and say so.
    Keep,
    /// Merge the two indexes.
    Merge,
}

/// Docker's annotation on an attestation manifest naming the manifest it
/// is about.
const REFERENCE_DIGEST: &str = "vnd.docker.reference.digest";

/// Whether a media type is an index.
pub fn is_index(media_type: &str) -> bool {
    matches!(
        media_type,
        "application/vnd.oci.image.index.v1+json"
            | "application/vnd.docker.distribution.manifest.list.v2+json"
    )
}

/// `os/arch[/variant]` of an index entry, if it names one.
fn platform(entry: &Value) -> Option<String> {
    let p = entry.get("platform")?;
    let os = p.get("os")?.as_str()?;
    let arch = p.get("architecture")?.as_str()?;
    Some(match p.get("variant").and_then(Value::as_str) {
        Some(v) => format!("{os}/{arch}/{v}"),
        None => format!("{os}/{arch}"),
    })
}

fn digest(entry: &Value) -> Option<&str> {
    entry.get("digest").and_then(Value::as_str)
}

/// Our index with the entries of `theirs` it lacks appended; `Err` says
/// why either is not an index one can merge.
pub fn merge(ours: &[u8], theirs: &[u8]) -> Result<Vec<u8>, String> {
    let mut ours: Value =
        serde_json::from_slice(ours).map_err(|_| "ours is not JSON".to_string())?;
    let theirs: Value =
        serde_json::from_slice(theirs).map_err(|_| "the tag's index is not JSON".to_string())?;
    let their_entries = theirs
        .get("manifests")
        .and_then(Value::as_array)
        .ok_or("the tag's index lists no manifests")?
        .clone();
    let list = ours
        .get_mut("manifests")
        .and_then(Value::as_array_mut)
        .ok_or("ours lists no manifests")?;
    let our_digests: BTreeSet<String> = list.iter().filter_map(digest).map(String::from).collect();
    let our_platforms: BTreeSet<String> = list
        .iter()
        .filter_map(platform)
        .filter(|p| p != "unknown/unknown")
        .collect();
    // Their platform manifests we do not have, then the attestations about
    // those.
    let kept: Vec<&Value> = their_entries
        .iter()
        .filter(|e| digest(e).is_some_and(|d| !our_digests.contains(d)))
        .filter(|e| {
            platform(e).is_some_and(|p| p != "unknown/unknown" && !our_platforms.contains(&p))
        })
        .collect();
    let kept_digests: BTreeSet<&str> = kept.iter().filter_map(|e| digest(e)).collect();
    let attestations = their_entries.iter().filter(|e| {
        e.pointer(&format!(
            "/annotations/{}",
            REFERENCE_DIGEST.replace('/', "~1")
        ))
        .and_then(Value::as_str)
        .is_some_and(|d| kept_digests.contains(d))
            && digest(e).is_some_and(|d| !our_digests.contains(d))
    });
    let mut added: Vec<Value> = kept.iter().map(|e| (*e).clone()).collect();
    added.extend(attestations.cloned());
    list.extend(added);
    serde_json::to_vec(&ours).map_err(|e| e.to_string())
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn entry(d: &str, p: &str) -> Value {
        let (os, arch) = p.split_once('/').unwrap();
        json!({"mediaType": "m", "digest": d, "size": 1, "platform": {"os": os, "architecture": arch}})
    }

    #[test]
    fn merge_keeps_their_other_platforms_and_their_attestations_ours_win() {
        let ours = json!({"schemaVersion": 2, "mediaType": "application/vnd.oci.image.index.v1+json",
            "manifests": [entry("sha256:a1", "linux/amd64")]});
        let mut att = entry("sha256:t2", "unknown/unknown");
        att["annotations"] = json!({REFERENCE_DIGEST: "sha256:b2"});
        let mut att_old = entry("sha256:t1", "unknown/unknown");
        att_old["annotations"] = json!({REFERENCE_DIGEST: "sha256:a0"});
        let theirs = json!({"manifests": [entry("sha256:a0", "linux/amd64"),
            entry("sha256:b2", "linux/arm64"), att, att_old]});
        let merged: Value = serde_json::from_slice(
            &merge(
                &serde_json::to_vec(&ours).unwrap(),
                &serde_json::to_vec(&theirs).unwrap(),
            )
            .unwrap(),
        )
        .unwrap();
        let digests: Vec<&str> = merged["manifests"]
            .as_array()
            .unwrap()
            .iter()
            .filter_map(digest)
            .collect();
        assert_eq!(digests, ["sha256:a1", "sha256:b2", "sha256:t2"]);
        assert!(merge(b"{}", b"{\"manifests\":[]}").is_err());
    }
}
