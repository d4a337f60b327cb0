//! JSON answers kept once built: the index only changes when a bundle is
//! imported or removed, so the same request gets the same bytes until
//! then.
//!
//! Invariant: the cache never holds more than [`MAX_BYTES`] (bodies,
//! headers and keys counted), whatever clients send. It is keyed only by
//! what changes an answer — the path, the query parameters a route reads
//! (normalised, so `?nocache=N` or `page=01` add nothing), the base URL the
//! links use and whether the client asked for bytes. An answer built from
//! one Hub repository's part of the index is kept while that repository's
//! [`version`](super::index::HubRepo::version) stays the same, so an import
//! costs the answers of the repositories it touched only; any other answer
//! holds for the index it was built from. Whichever index a request loaded,
//! it is given only an answer that index would build. Past the cap the
//! oldest answers go first.
//!
//! Each answer is built once: requests for a key that is being built wait
//! for that build ([`JsonCache::join_flight`]) and are answered from the
//! cache, so N clients asking for a large tree just after an import cost
//! one build, not N.

use std::collections::{HashMap, VecDeque};
use std::sync::{Arc, Mutex, RwLock};

use llmgw_shared::manifest::RepoKind;

use super::cache_key::{ByHash, Key, hash_text};
use super::index::Index;
use super::route::Route;
use crate::serve::http::respond::{CachedJson, Source};

/// Bytes of answers kept at most: a few copies of a large store's
/// `/v1/index` and every small answer many clients ask for.
pub const MAX_BYTES: usize = 64 << 20;

/// One answer larger than this is built each time rather than kept, so a
/// single huge answer cannot empty the cache of everything else.
const MAX_ENTRY_BYTES: usize = MAX_BYTES / 4;

/// What keeping an answer costs, roughly: body, headers and the key.
fn cost(c: &CachedJson, key: &str) -> usize {
    let headers: usize = c
        .headers
        .iter()
        .map(|(k, v)| k.as_str().len() + v.len() + 32)
        .sum();
    c.body.len() + headers + c.etag.len() + key.len() * 2 + 128
}

/// How long a kept answer holds: for the index it was built from, or for
/// as long as the one Hub repository it was built from serves the same.
#[derive(Clone, PartialEq, Eq)]
enum Holds {
    Generation(u64),
    Repo {
        kind: RepoKind,
        key: String,
        version: [u8; 32],
        /// The newest index it was found to hold in (built from, or kept
        /// by a sweep): a request of that index takes it without looking
        /// the repository up (a copy of its key and a SipHash, #35 item 6).
        seen: u64,
    },
}

impl Holds {
    /// What an answer built from `index` out of `source` holds for.
    fn of(index: &Index, source: &Source) -> Self {
        match source {
            Source::HubRepo(kind, key) => match index.repos.get(&(*kind, key.clone())) {
                Some(repo) => Holds::Repo {
                    kind: *kind,
                    key: key.clone(),
                    version: repo.version,
                    seen: index.generation,
                },
                None => Holds::Generation(index.generation),
            },
            Source::Index => Holds::Generation(index.generation),
        }
    }

    /// Whether an answer kept under this is still what `index` answers.
    fn in_index(&self, index: &Index) -> bool {
        match self {
            Holds::Generation(g) => *g == index.generation,
            Holds::Repo { seen, .. } if *seen == index.generation => true,
            Holds::Repo {
                kind, key, version, ..
            } => index
                .repos
                .get(&(*kind, key.clone()))
                .is_some_and(|r| r.version == *version),
        }
    }

    /// Whether it still holds in `index`, a newer one; if so, it is
    /// known to from now on.
    fn kept_in(&mut self, index: &Index) -> bool {
        let holds = self.in_index(index);
        if holds && let Holds::Repo { seen, .. } = self {
            *seen = index.generation;
        }
        holds
    }
}

