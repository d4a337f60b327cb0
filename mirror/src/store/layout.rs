//! Where things live in a store, as keys relative to its root, `/` between
//! the parts: the same keys name files under a store folder and objects
//! under a bucket's prefix.
//!
//! Invariant: the key of a blob and the key of a manifest are spelled here
//! and nowhere else, and only from a typed [`Sha256`] (64 lower-case hex
//! digits by type), so nothing a client or a bundle sends becomes a key.
//! Reading a key back ([`blob_of_key`], [`bundle_of_key`]) accepts exactly
//! what these functions write.

use llmgw_shared::{BundleId, Sha256};

/// The folder (prefix) of the blobs.
pub const BLOBS: &str = "blobs/sha256";
/// The folder (prefix) of the manifests held, and their signatures.
pub const BUNDLES: &str = "bundles";
/// Trusted keys.
pub const TRUST: &str = "trust";
/// Trusted state (import order, series, policy).
pub const STATE: &str = "state";
/// Work in progress; never served, never copied to object storage.
pub const TMP: &str = "tmp";
/// The state file of a volume import in progress, inside its folder of
/// [`TMP`]: the folder is kept for later runs (and by gc) while it exists.
pub const VOLUME_STATE: &str = "volumes.json";

/// Whether `dir` (a folder of the store's `tmp/`) is a volume import in
/// progress: one that later runs of `bundle import` add to.
pub fn volume_import_in_progress(dir: &std::path::Path) -> bool {
    dir.join(VOLUME_STATE).is_file()
}

/// `blobs/sha256/<first two hex digits>/<all 64>`: a blob's key (the
/// two-digit folder keeps a directory of a million blobs listable).
pub fn blob_key(sha256: &Sha256) -> String {
    let hex = sha256.as_str();
    format!("{BLOBS}/{}/{hex}", &hex[..2])
}

/// `bundles/<sha256>.json`: the key of the manifest whose sha256 it is.
pub fn bundle_key(manifest_sha256: &BundleId) -> String {
    format!("{BUNDLES}/{manifest_sha256}.json")
}

/// The sha256 a key names, when it is exactly [`blob_key`] of it; a key
/// that is filed in the wrong folder or spelled otherwise names nothing.
pub fn blob_of_key(key: &str) -> Option<Sha256> {
    let rest = key.strip_prefix(BLOBS)?.strip_prefix('/')?;
    let (dir, hex) = rest.split_once('/')?;
    let sha = digest(hex)?;
    (dir == &hex[..2]).then_some(sha)
}

/// The manifest sha256 a key names, when it is exactly [`bundle_key`] of it.
pub fn bundle_of_key(key: &str) -> Option<BundleId> {
    let rest = key.strip_prefix(BUNDLES)?.strip_prefix('/')?;
    bundle_id(rest.strip_suffix(".json")?)
}

/// `text` as a digest, if it is one exactly as the store spells them
/// (lower case, nothing around it): upper case or white space, which
/// [`Sha256::parse`] would forgive, names nothing here.
pub fn digest(text: &str) -> Option<Sha256> {
    Sha256::parse_exact("sha256", text).ok()
}

/// `text` as a bundle's id, if it is one exactly as the store spells them
/// (what names a file in `bundles/`), as [`digest`] reads a blob's.
pub fn bundle_id(text: &str) -> Option<BundleId> {
    BundleId::parse_exact("manifest sha256", text).ok()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn keys_round_trip_and_nothing_else_parses() {
        let hex = "0a".repeat(32);
        let sha = digest(&hex).unwrap();
        assert_eq!(blob_key(&sha), format!("blobs/sha256/0a/{hex}"));
        let id = bundle_id(&hex).unwrap();
        assert_eq!(bundle_key(&id), format!("bundles/{hex}.json"));
        assert_eq!(blob_of_key(&blob_key(&sha)), Some(sha.clone()));
        assert_eq!(bundle_of_key(&bundle_key(&id)), Some(id));
        // Filed under the wrong two digits, or spelled in upper case.
        assert_eq!(blob_of_key(&format!("blobs/sha256/0b/{hex}")), None);
        assert_eq!(
            blob_of_key(&format!("blobs/sha256/0A/{}", hex.to_uppercase())),
            None
        );
        assert_eq!(blob_of_key(&format!("blobs/sha256/0a/{hex}/x")), None);
        assert_eq!(bundle_of_key(&format!("bundles/{hex}.json.minisig")), None);
        assert_eq!(bundle_of_key("bundles/../x.json"), None);
    }
}
