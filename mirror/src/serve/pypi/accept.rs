//! Choosing the simple API's representation from `Accept` (PEP 691's
//! content negotiation): each offered type gets the q-value of the most
//! specific range that matches it, the highest wins, ties go to the
//! server's order (JSON first), and nothing acceptable is a 406.
//!
//! Invariant: the answer's `Content-Type` is exactly one of the three
//! strings clients compare against (`Format::content_type`).

/// One representation of a simple API page.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Format {
    /// `application/vnd.pypi.simple.v1+json` (PEP 691).
    Json,
    /// `application/vnd.pypi.simple.v1+html` (PEP 691's name for PEP 503).
    Html,
    /// `text/html`: PEP 503 for clients that ask only for HTML.
    TextHtml,
}

impl Format {
    /// The media type this format is offered as, and answered with.
    fn media_type(self) -> &'static str {
        match self {
            Format::Json => "application/vnd.pypi.simple.v1+json",
            Format::Html => "application/vnd.pypi.simple.v1+html",
            Format::TextHtml => "text/html",
        }
    }

    /// The `Content-Type` of the answer: exactly what uv and pip compare
    /// against (uv takes the part before `;` and matches it whole).
    pub fn content_type(self) -> &'static str {
        match self {
            Format::TextHtml => "text/html; charset=utf-8",
            other => other.media_type(),
        }
    }

    pub fn is_json(self) -> bool {
        self == Format::Json
    }
}

/// In the server's order of preference, for ties.
const OFFERS: [Format; 3] = [Format::Json, Format::Html, Format::TextHtml];

/// The format to answer with, or `None` for a 406. No `Accept` at all (an
/// old client, a plain `curl`) gets PEP 503's `text/html`.
pub fn choose(accept: Option<&str>) -> Option<Format> {
    let Some(accept) = accept.filter(|a| !a.trim().is_empty()) else {
        return Some(Format::TextHtml);
    };
    let ranges: Vec<(String, f32)> = accept.split(',').filter_map(parse_range).collect();
    let mut best: Option<(Format, f32)> = None;
    for offer in OFFERS {
        let q = q_for(offer.media_type(), &ranges);
        if q > 0.0 && best.is_none_or(|(_, b)| q > b) {
            best = Some((offer, q));
        }
    }
    best.map(|(f, _)| f)
}

/// `type/subtype; q=0.5; other=x` -> (lower-case media range, q). PEP 691's
/// `latest` names are read as `v1`, the only version there is.
fn parse_range(item: &str) -> Option<(String, f32)> {
    let mut parts = item.split(';');
    let range = parts.next()?.trim().to_ascii_lowercase();
    if range.is_empty() {
        return None;
    }
    let mut q = 1.0f32;
    for p in parts {
        if let Some((k, v)) = p.split_once('=')
            && k.trim().eq_ignore_ascii_case("q")
        {
            q = v
                .trim()
                .parse::<f32>()
                .ok()
                .filter(|q| (0.0..=1.0).contains(q))?;
        }
    }
    let range = range.replace(".latest+", ".v1+");
    Some((range, q))
}

/// The q-value of the most specific range matching a media type: the type
/// itself, then `type/*`, then `*/*`; 0 when none matches.
fn q_for(media_type: &str, ranges: &[(String, f32)]) -> f32 {
    let major = media_type.split('/').next().unwrap_or("");
    let mut best: Option<(u8, f32)> = None;
    for (range, q) in ranges {
        let specificity = if range == media_type {
            3
        } else if range.strip_suffix("/*") == Some(major) {
            2
        } else if range == "*/*" {
            1
        } else {
            continue;
        };
        // The most specific match decides; among equally specific ones,
        // the highest q.
        if best.is_none_or(|(s, bq)| specificity > s || (specificity == s && *q > bq)) {
            best = Some((specificity, *q));
        }
    }
    best.map_or(0.0, |(_, q)| q)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn what_real_clients_send() {
        // uv
        assert_eq!(
            choose(Some(
                "application/vnd.pypi.simple.v1+json, application/vnd.pypi.simple.v1+html;q=0.2, text/html;q=0.01"
            )),
            Some(Format::Json)
        );
        // uv with pyx types first
        assert_eq!(
            choose(Some(
                "application/vnd.pyx.simple.v1+msgpack, application/vnd.pyx.simple.v1+json;q=0.9, application/vnd.pypi.simple.v1+json;q=0.8, application/vnd.pypi.simple.v1+html;q=0.2, text/html;q=0.01"
            )),
            Some(Format::Json)
        );
        // pip >= 22.2
        assert_eq!(
            choose(Some(
                "application/vnd.pypi.simple.v1+json, application/vnd.pypi.simple.v1+html; q=0.1, text/html; q=0.01"
            )),
            Some(Format::Json)
        );
        // old pip, browsers
        assert_eq!(choose(Some("text/html")), Some(Format::TextHtml));
        assert_eq!(
            choose(Some(
                "text/html,application/xhtml+xml,application/xml;q=0.9,*/*;q=0.8"
            )),
            Some(Format::TextHtml)
        );
        assert_eq!(choose(None), Some(Format::TextHtml));
        assert_eq!(choose(Some("*/*")), Some(Format::Json));
    }

    #[test]
    fn q_values_decide() {
        assert_eq!(
            choose(Some("application/vnd.pypi.simple.v1+json;q=0.1, text/html")),
            Some(Format::TextHtml)
        );
        assert_eq!(
            choose(Some("application/vnd.pypi.simple.latest+html")),
            Some(Format::Html)
        );
        assert_eq!(
            choose(Some("Application/VND.pypi.simple.v1+JSON")),
            Some(Format::Json)
        );
        // A specific q=0 refuses a type even under */*.
        assert_eq!(
            choose(Some("*/*, application/vnd.pypi.simple.v1+json;q=0")),
            Some(Format::Html)
        );
        assert_eq!(choose(Some("application/json")), None);
        assert_eq!(choose(Some("text/html;q=0")), None);
        // A range with a malformed q is dropped, not read as q=1.
        assert_eq!(choose(Some("text/html;q=junk")), None);
    }
}
