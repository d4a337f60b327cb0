//! Turning a request's raw path and query into checked names.
//!
//! The path is split on `/` BEFORE percent-decoding, so `%2F` inside a
//! segment stays part of that segment (the Hub quotes revisions like
//! `refs%2Fpr%2F1` and tree paths like `sub%2Fdir`). Each segment is then
//! decoded on its own and must be valid UTF-8 without NUL, control
//! characters or backslashes; overlong UTF-8 (`%c0%ae`) is invalid UTF-8
//! and refused. The routes then check each name with
//! [`llmgw_shared::names`] before looking it up. Names are only ever used as
//! keys into the index: no part of a URL becomes a filesystem path.

use llmgw_shared::UnsafeName;
use percent_encoding::percent_decode_str;
use thiserror::Error;

/// Longest request path accepted: far beyond any real one.
pub const MAX_PATH_BYTES: usize = 8192;

/// Why a URL was refused before any lookup.
#[derive(Debug, Clone, PartialEq, Eq, Error)]
pub enum BadPath {
    #[error("the request path is longer than {MAX_PATH_BYTES} bytes")]
    TooLong,
    #[error("a path segment is not valid UTF-8 once percent-decoded")]
    NotUtf8,
    #[error("a path segment holds a NUL, a control character or a backslash")]
    BadCharacter,
    /// Decoded, but not a name the mirror could hold.
    #[error(transparent)]
    Unsafe(#[from] UnsafeName),
}

/// Splits a raw path (`/a/b%2Fc`) into its raw segments, without the
/// leading empty one (its length checked first, [`check_length`]). A
/// trailing `/` gives a trailing empty segment.
pub fn split(path: &str) -> Vec<&str> {
    path.strip_prefix('/').unwrap_or(path).split('/').collect()
}

/// Refuses a path longer than [`MAX_PATH_BYTES`], before anything else
/// reads it.
pub fn check_length(path: &str) -> Result<(), BadPath> {
    if path.len() > MAX_PATH_BYTES {
        return Err(BadPath::TooLong);
    }
    Ok(())
}

/// Percent-decodes one segment and refuses what no name may hold.
pub fn decode(segment: &str) -> Result<String, BadPath> {
    let s = percent_decode_str(segment)
        .decode_utf8()
        .map_err(|_| BadPath::NotUtf8)?;
    if s.chars().any(|c| c == '\\' || c.is_control()) {
        return Err(BadPath::BadCharacter);
    }
    Ok(s.into_owned())
}

/// Decodes segments and joins them with `/`: a file path inside a repo,
/// whether the client quoted its slashes or not.
pub fn decode_join(segments: &[&str]) -> Result<String, BadPath> {
    let parts: Result<Vec<String>, BadPath> = segments.iter().map(|s| decode(s)).collect();
    Ok(parts?.join("/"))
}

/// Decodes `owner` and `name` and checks them as one `owner/name` id;
/// `what` names the id in the refusal ("repository", "repository id").
pub fn repo_id(what: &'static str, owner: &str, name: &str) -> Result<String, BadPath> {
    let id = format!("{}/{}", decode(owner)?, decode(name)?);
    llmgw_shared::check_repo_id(what, &id)?;
    Ok(id)
}

/// Query parameters, decoded (`+` is a space, as forms write it).
pub fn query_pairs(query: Option<&str>) -> Vec<(String, String)> {
    form_pairs(query.unwrap_or("").as_bytes())
}

/// `application/x-www-form-urlencoded` pairs.
pub fn form_pairs(body: &[u8]) -> Vec<(String, String)> {
    form_urlencoded::parse(body).into_owned().collect()
}

/// The value of a boolean query parameter, case-insensitively (`true`,
/// `True`, `1`); `false` when absent.
pub fn query_bool(pairs: &[(String, String)], key: &str) -> bool {
    pairs
        .iter()
        .rev()
        .find(|(k, _)| k == key)
        .is_some_and(|(_, v)| {
            v.eq_ignore_ascii_case("true") || v == "1" || v.eq_ignore_ascii_case("yes")
        })
}

/// The last value of a query parameter.
pub fn query_get<'a>(pairs: &'a [(String, String)], key: &str) -> Option<&'a str> {
    pairs
        .iter()
        .rev()
        .find(|(k, _)| k == key)
        .map(|(_, v)| v.as_str())
}

/// Quotes a path for a URL: everything but unreserved characters and `/`.
pub fn quote_path(path: &str) -> String {
    llmgw_shared::url::encode_path(path)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn segments_split_before_decoding() {
        let segs = split("/api/models/a/b/tree/refs%2Fpr%2F1/sub%2Fdir");
        assert_eq!(segs[5], "refs%2Fpr%2F1");
        assert_eq!(decode(segs[5]).unwrap(), "refs/pr/1");
        assert_eq!(decode_join(&["a%20b%2Bc.txt"]).unwrap(), "a b+c.txt");
    }

    #[test]
    fn bad_segments_are_refused() {
        assert_eq!(decode("%00"), Err(BadPath::BadCharacter));
        assert_eq!(decode("a%5Cb"), Err(BadPath::BadCharacter));
        assert_eq!(decode("%c0%ae%c0%ae"), Err(BadPath::NotUtf8));
        assert_eq!(decode("%ff"), Err(BadPath::NotUtf8));
        let long = format!("/{}", "a".repeat(MAX_PATH_BYTES));
        assert_eq!(check_length(&long), Err(BadPath::TooLong));
    }

    #[test]
    fn booleans_any_case() {
        let q = query_pairs(Some("recursive=True&expand=false&blobs=TRUE"));
        assert!(query_bool(&q, "recursive"));
        assert!(!query_bool(&q, "expand"));
        assert!(query_bool(&q, "blobs"));
        assert!(!query_bool(&q, "missing"));
    }

    #[test]
    fn forms_repeat_keys() {
        let f = form_pairs(b"paths=a+b.txt&paths=sub%2Fdir&expand=True");
        assert_eq!(f[0], ("paths".into(), "a b.txt".into()));
        assert_eq!(f[1], ("paths".into(), "sub/dir".into()));
    }

    #[test]
    fn quoting() {
        assert_eq!(quote_path("sub/a b+c.txt"), "sub/a%20b%2Bc.txt");
    }
}