struct Entry {
    /// The whole key, so a hash two keys share gives neither the other's.
    key: String,
    route: Route,
    answer: Arc<CachedJson>,
    holds: Holds,
}

#[derive(Default)]
struct Inner {
    /// The newest index the cache was swept for.
    generation: u64,
    map: ByHash<Entry>,
    /// Keys' hashes in the order they were added, for dropping the oldest.
    order: VecDeque<u64>,
    bytes: usize,
}

impl Inner {
    /// Drops what `index` no longer answers, once per new index: the
    /// answers of the repositories an import did not touch stay.
    fn sweep(&mut self, index: &Index) {
        if index.generation <= self.generation {
            return;
        }
        self.generation = index.generation;
        let mut bytes = self.bytes;
        self.map.retain(|_, e| {
            let keep = e.holds.kept_in(index);
            if !keep {
                bytes -= cost(&e.answer, &e.key);
            }
            keep
        });
        self.bytes = bytes;
        let map = &self.map;
        self.order.retain(|k| map.contains_key(k));
    }
}

/// The builds under way: one lock per key, held by the request building
/// it, which the others for that key wait on.
type Flights = Mutex<HashMap<String, Arc<tokio::sync::Mutex<()>>>>;

pub struct JsonCache {
    inner: RwLock<Inner>,
    cap: usize,
    flights: Flights,
}

impl Default for JsonCache {
    fn default() -> Self {
        Self::with_cap(MAX_BYTES)
    }
}

/// A place in the one build of a key: while it is held, other requests
/// for the key wait; dropping it lets the next one look in the cache.
pub struct Flight<'c> {
    cache: &'c JsonCache,
    key: String,
    slot: Arc<tokio::sync::Mutex<()>>,
    _turn: tokio::sync::OwnedMutexGuard<()>,
}

impl Drop for Flight<'_> {
    fn drop(&mut self) {
        let Ok(mut flights) = self.cache.flights.lock() else {
            return;
        };
        // The map, this flight and its guard hold the slot; any more are
        // requests waiting for it, which still need the entry.
        if Arc::strong_count(&self.slot) <= 3 {
            flights.remove(&self.key);
        }
    }
}

impl JsonCache {
    /// A cache that keeps at most `cap` bytes.
    pub fn with_cap(cap: usize) -> Self {
        Self {
            inner: RwLock::default(),
            cap,
            flights: Mutex::default(),
        }
    }

