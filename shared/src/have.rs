//! Have-lists and need-lists: what crosses the gap back to the connected
//! side. `llmgw mirror have` writes what a store holds, so that
//! `bundle create --have` carries only what is new; `bundle import
//! --need-out` writes what a delta lacked, so that `bundle create --need`
//! makes a repair bundle of exactly those blobs.
//!
//! Invariant: both are canonical JSON — lists sorted and deduplicated,
//! pretty-printed, newline-ended — so the same state gives the same bytes
//! and the same sha256. Neither is trusted: a forged have-list can only
//! make a bundle carry more (or import name what is missing), a forged
//! need-list only picks blobs out of the request it is given. Reading one
//! is bounded ([`MAX_LIST_BYTES`]) and every field is checked.

use std::collections::BTreeMap;

use serde::{Deserialize, Serialize};
use thiserror::Error;

use crate::manifest::{BlobRef, Manifest, NeededBlob};
use crate::{Sha256, names};

/// The `kind` of a have-list.
pub const HAVE_KIND: &str = "llmgw-have";
/// The `kind` of a need-list.
pub const NEED_KIND: &str = "llmgw-need";
/// The format of both lists this llmgw writes and reads.
pub const LIST_FORMAT: u32 = 1;
/// A list larger than this is refused unread: a store of two million
/// blobs stays below it.
pub const MAX_LIST_BYTES: u64 = 256 << 20;

/// Why a list was refused.
#[derive(Debug, Error)]
pub enum ListError {
    #[error("it is {actual} bytes; at most {max} are accepted")]
    TooLarge { actual: u64, max: u64 },
    /// serde_json's message may quote the list, so it is escaped and cut.
    #[error(
        "it is not a {kind} list of format {LIST_FORMAT}: {}",
        crate::shown::shown_message(&.source.to_string())
    )]
    Parse {
        kind: &'static str,
        #[source]
        source: serde_json::Error,
    },
    #[error("{what}: expected {expected}, found \"{}\"", crate::shown::shown(.found))]
    BadValue {
        what: String,
        expected: String,
        found: String,
    },
}

/// What a store holds (`llmgw mirror have`).
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct HaveList {
    /// Always `llmgw-have`, so a need-list (or any other JSON) is never
    /// read as a have-list.
    pub kind: String,
    /// The list's format, so a newer llmgw's list is refused rather than misread.
    pub format_version: u32,
    /// The store's random id (`STORE/state/store-id`), made once.
    pub store_id: String,
    /// The manifest sha256 of every bundle held.
    pub manifests: Vec<crate::BundleId>,
    /// Per (bundle key, channel), the highest sequence accepted.
    pub series: Vec<HeldSeries>,
    /// Every blob the held bundles name that the store has, with its size.
    pub blobs: Vec<BlobRef>,
}

/// One signed series a store follows.
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct HeldSeries {
    /// The minisign key id that signs the series.
    pub key_id: String,
    /// The channel of the series (`default` unless the manifests name one).
    pub channel: String,
    /// The highest sequence the store accepted: a delta must come after it.
    pub sequence: u64,
    /// The manifest sha256 of the bundle that carried that sequence.
    pub manifest_sha256: crate::BundleId,
}

/// What a delta lacked in a store (`bundle import --need-out`).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct NeedList {
    /// Always `llmgw-need`, so a have-list is never read as a need-list.
    pub kind: String,
    /// The list's format, so a newer llmgw's list is refused rather than misread.
    pub format_version: u32,
    /// The manifest sha256 of the bundle that needs them.
    pub bundle: crate::BundleId,
    /// The store that lacks them, if it has an id yet.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub store_id: Option<String>,
    /// Every blob the store lacks, with what needs it.
    pub blobs: Vec<NeededBlob>,
}

impl HaveList {
    /// A have-list of the current kind and format;
    /// [`HaveList::to_canonical_json`] sorts it when it is written.
    pub fn new(
        store_id: String,
        manifests: Vec<crate::BundleId>,
        series: Vec<HeldSeries>,
        blobs: Vec<BlobRef>,
    ) -> Self {
        Self {
            kind: HAVE_KIND.into(),
            format_version: LIST_FORMAT,
            store_id,
            manifests,
            series,
            blobs,
        }
    }

    /// The canonical bytes; their sha256 names the list.
    pub fn to_canonical_json(&self) -> Vec<u8> {
        let mut l = self.clone();
        l.manifests.sort();
        l.manifests.dedup();
        l.series.sort();
        l.series.dedup();
        l.blobs.sort();
        l.blobs.dedup();
        canonical(&l)
    }

