//! The miss log: what nodes asked this mirror for and it did not hold, so
//! the connected side can carry it in the next bundle (`llmgw mirror
//! misses --out want.json`, then `bundle create --want`). Without it, a
//! missing file's only trace is a 404 in a log nobody across the gap reads.
//!
//! Invariant: the table is bounded. It holds at most [`MissLog::capacity`]
//! entries, keyed by what was asked for (the route and the request path,
//! never the query string or a header — but for an image, containerd's
//! `?ns=REGISTRY`, which says which registry's image was asked for — cut
//! to [`MAX_WHAT`] characters); when
//! full, a new miss evicts the entry seen fewest times (the oldest among
//! equals), so a flood of random names churns among itself while a miss
//! that many nodes hit stays.

use std::collections::{BTreeSet, HashMap};
use std::sync::Mutex;
use std::sync::atomic::{AtomicBool, Ordering};

use super::route::Route;

/// The most characters of a request path kept for one miss.
pub const MAX_WHAT: usize = 512;

/// How many distinct misses a server keeps by default.
pub const DEFAULT_CAPACITY: usize = 10_000;

pub use llmgw_shared::{Miss, WANT_LIST_FORMAT, WantList};

/// The bounded table of misses a server keeps.
pub struct MissLog {
    table: Mutex<Table>,
    capacity: usize,
    /// Set by every new miss, cleared when the table is written out.
    dirty: AtomicBool,
}

#[derive(Default)]
struct Table {
    entries: HashMap<(String, String), Miss>,
    /// (count, last_seen, key): the first is the one to evict.
    rank: BTreeSet<(u64, u64, (String, String))>,
}

impl MissLog {
    /// An empty log of at most `capacity` entries (at least one).
    pub fn new(capacity: usize) -> Self {
        Self {
            table: Mutex::new(Table::default()),
            capacity: capacity.max(1),
            dirty: AtomicBool::new(false),
        }
    }

    /// The most entries it keeps.
    pub fn capacity(&self) -> usize {
        self.capacity
    }

    /// Counts one miss of `path` on `route` at `now` (Unix seconds).
    pub fn record(&self, route: &str, path: &str, now: u64) {
        let path: String = path.chars().take(MAX_WHAT).collect();
        let key = (route.to_string(), path);
        let Ok(mut t) = self.table.lock() else { return };
        let t = &mut *t;
        if let Some(m) = t.entries.get_mut(&key) {
            t.rank.remove(&(m.count, m.last_seen, key.clone()));
            m.count = m.count.saturating_add(1);
            m.last_seen = now;
            t.rank.insert((m.count, m.last_seen, key));
        } else {
            if t.entries.len() >= self.capacity
                && let Some(least) = t.rank.pop_first()
            {
                t.entries.remove(&least.2);
            }
            t.rank.insert((1, now, key.clone()));
            let miss = Miss {
                route: key.0.clone(),
                path: key.1.clone(),
                count: 1,
                first_seen: now,
                last_seen: now,
                source: None,
            };
            t.entries.insert(key, miss);
        }
        self.dirty.store(true, Ordering::Release);
    }

    /// Adds misses read back (this server's own file from before a
    /// restart) without marking the log as changed.
    pub fn restore(&self, misses: Vec<Miss>) {
        let merged = WantList::merge([self.misses(), misses]);
        let Ok(mut t) = self.table.lock() else { return };
        *t = Table::default();
        for m in merged.misses.into_iter().take(self.capacity) {
            let key = (m.route.clone(), m.path.clone());
            t.rank.insert((m.count, m.last_seen, key.clone()));
            t.entries.insert(key, m);
        }
    }

    /// Every miss kept, most asked for first.
    pub fn misses(&self) -> Vec<Miss> {
        let Ok(t) = self.table.lock() else {
            return Vec::new();
        };
        WantList::merge([t.entries.values().cloned().collect()]).misses
    }

    /// Whether a miss was recorded since the last call (which clears it).
    pub fn take_dirty(&self) -> bool {
        self.dirty.swap(false, Ordering::AcqRel)
    }
}

/// The registry a containerd mirror request names (`?ns=ghcr.io`), when
/// it is a host name (with a port): the only part of a query a miss keeps.
pub fn registry_of(query: Option<&str>) -> Option<String> {
    let ns = crate::serve::http::paths::query_pairs(query)
        .into_iter()
        .find(|(k, _)| k == "ns")?
        .1;
    let ok = !ns.is_empty()
        && ns.len() <= 255
        && ns
            .chars()
            .all(|c| c.is_ascii_alphanumeric() || matches!(c, '.' | '-' | ':'));
    ok.then_some(ns)
}

/// What a miss keeps of a request: its path, and for an image route the
/// registry containerd named (`/v2/acme/app/manifests/1.0?ns=ghcr.io`).
pub fn with_registry(route: Route, path: &str, ns: Option<&str>) -> String {
    match ns {
        Some(ns) if route.label().starts_with("oci") => format!("{path}?ns={ns}"),
        _ => path.to_string(),
    }
}