    /// Waits until no other request is building `key`, then holds the
    /// key's build until the returned flight is dropped. The caller looks
    /// in the cache again first: the request it waited for may have built
    /// the answer.
    pub async fn join_flight(&self, key: &str) -> Flight<'_> {
        let slot = {
            let mut flights = self.flights.lock().unwrap_or_else(|e| e.into_inner());
            flights.entry(key.to_string()).or_default().clone()
        };
        let turn = slot.clone().lock_owned().await;
        Flight {
            cache: self,
            key: key.to_string(),
            slot,
            _turn: turn,
        }
    }

    /// The answer kept for `key` that `index` would give, with the route
    /// that built it (the metrics label of a hit).
    pub fn get(&self, index: &Arc<Index>, key: &str) -> Option<(Route, Arc<CachedJson>)> {
        self.find(index, hash_text(key), |k| k == key)
    }

    /// [`Self::get`] for a key not made into text.
    pub fn get_key(&self, index: &Arc<Index>, key: &Key<'_>) -> Option<(Route, Arc<CachedJson>)> {
        self.find(index, key.hash(), |k| key.is(k))
    }

    fn find(
        &self,
        index: &Arc<Index>,
        hash: u64,
        is: impl Fn(&str) -> bool,
    ) -> Option<(Route, Arc<CachedJson>)> {
        let found = |g: &Inner| {
            let e = g.map.get(&hash)?;
            (is(&e.key) && e.holds.in_index(index)).then(|| (e.route, e.answer.clone()))
        };
        {
            let g = self.inner.read().ok()?;
            if g.generation >= index.generation {
                return found(&g);
            }
        }
        // The first request of a new index: sweep, then look.
        let mut g = self.inner.write().ok()?;
        g.sweep(index);
        found(&g)
    }

    /// Keeps `value`, built from `index`, for the next request of `key`.
    /// An answer from an index older than one already seen is not kept:
    /// the next request builds it from the newer one.
    pub fn put(&self, index: &Arc<Index>, key: String, route: Route, value: CachedJson) {
        let size = cost(&value, &key);
        if size > self.cap.min(MAX_ENTRY_BYTES) {
            return;
        }
        let Ok(mut g) = self.inner.write() else {
            return;
        };
        if index.generation < g.generation {
            return;
        }
        g.sweep(index);
        let hash = hash_text(&key);
        if let Some(old) = g.map.remove(&hash) {
            g.bytes -= cost(&old.answer, &old.key);
            g.order.retain(|k| *k != hash);
        }
        while g.bytes + size > self.cap {
            let Some(oldest) = g.order.pop_front() else {
                break;
            };
            if let Some(e) = g.map.remove(&oldest) {
                g.bytes -= cost(&e.answer, &e.key);
            }
        }
        g.bytes += size;
        g.order.push_back(hash);
        let holds = Holds::of(index, &value.source);
        g.map.insert(
            hash,
            Entry {
                key,
                route,
                answer: Arc::new(value),
                holds,
            },
        );
    }

    /// Bytes held now (the sum [`MAX_BYTES`] bounds).
    pub fn bytes(&self) -> usize {
        self.inner.read().map(|g| g.bytes).unwrap_or(0)
    }

    /// Answers held now.
    pub fn len(&self) -> usize {
        self.inner.read().map(|g| g.map.len()).unwrap_or(0)
    }

    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::serve::http::paths::query_pairs;
    use http::{HeaderMap, header};

    use bytes::Bytes;

    fn answer(n: usize) -> CachedJson {
        CachedJson {
            headers: HeaderMap::new(),
            body: Bytes::from(vec![b'x'; n]),
            etag: "\"e\"".into(),
            source: Source::Index,
        }
    }

    /// A key found without its text is found as its text would be: the
    /// same hash, the same comparison, and nothing else matches it.
    #[test]
    fn a_key_not_made_into_text_finds_what_its_text_keeps() {
        let mut bytes = HeaderMap::new();
        bytes.insert(header::ACCEPT, "application/octet-stream".parse().unwrap());
        let c = JsonCache::with_cap(1 << 20);
        let index = Arc::new(Index::default());
        let queries = ["", "page=7&per_page=100", "recursive=1&cursor=YQ", "x=y"];
        for (i, q) in queries.iter().enumerate() {
            let query = query_pairs(Some(q));
            let h = if i % 2 == 0 {
                HeaderMap::new()
            } else {
                bytes.clone()
            };
            let k = Key::of("/api/models/a/b", &query, ["http", "://", "m:8080"], &h);
            let text = k.text();
            assert_eq!(
                text,
                Key::of("/api/models/a/b", &query, ["http://m:8080", "", ""], &h).text()
            );
            assert_eq!(k.hash(), hash_text(&text));
            assert!(k.is(&text));
            assert!(!k.is(&format!("{text}x")) && !k.is(&text[1..]));
            assert!(c.get_key(&index, &k).is_none());
            c.put(&index, text, Route::Index, answer(10 + i));
            let (_, hit) = c.get_key(&index, &k).unwrap();
            assert_eq!(hit.body.len(), 10 + i);
        }
        let other = Key::of(
            "/api/models/a/c",
            &[],
            ["http", "://", "m:8080"],
            &HeaderMap::new(),
        );
        assert!(c.get_key(&index, &other).is_none());
    }

    #[test]
    fn never_holds_more_than_its_cap() {
        let cap = 100_000;
        let c = JsonCache::with_cap(cap);
        let index = Arc::new(Index::default());
        for i in 0..2_000 {
            c.put(
                &index,
                format!("/v1/index|http://host{i}"),
                Route::Index,
                answer(3_000),
            );
            assert!(c.bytes() <= cap, "{} bytes after {i} answers", c.bytes());
        }
        // The newest are kept, the oldest went.
        assert!(c.get(&index, "/v1/index|http://host1999").is_some());
        assert!(c.get(&index, "/v1/index|http://host0").is_none());
        // An answer too large to keep is not kept, and evicts nothing.
        let before = c.len();
        c.put(&index, "big".into(), Route::Index, answer(cap));
        assert!(c.get(&index, "big").is_none());
        assert_eq!(c.len(), before);
        // The same key again replaces, it does not add.
        let b = c.bytes();
        c.put(
            &index,
            "/v1/index|http://host1999".into(),
            Route::Index,
            answer(3_000),
        );
        assert_eq!(c.bytes(), b);
    }

    #[test]
    fn a_new_index_starts_over() {
        let c = JsonCache::with_cap(1 << 20);
        let old = Arc::new(Index::default());
        c.put(&old, "k".into(), Route::Index, answer(10));
        let new = Arc::new(Index {
            generation: old.generation + 1,
            ..Index::default()
        });
        assert!(c.get(&new, "k").is_none());
        c.put(&new, "j".into(), Route::Index, answer(10));
        assert_eq!(c.len(), 1);
    }

    /// An index holding Hub repositories by key, each at a version.
    fn with_repos(generation: u64, repos: &[(&str, u8)]) -> Arc<Index> {
        let repos = repos
            .iter()
            .map(|(key, v)| {
                let repo = crate::serve::index::HubRepo {
                    kind: RepoKind::Model,
                    id: key.to_string(),
                    snapshots: Default::default(),
                    refs: Default::default(),
                    tags: Default::default(),
                    default_commit: String::new(),
                    version: [*v; 32],
                    ahead: Default::default(),
                    trusted_publisher: false,
                };
                ((RepoKind::Model, key.to_string()), Arc::new(repo))
            })
            .collect();
        Arc::new(Index {
            generation,
            repos,
            ..Index::default()
        })
    }

    fn of_repo(key: &str) -> CachedJson {
        CachedJson {
            source: Source::HubRepo(RepoKind::Model, key.into()),
            ..answer(10)
        }
    }

    #[test]
    fn a_repository_s_answers_hold_while_its_version_does() {
        let c = JsonCache::with_cap(1 << 20);
        let first = with_repos(1, &[("a", 1), ("b", 1)]);
        c.put(&first, "a".into(), Route::HubTree, of_repo("a"));
        c.put(&first, "b".into(), Route::HubTree, of_repo("b"));
        c.put(&first, "all".into(), Route::Index, answer(10));
        // An import touched a, not b.
        let second = with_repos(2, &[("a", 2), ("b", 1)]);
        assert!(c.get(&second, "a").is_none(), "a stale answer of a");
        assert!(c.get(&second, "b").is_some());
        assert!(c.get(&second, "all").is_none());
        assert_eq!(c.len(), 1, "what the new index does not answer is dropped");
        // A request still holding the first index is never given what the
        // second built, nor may it keep what it built from the first.
        c.put(&second, "a".into(), Route::HubTree, of_repo("a"));
        assert!(c.get(&first, "a").is_none());
        assert!(c.get(&first, "b").is_some());
        c.put(&first, "all".into(), Route::Index, answer(10));
        assert!(c.get(&second, "all").is_none());
        // A repository gone takes its answers with it.
        let third = with_repos(3, &[("a", 2)]);
        assert!(c.get(&third, "b").is_none());
        assert!(c.get(&third, "a").is_some());
    }
}