    /// Reads and checks a have-list.
    pub fn from_json_bytes(bytes: &[u8]) -> Result<Self, ListError> {
        let l: Self = parse(bytes, HAVE_KIND)?;
        check_header(&l.kind, l.format_version, HAVE_KIND)?;
        check_hex("store_id", &l.store_id, 32)?;
        for m in &l.manifests {
            check_hex("a held manifest", m, 64)?;
        }
        for s in &l.series {
            check_hex("a series' manifest", &s.manifest_sha256, 64)?;
            // No bundle can come after the highest sequence there is: a
            // delta planned against it would ask for an impossible one.
            if s.sequence == u64::MAX {
                return Err(ListError::BadValue {
                    what: format!(
                        "the series of key {} channel {}",
                        crate::shown::shown(&s.key_id),
                        crate::shown::shown(&s.channel)
                    ),
                    expected: format!(
                        "a sequence below {} (no bundle could follow it; the list is damaged or \
                         forged: write it again with `llmgw mirror have`)",
                        u64::MAX
                    ),
                    found: s.sequence.to_string(),
                });
            }
        }
        for b in &l.blobs {
            check_hex("a blob", &b.sha256, 64)?;
        }
        Ok(l)
    }

    /// Blob sha256 -> size.
    pub fn blob_map(&self) -> BTreeMap<Sha256, u64> {
        self.blobs
            .iter()
            .map(|b| (b.sha256.clone(), b.size))
            .collect()
    }
}

impl NeedList {
    /// A need-list of the current kind and format.
    pub fn new(bundle: crate::BundleId, store_id: Option<String>, blobs: Vec<NeededBlob>) -> Self {
        Self {
            kind: NEED_KIND.into(),
            format_version: LIST_FORMAT,
            bundle,
            store_id,
            blobs,
        }
    }

    /// The canonical bytes.
    pub fn to_canonical_json(&self) -> Vec<u8> {
        let mut l = self.clone();
        for b in &mut l.blobs {
            b.uses.sort();
            b.uses.dedup();
        }
        l.blobs.sort();
        l.blobs.dedup();
        canonical(&l)
    }

    /// Reads and checks a need-list.
    pub fn from_json_bytes(bytes: &[u8]) -> Result<Self, ListError> {
        let l: Self = parse(bytes, NEED_KIND)?;
        check_header(&l.kind, l.format_version, NEED_KIND)?;
        check_hex("bundle", &l.bundle, 64)?;
        if let Some(id) = &l.store_id {
            check_hex("store_id", id, 32)?;
        }
        for b in &l.blobs {
            check_hex("a needed blob", &b.sha256, 64)?;
        }
        if l.blobs.is_empty() {
            return Err(ListError::BadValue {
                what: "blobs".into(),
                expected: "at least one blob".into(),
                found: "[]".into(),
            });
        }
        Ok(l)
    }

    /// The bytes of every blob listed: what a repair bundle for it carries.
    pub fn bytes(&self) -> u64 {
        self.blobs.iter().map(|b| b.size).sum()
    }
}

/// What each blob of a manifest is, every use of it, for people:
/// `release ggml-org/llama.cpp b6123 llama-b6123-bin-ubuntu-x64.tar.gz`,
/// `model acme/tiny@<commit> config.json`, `python env NAME FILE`.
pub fn blob_uses(m: &Manifest) -> BTreeMap<String, Vec<String>> {
    let mut out: BTreeMap<String, Vec<String>> = BTreeMap::new();
    let mut add = |sha: &str, what: String| out.entry(sha.to_string()).or_default().push(what);
    for r in &m.releases {
        for a in &r.assets {
            add(
                &a.sha256,
                format!("release {} {} {}", r.repo, r.tag, a.name),
            );
        }
    }
    for r in &m.repos {
        let kind = r.kind.singular();
        for f in &r.files {
            add(
                &f.sha256,
                format!("{kind} {}@{} {}", r.id, r.commit, f.path),
            );
        }
    }
    for e in &m.python_envs {
        add(&e.lock.sha256, format!("python env {} lock", e.name));
        if let Some(p) = e.site_lock.as_ref().and_then(|s| s.project.as_ref()) {
            add(&p.sha256, format!("python env {} pyproject.toml", e.name));
        }
        for f in &e.files {
            add(&f.sha256, format!("python env {} {}", e.name, f.filename));
            if let Some(md) = &f.metadata {
                add(
                    &md.sha256,
                    format!("python env {} {}.metadata", e.name, f.filename),
                );
            }
        }
    }
    if let Some(d) = &m.delta {
        for r in &d.repairs {
            for u in &r.uses {
                add(&r.sha256, format!("repair: {u}"));
            }
        }
    }
    out
}

fn canonical<T: Serialize>(v: &T) -> Vec<u8> {
    let mut out = serde_json::to_vec_pretty(v).unwrap_or_default();
    out.push(b'\n');
    out
}

fn parse<T: for<'de> Deserialize<'de>>(bytes: &[u8], kind: &'static str) -> Result<T, ListError> {
    if bytes.len() as u64 > MAX_LIST_BYTES {
        return Err(ListError::TooLarge {
            actual: bytes.len() as u64,
            max: MAX_LIST_BYTES,
        });
    }
    serde_json::from_slice(bytes).map_err(|source| ListError::Parse { kind, source })
}

