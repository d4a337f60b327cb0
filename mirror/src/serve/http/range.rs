//! What a `Range` request asks of a blob, and whether its `If-Range` still
//! holds (RFC 9110 §14.2 and §13.1.5).
//!
//! Invariant: a range is served only when exactly one byte range was asked
//! and any `If-Range` names this blob's ETag by strong comparison; anything
//! else we do not serve as a range (several ranges, another unit, junk, a
//! weak or other validator) gets the whole blob, as RFC 9110 allows, and
//! only a range wholly past the end gets 416. The header's syntax is
//! `http-range-header`'s; what it means for a blob of a given size is
//! decided here.

use http::{HeaderMap, header};

/// What a `Range` header asks of a file of a given size.
#[derive(Debug, PartialEq, Eq)]
pub enum RangeAsk {
    /// Not one byte range we serve (several ranges, another unit, junk):
    /// answer with the whole file, as RFC 9110 allows.
    Ignore,
    /// No byte of it is in the file: 416.
    Unsatisfiable,
    /// First and last byte, inclusive.
    Range(u64, u64),
}

/// The range a request asks of a blob of `size` bytes and strong ETag
/// `etag` (quoted), or `None` when the whole blob is to be sent.
pub fn asked(req: &HeaderMap, etag: &str, size: u64) -> Option<RangeAsk> {
    let range = req.get(header::RANGE)?.to_str().ok()?;
    if !if_range_holds(req, etag) {
        return None;
    }
    Some(parse_range(range, size))
}

/// Whether `If-Range` (if sent) lets a range be served: only an entity tag
/// equal to ours by strong comparison does. A weak tag never matches, and
/// neither does a date: a date matches only a strong `Last-Modified`, and
/// a blob is sent with none.
pub fn if_range_holds(req: &HeaderMap, etag: &str) -> bool {
    let Some(v) = req.get(header::IF_RANGE) else {
        return true;
    };
    // Strong comparison: neither is weak and the opaque tags are the same
    // octets, quotes included (a bare or `W/` value is not our tag).
    v.to_str().is_ok_and(|v| v.trim() == etag) && !etag.starts_with("W/")
}

/// Reads a `Range` value for a file of `size` bytes: `http-range-header`
/// parses it and checks it against the size (a suffix longer than the
/// file is the whole file; a start past the end, or `-0`, is
/// unsatisfiable); one range left is served, anything else is not.
pub fn parse_range(value: &str, size: u64) -> RangeAsk {
    use http_range_header::RangeUnsatisfiableError;
    match http_range_header::parse_range_header(value).and_then(|r| r.validate(size)) {
        Ok(ranges) => match ranges.as_slice() {
            [one] => RangeAsk::Range(*one.start(), *one.end()),
            // Several ranges, or none of an empty file: the whole file.
            _ => RangeAsk::Ignore,
        },
        Err(RangeUnsatisfiableError::Unsatisfiable) => RangeAsk::Unsatisfiable,
        Err(_) => RangeAsk::Ignore,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ranges() {
        use RangeAsk::*;
        assert_eq!(parse_range("bytes=0-9", 100), Range(0, 9));
        assert_eq!(parse_range("bytes=90-", 100), Range(90, 99));
        assert_eq!(parse_range("bytes=90-1000", 100), Range(90, 99));
        assert_eq!(parse_range("bytes=-10", 100), Range(90, 99));
        assert_eq!(parse_range("bytes=-1000", 100), Range(0, 99));
        assert_eq!(parse_range("bytes=100-", 100), Unsatisfiable);
        assert_eq!(parse_range("bytes=-0", 100), Unsatisfiable);
        assert_eq!(parse_range("bytes=0-", 0), Unsatisfiable);
        assert_eq!(parse_range("bytes=5-1", 100), Ignore);
        assert_eq!(parse_range("bytes=0-1,5-6", 100), Ignore);
        assert_eq!(parse_range("items=0-1", 100), Ignore);
        assert_eq!(parse_range("bytes=x-1", 100), Ignore);
        assert_eq!(parse_range("bytes=-", 100), Ignore);
        assert_eq!(parse_range("bytes=200-300", 100), Unsatisfiable);
        assert_eq!(parse_range("bytes=0-5,3-9", 100), Ignore);
        // A suffix of an empty file: nothing to send a part of, the whole
        // (empty) file with 200, as RFC 9110 §14.1.2 reads.
        assert_eq!(parse_range("bytes=-5", 0), Ignore);
    }

    #[test]
    fn if_range_is_compared_strongly() {
        let with = |v: &str| {
            let mut h = HeaderMap::new();
            h.insert(header::IF_RANGE, v.parse().unwrap());
            h
        };
        let etag = "\"abc\"";
        assert!(if_range_holds(&HeaderMap::new(), etag));
        assert!(if_range_holds(&with("\"abc\""), etag));
        // RFC 9110 §13.1.5: a weak validator never matches, even the same tag.
        assert!(!if_range_holds(&with("W/\"abc\""), etag));
        assert!(!if_range_holds(&with("abc"), etag));
        assert!(!if_range_holds(&with("\"abd\""), etag));
        // A date: the blob has no Last-Modified, so no date is its validator.
        assert!(!if_range_holds(
            &with("Sat, 05 Dec 2026 04:00:00 GMT"),
            etag
        ));
        // Our own tag weak (never sent so, but never matched either).
        assert!(!if_range_holds(&with("W/\"abc\""), "W/\"abc\""));

        let mut h = with("W/\"abc\"");
        h.insert(header::RANGE, "bytes=0-1".parse().unwrap());
        assert_eq!(asked(&h, etag, 10), None);
        h.insert(header::IF_RANGE, "\"abc\"".parse().unwrap());
        assert_eq!(asked(&h, etag, 10), Some(RangeAsk::Range(0, 1)));
        h.remove(header::RANGE);
        assert_eq!(asked(&h, etag, 10), None);
    }
}
