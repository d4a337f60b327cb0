//! Want-lists: what nodes asked a mirror for and it did not hold, carried
//! back to the connected side. `llmgw mirror misses --out want.json`
//! writes one from the mirror's miss log; `bundle create --want` reads it
//! and plans what it names.
//!
//! Invariant: a want-list is untrusted input on both sides. Reading one is
//! bounded ([`MAX_WANT_BYTES`], [`MAX_WANTS`]) and its format checked; a
//! forged list can only make a bundle carry more of what its upstreams
//! publish (each file still checked against its publisher's digest), never
//! name a path or a digest of its own.

use std::collections::HashMap;

use serde::{Deserialize, Serialize};
use thiserror::Error;

/// The format name of a want-list, so a reader knows what it reads.
pub const WANT_LIST_FORMAT: &str = "llmgw-want-list/1";

/// A want-list larger than this is refused unread (a mirror's table holds
/// at most a few tens of thousands of misses of at most 512 characters).
pub const MAX_WANT_BYTES: u64 = 64 << 20;

/// The most misses of one want-list `bundle create` looks at.
pub const MAX_WANTS: usize = 100_000;

/// One thing asked for and not held.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Miss {
    /// The route family that answered 404 (`hub_resolve`, `github_download`…).
    pub route: String,
    /// The request path, as sent (percent-encoding kept), without its query.
    pub path: String,
    /// How many requests asked for it.
    pub count: u64,
    /// When it was first asked for (Unix seconds).
    pub first_seen: u64,
    /// When it was last asked for (Unix seconds).
    pub last_seen: u64,
    /// Where it comes from, filled in by the operator where the mirror
    /// cannot know it: a chart served as `charts/NAME` names no registry,
    /// so its miss is planned only once this says
    /// `oci://REGISTRY/REPOSITORY`; an image asked for without containerd's
    /// `?ns=` likewise takes `REGISTRY/NAME`. A mirror never writes it.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub source: Option<String>,
}

/// A want-list: the misses of one or more mirrors, most asked for first.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct WantList {
    /// [`WANT_LIST_FORMAT`].
    pub format: String,
    /// Every miss, most asked for first.
    pub misses: Vec<Miss>,
}

/// Why a want-list was refused.
#[derive(Debug, Error)]
pub enum WantListError {
    /// Larger than [`MAX_WANT_BYTES`].
    #[error("it is {actual} bytes; at most {max} are accepted")]
    TooLarge {
        /// Its size.
        actual: u64,
        /// [`MAX_WANT_BYTES`].
        max: u64,
    },
    /// serde_json's message may quote the list, so it is escaped and cut.
    #[error(
        "it is not a want-list (`llmgw mirror misses --out` writes one): {}",
        crate::shown::shown_message(&.0.to_string())
    )]
    Json(serde_json::Error),
    /// Another format than [`WANT_LIST_FORMAT`].
    #[error("its format is {found:?}; this llmgw reads {WANT_LIST_FORMAT:?}")]
    Format {
        /// The format it names (cut to 80 characters).
        found: String,
    },
    /// More misses than [`MAX_WANTS`].
    #[error("it lists {actual} misses; at most {max} are read")]
    TooMany {
        /// How many it lists.
        actual: usize,
        /// [`MAX_WANTS`].
        max: usize,
    },
}

impl WantList {
    /// The misses of several lists (replicas, restarts) as one: counts
    /// added, the earliest first sighting and the latest last one kept.
    pub fn merge(lists: impl IntoIterator<Item = Vec<Miss>>) -> Self {
        let mut by_key: HashMap<(String, String), Miss> = HashMap::new();
        for m in lists.into_iter().flatten() {
            by_key
                .entry((m.route.clone(), m.path.clone()))
                .and_modify(|e| {
                    e.count = e.count.saturating_add(m.count);
                    e.first_seen = e.first_seen.min(m.first_seen);
                    e.last_seen = e.last_seen.max(m.last_seen);
                    e.source = e.source.take().or(m.source.clone());
                })
                .or_insert(m);
        }
        let mut misses: Vec<Miss> = by_key.into_values().collect();
        misses.sort_by(|a, b| {
            b.count
                .cmp(&a.count)
                .then_with(|| (&a.route, &a.path).cmp(&(&b.route, &b.path)))
        });
        Self {
            format: WANT_LIST_FORMAT.into(),
            misses,
        }
    }

    /// A want-list read from its bytes (already bounded by the caller to
    /// [`MAX_WANT_BYTES`]), its format and size checked.
    pub fn from_json_bytes(bytes: &[u8]) -> Result<Self, WantListError> {
        if bytes.len() as u64 > MAX_WANT_BYTES {
            return Err(WantListError::TooLarge {
                actual: bytes.len() as u64,
                max: MAX_WANT_BYTES,
            });
        }
        let list: Self = serde_json::from_slice(bytes).map_err(WantListError::Json)?;
        if list.format != WANT_LIST_FORMAT {
            return Err(WantListError::Format {
                found: list.format.chars().take(80).collect(),
            });
        }
        if list.misses.len() > MAX_WANTS {
            return Err(WantListError::TooMany {
                actual: list.misses.len(),
                max: MAX_WANTS,
            });
        }
        Ok(list)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn miss(count: u64, first: u64, last: u64) -> Miss {
        Miss {
            route: "r".into(),
            path: "/p".into(),
            count,
            first_seen: first,
            last_seen: last,
            source: None,
        }
    }

    #[test]
    fn lists_merge_counts_and_sightings() {
        let w = WantList::merge([vec![miss(2, 5, 9)], vec![miss(3, 3, 7)]]);
        assert_eq!(w.misses, vec![miss(5, 3, 9)]);
    }

    #[test]
    fn reading_checks_the_format() {
        let good = serde_json::to_vec(&WantList::merge([vec![miss(1, 1, 1)]])).unwrap();
        assert_eq!(WantList::from_json_bytes(&good).unwrap().misses.len(), 1);
        let other = br#"{"format":"llmgw-want-list/9","misses":[]}"#;
        let e = WantList::from_json_bytes(other).unwrap_err().to_string();
        assert!(
            e.contains("llmgw-want-list/9") && e.contains("llmgw-want-list/1"),
            "{e}"
        );
        let e = WantList::from_json_bytes(b"{\"kind\":1}")
            .unwrap_err()
            .to_string();
        assert!(e.contains("not a want-list"), "{e}");
    }
}