fn check_header(kind: &str, format: u32, want: &str) -> Result<(), ListError> {
    if kind != want || format != LIST_FORMAT {
        return Err(ListError::BadValue {
            what: "kind and format_version".into(),
            expected: format!("{want:?} and {LIST_FORMAT}"),
            found: format!("{kind:?} and {format}"),
        });
    }
    Ok(())
}

fn check_hex(what: &str, value: &str, len: usize) -> Result<(), ListError> {
    let ok = value.len() == len
        && value
            .bytes()
            .all(|b| b.is_ascii_digit() || (b'a'..=b'f').contains(&b));
    if ok && (len != 64 || names::is_sha256_hex(value)) {
        return Ok(());
    }
    Err(ListError::BadValue {
        what: what.into(),
        expected: format!("{len} lower-case hex digits"),
        found: crate::shown::shown(value).to_string(),
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn blob(c: char, size: u64) -> BlobRef {
        BlobRef {
            sha256: c.to_string().repeat(64).parse().unwrap(),
            size,
        }
    }

    #[test]
    fn have_lists_are_canonical_and_checked() {
        let a = HaveList::new(
            "0".repeat(32),
            vec![
                "b".repeat(64).parse().unwrap(),
                "a".repeat(64).parse().unwrap(),
            ],
            vec![],
            vec![blob('d', 2), blob('c', 1), blob('c', 1)],
        );
        let b = HaveList::new(
            "0".repeat(32),
            vec![
                "a".repeat(64).parse().unwrap(),
                "b".repeat(64).parse().unwrap(),
            ],
            vec![],
            vec![blob('c', 1), blob('d', 2)],
        );
        assert_eq!(a.to_canonical_json(), b.to_canonical_json());
        let back = HaveList::from_json_bytes(&a.to_canonical_json()).unwrap();
        assert_eq!(back.blob_map().len(), 2);
        let mut bad = b.clone();
        bad.store_id = "../x".into();
        let err = HaveList::from_json_bytes(&bad.to_canonical_json()).unwrap_err();
        assert!(err.to_string().contains("store_id"), "{err}");
        let err = HaveList::from_json_bytes(b"{\"kind\":1}").unwrap_err();
        assert!(err.to_string().contains("llmgw-have"), "{err}");
        let need = NeedList::new("a".repeat(64).parse().unwrap(), None, vec![]);
        let err = NeedList::from_json_bytes(&need.to_canonical_json()).unwrap_err();
        assert!(err.to_string().contains("at least one"), "{err}");
        let err = HaveList::from_json_bytes(&need.to_canonical_json()).unwrap_err();
        assert!(err.to_string().contains("llmgw-have"), "{err}");
    }

    /// A series at the highest sequence there is would make a delta ask
    /// for a sequence past it (#28 item 4): refused when read, by entry.
    #[test]
    fn a_series_at_the_last_sequence_is_refused_naming_it() {
        let mut l = HaveList::new("0".repeat(32), vec![], vec![], vec![blob('c', 1)]);
        l.series.push(HeldSeries {
            key_id: "RWQKEY".into(),
            channel: "stable".into(),
            sequence: u64::MAX,
            manifest_sha256: "a".repeat(64).parse().unwrap(),
        });
        let err = HaveList::from_json_bytes(&l.to_canonical_json())
            .unwrap_err()
            .to_string();
        assert!(
            err.contains("the series of key RWQKEY channel stable: expected a sequence below")
                && err.contains("found \"18446744073709551615\""),
            "{err}"
        );
        l.series[0].sequence = u64::MAX - 1;
        assert!(HaveList::from_json_bytes(&l.to_canonical_json()).is_ok());
    }

    /// What a list says back in a refusal is escaped and cut.
    #[test]
    fn refusals_quote_the_list_escaped_and_cut() {
        let mut bad = HaveList::new("0".repeat(32), vec![], vec![], vec![blob('c', 1)]);
        bad.store_id = format!("\u{1b}[2J\u{202e}{}", "x".repeat(100_000));
        let err = HaveList::from_json_bytes(&bad.to_canonical_json())
            .unwrap_err()
            .to_string();
        assert!(err.contains("store_id"), "{err}");
        assert!(
            !err.contains('\u{1b}') && !err.contains('\u{202e}'),
            "{err}"
        );
        assert!(err.len() < 4_000, "{} bytes", err.len());
        let text = format!("{{\"\u{1b}]0;x\u{7}{}\": 1}}", "y".repeat(100_000));
        let err = HaveList::from_json_bytes(text.as_bytes())
            .unwrap_err()
            .to_string();
        assert!(!err.contains('\u{1b}') && !err.contains('\u{7}'), "{err}");
        assert!(err.len() < 4_000, "{} bytes", err.len());
    }
}
