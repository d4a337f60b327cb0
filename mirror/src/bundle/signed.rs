//! A release whose `SHA256SUMS` is signed (llmgw's own): what must hold
//! before any of it is accepted, and what a verified signature proves.
//!
//! Invariant: a [`SignedRelease`] exists only for a release whose
//! `SHA256SUMS.minisig` verified with a trusted key, was made by the key
//! the manifest names, whose trusted comment names the release's tag
//! ([`signing::check_release_comment`]: an old release's signature cannot
//! be relabelled), and whose `SHA256SUMS` lists every other asset of the
//! release with the manifest's sha256. Its `listed` table is then exactly
//! what the release consists of; [`crate::store::claims`] holds every later
//! bundle to it.

use std::collections::BTreeMap;

use llmgw_shared::manifest::{ManifestError, Release};
use llmgw_shared::shown;
use llmgw_shared::signing::{self, PublicKey, SigningError};
use llmgw_shared::{Sha256, SumsError, parse_sha256sums};
use thiserror::Error;

/// A signature or checksum file larger than this is refused unread: real
/// ones are a few KiB.
pub const MAX_SIGNATURE_FILE_BYTES: u64 = 1024 * 1024;

/// Why a signed release was refused.
#[derive(Debug, Error)]
pub enum SignedError {
    #[error(
        "{what} of release {release} is {actual} bytes; at most {max} are accepted for a \
         signature or checksum file"
    )]
    TooLarge {
        release: String,
        what: String,
        actual: u64,
        max: u64,
    },
    #[error("release {release}")]
    Signing {
        release: String,
        #[source]
        source: SigningError,
    },
    #[error("release {release}")]
    Sums {
        release: String,
        #[source]
        source: SumsError,
    },
    #[error(
        "release {release}: its SHA256SUMS is signed by key {signed_by}, but the manifest says \
         key {}",
        shown(.claimed)
    )]
    KeyIdMismatch {
        release: String,
        claimed: String,
        signed_by: String,
    },
    #[error(
        "release {release}: asset {asset}: the signed SHA256SUMS says {sums}, the manifest says \
         sha256 {manifest}"
    )]
    SumsDisagree {
        release: String,
        asset: String,
        sums: String,
        manifest: String,
    },
    #[error(transparent)]
    Manifest(#[from] ManifestError),
}

/// What a verified signature proves about one release.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SignedRelease {
    /// `owner/repo` as the manifest spells it.
    pub repo: String,
    /// The release's tag, which the signature's trusted comment names.
    pub tag: String,
    /// The trusted key that signed it.
    pub key_id: String,
    /// Every file the signed `SHA256SUMS` lists, by name, with its sha256;
    /// plus `SHA256SUMS` and its signature themselves.
    pub listed: BTreeMap<String, Sha256>,
}

/// Verified signed releases as a report shows them: one
/// `{"release", "key_id"}` object each (`owner/repo tag`, the trusted key
/// that signed it); what the release lists stays out of the report.
pub fn serialize_signatures<S: serde::Serializer>(
    signed: &[SignedRelease],
    s: S,
) -> Result<S::Ok, S::Error> {
    #[derive(serde::Serialize)]
    struct One<'a> {
        release: String,
        key_id: &'a str,
    }
    s.collect_seq(signed.iter().map(|r| One {
        release: r.name(),
        key_id: &r.key_id,
    }))
}

impl SignedRelease {
    /// `owner/repo tag`, as messages name a release.
    pub fn name(&self) -> String {
        format!("{} {}", self.repo, self.tag)
    }
}

/// One signed release, and what is known of it so far: its two files come
/// in whatever order the bundle holds them.
pub(crate) struct Pending {
    pub release: String,
    repo: String,
    tag: String,
    sums_name: String,
    minisig_name: String,
    pub sums_sha: Sha256,
    pub minisig_sha: Sha256,
    claimed_key: String,
    assets: Vec<(String, Sha256)>,
    sums: Option<Vec<u8>>,
    minisig: Option<Vec<u8>>,
    proven: Option<SignedRelease>,
}

impl Pending {
    /// The check a release needs, if it is signed. Its signature files'
    /// sizes are checked here, before either is read.
    pub fn of(r: &Release) -> Result<Option<Self>, SignedError> {
        let Some(sig) = &r.signature else {
            return Ok(None);
        };
        let release = format!("{} {}", r.repo, r.tag);
        let find = |name: &str| r.assets.iter().find(|a| a.name == name);
        let (Some(sums), Some(minisig)) = (find(&sig.sums), find(&sig.minisig)) else {
            // Manifest::validate guarantees both are listed.
            return Err(ManifestError::Inconsistent(format!(
                "release {release} does not list its signature files"
            ))
            .into());
        };
        for a in [sums, minisig] {
            if a.size > MAX_SIGNATURE_FILE_BYTES {
                return Err(SignedError::TooLarge {
                    release,
                    what: a.name.clone(),
                    actual: a.size,
                    max: MAX_SIGNATURE_FILE_BYTES,
                });
            }
        }
        Ok(Some(Self {
            release,
            repo: r.repo.to_string(),
            tag: r.tag.clone(),
            sums_name: sums.name.clone(),
            minisig_name: minisig.name.clone(),
            sums_sha: sums.sha256.clone(),
            minisig_sha: minisig.sha256.clone(),
            claimed_key: sig.key_id.clone(),
            assets: r
                .assets
                .iter()
                .filter(|a| a.name != sig.sums && a.name != sig.minisig)
                .map(|a| (a.name.clone(), a.sha256.clone()))
                .collect(),
            sums: None,
            minisig: None,
            proven: None,
        }))
    }

