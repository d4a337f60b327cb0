//! Percent-encoding for URLs the code builds from names: one set for a
//! path segment or a query value, one for a path that keeps its `/`.
//! Everything but RFC 3986's unreserved characters (`A-Z a-z 0-9 - . _ ~`)
//! is encoded, so no name can add a segment, a query or a fragment.

use percent_encoding::{AsciiSet, NON_ALPHANUMERIC, utf8_percent_encode};

/// Characters left as they are in a path segment or query value.
pub const SEGMENT: &AsciiSet = &NON_ALPHANUMERIC
    .remove(b'-')
    .remove(b'.')
    .remove(b'_')
    .remove(b'~');

/// [`SEGMENT`], and `/`: for a file path inside a URL path.
pub const PATH: &AsciiSet = &SEGMENT.remove(b'/');

/// A path segment or query value, encoded (`refs/pr/1` → `refs%2Fpr%2F1`).
pub fn encode_segment(s: &str) -> String {
    utf8_percent_encode(s, SEGMENT).to_string()
}

/// A `/`-separated path, each part encoded (`a b/c+d` → `a%20b/c%2Bd`).
pub fn encode_path(s: &str) -> String {
    utf8_percent_encode(s, PATH).to_string()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn only_unreserved_characters_stay() {
        assert_eq!(encode_segment("a b+c.txt"), "a%20b%2Bc.txt");
        assert_eq!(encode_segment("refs/pr/1"), "refs%2Fpr%2F1");
        assert_eq!(encode_segment("A-z_0.9~"), "A-z_0.9~");
        assert_eq!(encode_path("dir/a b?#.gguf"), "dir/a%20b%3F%23.gguf");
        assert_eq!(encode_path("é"), "%C3%A9");
    }
}
