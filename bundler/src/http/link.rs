//! Pagination: the `rel="next"` target of a `Link` header.

use reqwest::Url;
use reqwest::header::{self, HeaderMap};

/// The `rel="next"` target of a `Link` header, resolved against `base`.
pub fn link_next(headers: &HeaderMap, base: &Url) -> Option<Url> {
    for value in headers.get_all(header::LINK) {
        let Ok(text) = value.to_str() else { continue };
        for part in text.split(',') {
            let mut pieces = part.split(';');
            let target = pieces.next()?.trim();
            let is_next = pieces.any(|p| {
                let p = p.trim().replace(' ', "");
                p == "rel=\"next\"" || p == "rel=next"
            });
            if is_next {
                let t = target.trim_start_matches('<').trim_end_matches('>');
                return base.join(t).ok();
            }
        }
    }
    None
}

#[cfg(test)]
mod tests {
    use super::*;
    use reqwest::header::HeaderValue;

    #[test]
    fn link_headers() {
        let base = Url::parse("http://h/api/models/a/b/tree/c?recursive=true").unwrap();
        let mut h = HeaderMap::new();
        h.insert(
            header::LINK,
            HeaderValue::from_static(
                "<http://h/x?cursor=2>; rel=\"next\", <http://h/x?cursor=0>; rel=\"prev\"",
            ),
        );
        assert_eq!(
            link_next(&h, &base).unwrap().as_str(),
            "http://h/x?cursor=2"
        );
        let mut h = HeaderMap::new();
        h.insert(
            header::LINK,
            HeaderValue::from_static("</p2>; rel=\"prev\""),
        );
        assert!(link_next(&h, &base).is_none());
        let mut h = HeaderMap::new();
        h.insert(header::LINK, HeaderValue::from_static("</p2>; rel=next"));
        assert_eq!(link_next(&h, &base).unwrap().as_str(), "http://h/p2");
    }
}