    /// Whether the bytes of this blob are still needed.
    pub fn wants(&self, sha256: &str) -> bool {
        (self.sums_sha == sha256 && self.sums.is_none())
            || (self.minisig_sha == sha256 && self.minisig.is_none())
    }

    /// Whether a file it still waits for is one of `shas` (a delta's
    /// prerequisites, which `bundle verify` cannot read).
    pub fn waits_on(&self, shas: &std::collections::BTreeSet<&str>) -> bool {
        shas.iter().any(|s| self.wants(s))
    }

    /// Hands over a blob's bytes (kept only if they are wanted).
    pub fn offer(&mut self, sha256: &str, bytes: &[u8]) {
        if self.sums_sha == sha256 && self.sums.is_none() {
            self.sums = Some(bytes.to_vec());
        }
        if self.minisig_sha == sha256 && self.minisig.is_none() {
            self.minisig = Some(bytes.to_vec());
        }
    }

    /// What was proven, once [`Pending::try_verify`] succeeded with both files.
    pub fn proven(&self) -> Option<&SignedRelease> {
        self.proven.as_ref()
    }

    /// Verifies once both files are known; a no-op before or after.
    pub fn try_verify(&mut self, trusted: &[PublicKey]) -> Result<(), SignedError> {
        if self.proven.is_some() {
            return Ok(());
        }
        let (Some(sums_bytes), Some(sig_bytes)) = (&self.sums, &self.minisig) else {
            return Ok(());
        };
        let release = self.release.clone();
        let signing = |source| SignedError::Signing {
            release: release.clone(),
            source,
        };
        let sig_text = std::str::from_utf8(sig_bytes).map_err(|_| {
            signing(SigningError::BadSignature {
                what: self.minisig_name.clone(),
                reason: signing::SignatureFault::NotText,
            })
        })?;
        let sig = signing::Signature::parse(&self.minisig_name, sig_text).map_err(signing)?;
        let key = signing::verify_with_trusted(&self.sums_name, sums_bytes, &sig, trusted)
            .map_err(signing)?;
        if !key.eq_ignore_ascii_case(&self.claimed_key) {
            return Err(SignedError::KeyIdMismatch {
                release,
                claimed: self.claimed_key.clone(),
                signed_by: key,
            });
        }
        signing::check_release_comment(&self.sums_name, &sig, &self.tag).map_err(signing)?;
        let text = String::from_utf8_lossy(sums_bytes);
        let lines =
            parse_sha256sums(&self.sums_name, &text).map_err(|source| SignedError::Sums {
                release: release.clone(),
                source,
            })?;
        for (name, sha) in &self.assets {
            match lines.iter().find(|l| &l.name == name) {
                Some(l) if &l.sha256 == sha => {}
                Some(l) => {
                    return Err(SignedError::SumsDisagree {
                        release,
                        asset: name.clone(),
                        sums: format!("sha256 {}", l.sha256),
                        manifest: sha.to_string(),
                    });
                }
                None => {
                    return Err(SignedError::SumsDisagree {
                        release,
                        asset: name.clone(),
                        sums: "nothing (the asset is not listed)".into(),
                        manifest: sha.to_string(),
                    });
                }
            }
        }
        let mut listed: BTreeMap<String, Sha256> =
            lines.into_iter().map(|l| (l.name, l.sha256)).collect();
        listed.insert(self.sums_name.clone(), self.sums_sha.clone());
        listed.insert(self.minisig_name.clone(), self.minisig_sha.clone());
        self.proven = Some(SignedRelease {
            repo: self.repo.clone(),
            tag: self.tag.clone(),
            key_id: key,
            listed,
        });
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// What `--json` has always printed of a verified signature: its
    /// release and key, not what the release lists.
    #[test]
    fn a_report_names_each_signature_by_its_release_and_key() {
        #[derive(serde::Serialize)]
        struct Report {
            #[serde(serialize_with = "serialize_signatures")]
            signatures: Vec<SignedRelease>,
        }
        let r = Report {
            signatures: vec![SignedRelease {
                repo: "acme/llmgw".into(),
                tag: "v1.0".into(),
                key_id: "ABCD".into(),
                listed: BTreeMap::from([("SHA256SUMS".into(), Sha256::of(b"x"))]),
            }],
        };
        assert_eq!(
            serde_json::to_string(&r).unwrap(),
            r#"{"signatures":[{"release":"acme/llmgw v1.0","key_id":"ABCD"}]}"#
        );
    }
}
