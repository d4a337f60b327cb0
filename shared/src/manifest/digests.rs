//! The one rule for a publisher's digests in a manifest: each is of its
//! algorithm's form and agrees with the bytes' own digest.
//!
//! Invariant: an artifact with no publisher digest, or with one that
//! disagrees with its sha256 (or git blob sha1), is refused, so nothing
//! unverified is carried.

use super::ManifestError;
use super::artifacts::PublisherDigest;
use crate::names;

/// Every publisher digest must be well formed and agree with the bytes'
/// own digests: the bundler only records a digest it checked, so one that
/// disagrees means the manifest was edited.
pub(super) fn check_digests(
    who: &str,
    digests: &[PublisherDigest],
    sha256: &str,
    git_blob_sha1: Option<&str>,
) -> Result<(), ManifestError> {
    if digests.is_empty() {
        return Err(ManifestError::Inconsistent(format!(
            "{who} has no publisher digest; nothing unverified may be carried"
        )));
    }
    for d in digests {
        let ok = if d.source.is_sha256() {
            names::is_sha256_hex(&d.value)
        } else {
            names::is_sha1_hex(&d.value)
        };
        if !ok {
            return Err(ManifestError::BadValue {
                what: format!("{:?} digest of {who}", d.source),
                expected: if d.source.is_sha256() {
                    "64 lower-case hex digits"
                } else {
                    "40 lower-case hex digits"
                },
                found: d.value.clone(),
            });
        }
        let agrees = if d.source.is_sha256() {
            d.value == sha256
        } else {
            git_blob_sha1 == Some(d.value.as_str())
        };
        if !agrees {
            return Err(ManifestError::Inconsistent(format!(
                "{who}: its {:?} publisher digest {} does not match the file's own digest",
                d.source, d.value
            )));
        }
    }
    Ok(())
}