/// This server's name among the replicas sharing a store: the host name
/// (a pod's name in Kubernetes), kept to file-name characters.
pub fn instance_name() -> String {
    let raw = std::fs::read_to_string("/proc/sys/kernel/hostname").unwrap_or_default();
    let name: String = raw
        .trim()
        .chars()
        .filter(|c| c.is_ascii_alphanumeric() || matches!(c, '-' | '_' | '.'))
        .take(64)
        .collect();
    if name.is_empty() || name.starts_with('.') {
        "local".into()
    } else {
        name
    }
}

/// The state file one server writes its misses to: one per replica, so
/// replicas never overwrite each other; `llmgw mirror misses` merges them.
pub fn file_name(instance: &str) -> String {
    format!("misses-{instance}.json")
}

/// The most bytes read of one replica's misses file.
pub const MAX_FILE_BYTES: u64 = 16 << 20;

/// Every replica's misses kept in the store's state, merged.
pub fn read_all(state_dir: &std::path::Path) -> WantList {
    read_all_but(state_dir, "")
}

/// [`read_all`], leaving out the file named `skip` (a server's own, whose
/// misses it has newer in memory).
pub fn read_all_but(state_dir: &std::path::Path, skip: &str) -> WantList {
    let files = std::fs::read_dir(state_dir)
        .map(|d| {
            d.filter_map(Result::ok)
                .map(|e| e.path())
                .collect::<Vec<_>>()
        })
        .unwrap_or_default();
    let lists = files
        .iter()
        .filter(|p| {
            p.file_name()
                .and_then(|n| n.to_str())
                .is_some_and(|n| n.starts_with("misses-") && n.ends_with(".json") && n != skip)
        })
        .filter_map(|p| read_one(p));
    WantList::merge(lists)
}

/// One replica's misses, or none when the file cannot be read as a
/// want-list (it is rewritten within seconds by its server).
pub fn read_one(path: &std::path::Path) -> Option<Vec<Miss>> {
    let bytes = crate::store::fsutil::read_bounded(path, MAX_FILE_BYTES).ok()?;
    serde_json::from_slice::<WantList>(&bytes)
        .ok()
        .filter(|w| w.format == WANT_LIST_FORMAT)
        .map(|w| w.misses)
}

/// The bytes of a want-list file: pretty JSON, newline-ended.
pub fn to_bytes(list: &WantList) -> Vec<u8> {
    let mut bytes = serde_json::to_vec_pretty(list).unwrap_or_default();
    bytes.push(b'\n');
    bytes
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn counts_and_keeps_first_and_last_sight() {
        let log = MissLog::new(10);
        log.record("hub_resolve", "/acme/tiny/resolve/main/a.bin", 100);
        log.record("hub_resolve", "/acme/tiny/resolve/main/a.bin", 160);
        log.record("github_download", "/o/r/releases/download/v1/x", 120);
        let m = log.misses();
        assert_eq!(m.len(), 2);
        assert_eq!((m[0].count, m[0].first_seen, m[0].last_seen), (2, 100, 160));
        assert!(log.take_dirty());
        assert!(!log.take_dirty());
    }

    /// 100 000 distinct random names keep the table at its size, and a
    /// miss many nodes hit survives the flood.
    #[test]
    fn a_flood_stays_bounded_and_keeps_what_many_asked_for() {
        let log = MissLog::new(1_000);
        for t in 0..50 {
            log.record("hub_resolve", "/acme/tiny/resolve/main/wanted.gguf", t);
        }
        for i in 0..100_000u64 {
            log.record("hub_resolve", &format!("/junk/{i}/resolve/main/x"), 100 + i);
        }
        let m = log.misses();
        assert_eq!(m.len(), 1_000);
        assert_eq!(m[0].path, "/acme/tiny/resolve/main/wanted.gguf");
        assert_eq!(m[0].count, 50);
    }

    #[test]
    fn an_image_miss_keeps_the_registry_containerd_names_and_nothing_else() {
        let ns = registry_of(Some("ns=ghcr.io&x=secret"));
        assert_eq!(ns.as_deref(), Some("ghcr.io"));
        assert_eq!(
            with_registry(
                Route::OciManifest,
                "/v2/acme/app/manifests/1.0",
                ns.as_deref()
            ),
            "/v2/acme/app/manifests/1.0?ns=ghcr.io"
        );
        assert_eq!(
            with_registry(Route::HubResolve, "/a/b/resolve/main/x", ns.as_deref()),
            "/a/b/resolve/main/x"
        );
        assert_eq!(registry_of(Some("ns=a/b")), None);
        assert_eq!(registry_of(Some("token=x")), None);
    }

    #[test]
    fn long_paths_are_cut_and_lists_merge() {
        let log = MissLog::new(4);
        log.record("pypi_file", &"a".repeat(5_000), 1);
        assert_eq!(log.misses()[0].path.len(), MAX_WHAT);
        let one = vec![Miss {
            route: "r".into(),
            path: "/p".into(),
            count: 2,
            first_seen: 5,
            last_seen: 9,
            source: None,
        }];
        let two = vec![Miss {
            route: "r".into(),
            path: "/p".into(),
            count: 3,
            first_seen: 3,
            last_seen: 7,
            source: None,
        }];
        let w = WantList::merge([one, two]);
        assert_eq!(w.misses.len(), 1);
        assert_eq!(
            (
                w.misses[0].count,
                w.misses[0].first_seen,
                w.misses[0].last_seen
            ),
            (5, 3, 9)
        );
    }
}
