//! The answer cache's key: everything a GET or HEAD's answer depends on
//! and nothing else — the path, the query parameters a route reads
//! (normalised, so `?nocache=N` or `page=01` add nothing), the base URL the
//! links use and whether the client asked for bytes.
//!
//! Invariant: a key has one spelling, [`Key::feed`]'s; its text, its hash
//! and its comparison with a kept key's text all follow it, so a cached
//! answer is found from the request's borrowed parts with no allocation
//! and no SipHash (#35 item 6), exactly as its text would find it.

use std::collections::HashMap;

use http::{HeaderMap, header};

use crate::serve::http::paths::{query_bool, query_get};

/// The query parameters some route reads; every other one is ignored by
/// every route, so it is left out of the key.
const NUMBERS: [&str; 2] = ["per_page", "page"];
const FLAGS: [&str; 3] = ["blobs", "recursive", "expand"];

/// A request's cache key, borrowed from the request: hashed and compared
/// as the text [`Key::text`] makes, without making it (a cached answer is
/// found with no allocation and no SipHash, #35 item 6).
pub struct Key<'a> {
    path: &'a str,
    numbers: [Option<u64>; 2],
    flags: [bool; 3],
    cursor: Option<&'a str>,
    /// The base URL the links use, in parts laid end to end.
    base: [&'a str; 3],
    bytes: bool,
}

impl<'a> Key<'a> {
    pub fn of(
        raw_path: &'a str,
        query: &'a [(String, String)],
        base: [&'a str; 3],
        headers: &HeaderMap,
    ) -> Self {
        Key {
            path: raw_path,
            numbers: NUMBERS.map(|n| query_get(query, n).and_then(|v| v.parse::<u64>().ok())),
            flags: FLAGS.map(|f| query_bool(query, f)),
            // A tree page's cursor: its own answer (bounded where it is
            // read; an overlong one is refused, and refusals are not kept).
            cursor: query_get(query, "cursor"),
            base,
            bytes: headers
                .get(header::ACCEPT)
                .and_then(|v| v.to_str().ok())
                .is_some_and(|v| v.contains("application/octet-stream")),
        }
    }

    /// Hands the key's text to `f`, piece by piece: the one spelling of the
    /// key that its text, hash and comparison all follow.
    fn feed(&self, f: &mut dyn FnMut(&[u8])) {
        f(self.path.as_bytes());
        f(b"?");
        for (name, n) in NUMBERS.iter().zip(self.numbers) {
            if let Some(n) = n {
                let mut digits = [0u8; 20];
                let mut at = digits.len();
                let mut v = n;
                loop {
                    at -= 1;
                    digits[at] = b'0' + (v % 10) as u8;
                    v /= 10;
                    if v == 0 {
                        break;
                    }
                }
                f(name.as_bytes());
                f(b"=");
                f(&digits[at..]);
                f(b"&");
            }
        }
        for (name, on) in FLAGS.iter().zip(self.flags) {
            if on {
                f(name.as_bytes());
                f(b"&");
            }
        }
        if let Some(c) = self.cursor {
            f(b"cursor=");
            f(c.as_bytes());
            f(b"&");
        }
        f(b"|");
        for part in self.base {
            f(part.as_bytes());
        }
        f(if self.bytes { b"|bytes" } else { b"|json" });
    }

    /// The key as text.
    pub fn text(&self) -> String {
        let mut out = Vec::with_capacity(self.path.len() + 64);
        self.feed(&mut |b| out.extend_from_slice(b));
        // Every piece is a `str` or ASCII.
        String::from_utf8(out).unwrap_or_default()
    }

    /// The hash [`hash_text`] gives the key's text.
    pub(super) fn hash(&self) -> u64 {
        let mut h = Fnv::default();
        self.feed(&mut |b| h.write(b));
        h.0
    }

    /// Whether `text` is the key's text.
    pub(super) fn is(&self, text: &str) -> bool {
        let mut rest = text.as_bytes();
        let mut same = true;
        self.feed(&mut |b| match rest.strip_prefix(b) {
            Some(r) if same => rest = r,
            _ => same = false,
        });
        same && rest.is_empty()
    }
}

/// FNV-1a over a key's bytes: a few instructions a byte, where SipHash's
/// setup and rounds cost more than the rest of a cached answer's lookup.
/// The cache's keys come from clients, so a collision is possible, and
/// harmless: an entry keeps its whole key and is given only to that key.
struct Fnv(u64);

impl Default for Fnv {
    fn default() -> Self {
        Fnv(0xcbf2_9ce4_8422_2325)
    }
}

impl Fnv {
    fn write(&mut self, bytes: &[u8]) {
        for b in bytes {
            self.0 = (self.0 ^ u64::from(*b)).wrapping_mul(0x0100_0000_01b3);
        }
    }
}

/// The hash of a key's text, as [`Key::hash`] gives it.
pub(super) fn hash_text(text: &str) -> u64 {
    let mut h = Fnv::default();
    h.write(text.as_bytes());
    h.0
}

/// The map's own hasher: its keys are hashes already.
#[derive(Default)]
pub(super) struct Prehashed(u64);

impl std::hash::Hasher for Prehashed {
    fn finish(&self) -> u64 {
        self.0
    }
    fn write(&mut self, bytes: &[u8]) {
        for b in bytes {
            self.0 = (self.0 << 8) | u64::from(*b);
        }
    }
    fn write_u64(&mut self, n: u64) {
        self.0 = n;
    }
}

pub(super) type ByHash<V> = HashMap<u64, V, std::hash::BuildHasherDefault<Prehashed>>;

#[cfg(test)]
mod tests {
    use super::*;
    use crate::serve::http::paths::query_pairs;

    fn key(
        raw_path: &str,
        query: &[(String, String)],
        base_url: &str,
        headers: &HeaderMap,
    ) -> String {
        Key::of(raw_path, query, [base_url, "", ""], headers).text()
    }

    #[test]
    fn junk_in_the_query_shares_one_key() {
        let h = HeaderMap::new();
        let k = |q: &str| key("/v1/index", &query_pairs(Some(q)), "http://m", &h);
        assert_eq!(k("nocache=1"), k("nocache=2"));
        assert_eq!(k(""), k("x=y&z"));
        assert_eq!(k("page=01&per_page=5"), k("per_page=5&page=1"));
        assert_eq!(k("recursive=True"), k("recursive=true&expand=false"));
        assert_ne!(k("page=1"), k("page=2"));
        assert_ne!(k("blobs=true"), k(""));
        assert_ne!(k("cursor=YQ"), k("cursor=Yg"));
        assert_ne!(
            key("/v1/index", &[], "http://a", &h),
            key("/v1/index", &[], "http://b", &h)
        );
        let mut bytes = HeaderMap::new();
        bytes.insert(header::ACCEPT, "application/octet-stream".parse().unwrap());
        assert_ne!(
            key("/p", &[], "http://a", &h),
            key("/p", &[], "http://a", &bytes)
        );
    }
}
