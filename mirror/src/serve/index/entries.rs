//! The entries of the index: what one bundle's release and repository
//! become once merged (a Hub repository's are in [`crate::serve::index::hub::snapshot`]).
//!
//! Invariant: an entry names a blob only by its sha256 and size from a
//! verified manifest; nothing here holds a path on disk.

use std::collections::BTreeMap;

use llmgw_shared::{BundleId, Sha256};

/// A bundle held, as `/v1/index` lists it.
#[derive(Debug, Clone)]
pub struct BundleInfo {
    pub id: BundleId,
    pub created: String,
    pub tool: String,
    pub arches: Vec<String>,
    /// The series it belongs to, as the manifest says (shown only).
    pub channel: Option<String>,
    pub sequence: Option<u64>,
    pub expires: Option<String>,
    /// The total size of its distinct blobs.
    pub bytes: u64,
    /// Format 4: its CycloneDX SBOM (`/-/bundles/<id>/sbom.cdx.json`).
    pub sbom: Option<Blob>,
    /// Format 7: the publishers' signatures it carries
    /// (`/-/bundles/<id>/evidence/…`).
    pub signatures: Option<Box<llmgw_shared::manifest::Signatures>>,
}

/// A blob and how big it is.
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct Blob {
    pub sha256: Sha256,
    pub size: u64,
}

/// A release asset.
#[derive(Debug, Clone)]
pub struct AssetEntry {
    pub name: String,
    pub blob: Blob,
    pub content_type: Option<String>,
    /// A stable number for GitHub's `id`, from the repo, tag and name.
    pub id: u64,
}

/// One release of one repository, merged over every bundle carrying it.
#[derive(Debug, Clone)]
pub struct ReleaseEntry {
    /// `owner/repo` as the manifest spells it.
    pub repo: String,
    pub tag: String,
    pub engine: String,
    pub version: String,
    /// When the first bundle carrying it was made: GitHub's `created_at`.
    pub created: String,
    pub id: u64,
    /// By name.
    pub assets: BTreeMap<String, AssetEntry>,
}
/// Compares strings treating runs of digits as numbers, so `b10828` sorts
/// after `b6123` and `0.10.0` after `0.9.1`.
pub fn natural_cmp(a: &str, b: &str) -> std::cmp::Ordering {
    fn chunks(s: &str) -> Vec<(bool, &str)> {
        let mut out = Vec::new();
        let mut start = 0;
        let bytes = s.as_bytes();
        for i in 1..=bytes.len() {
            if i == bytes.len() || bytes[i].is_ascii_digit() != bytes[start].is_ascii_digit() {
                out.push((bytes[start].is_ascii_digit(), &s[start..i]));
                start = i;
            }
        }
        out
    }
    let (ca, cb) = (chunks(a), chunks(b));
    for (x, y) in ca.iter().zip(cb.iter()) {
        let ord = match (x, y) {
            ((true, x), (true, y)) => {
                let (xt, yt) = (x.trim_start_matches('0'), y.trim_start_matches('0'));
                xt.len().cmp(&yt.len()).then_with(|| xt.cmp(yt))
            }
            ((_, x), (_, y)) => x.cmp(y),
        };
        if ord != std::cmp::Ordering::Equal {
            return ord;
        }
    }
    ca.len().cmp(&cb.len()).then_with(|| a.cmp(b))
}
#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn natural_order_of_tags() {
        use std::cmp::Ordering::*;
        assert_eq!(natural_cmp("b10828", "b6123"), Greater);
        assert_eq!(natural_cmp("0.10.0", "0.9.1"), Greater);
        assert_eq!(natural_cmp("v1.0", "v1.0"), Equal);
        assert_eq!(natural_cmp("v1.0", "v1.0.1"), Less);
    }
}
