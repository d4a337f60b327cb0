//! The few pieces of HTML every page of the front page shares: escaping,
//! the page shell with its one inline stylesheet and one inline script,
//! and the Content-Security-Policy that allows exactly those two.
//!
//! Invariant: every string that reaches a page goes through [`esc`] (or is
//! a constant of this crate): names from manifests are checked at import,
//! but notes, labels and descriptions are free text from whoever made the
//! bundle, and an air-gapped operator's browser must never run it.

use std::fmt::Write as _;
use std::sync::LazyLock;

use base64::Engine as _;
use sha2::Digest as _;

/// The page's whole stylesheet, inline: the site is air-gapped, so nothing
/// may come from anywhere but the mirror, and one small sheet needs no
/// route of its own.
const STYLE: &str = "\
body{font:15px/1.45 system-ui,sans-serif;margin:0 auto;max-width:72rem;padding:1rem 1.5rem;color:#1b1f24;background:#fff}\
h1{font-size:1.5rem;margin:.2rem 0 1rem}h2{font-size:1.15rem;margin:1.8rem 0 .5rem;border-bottom:1px solid #d0d7de}\
table{border-collapse:collapse;width:100%;margin:.3rem 0}th,td{text-align:left;padding:.25rem .6rem .25rem 0;vertical-align:top;border-bottom:1px solid #eaeef2}\
th{font-weight:600;color:#57606a}td.n{text-align:right;font-variant-numeric:tabular-nums;white-space:nowrap}\
code,pre{font:13px/1.4 ui-monospace,monospace}pre{background:#f6f8fa;padding:.6rem .8rem;overflow-x:auto;user-select:all;margin:.3rem 0}\
.ok{color:#1a7f37}.warn{color:#9a6700}.bad{color:#cf222e}.dim{color:#57606a}\
.health span{display:inline-block;margin-right:1.2rem}\
button{font:inherit;font-size:.85rem;padding:.1rem .6rem;cursor:pointer}\
nav a{margin-right:1rem}";

/// The copy buttons' script: a button copies the text of the `<pre>`
/// right after it. Without JavaScript the buttons do nothing and the
/// `<pre>` still selects whole on one click (`user-select: all`).
const SCRIPT: &str = "\
document.querySelectorAll('button[data-copy]').forEach(function(b){\
b.addEventListener('click',function(){var p=b.nextElementSibling;\
if(p&&navigator.clipboard){navigator.clipboard.writeText(p.textContent).then(function(){b.textContent='copied';});}});});";

/// `sha256-<base64>` of a script or style, as CSP names an inline one.
fn csp_hash(text: &str) -> String {
    let digest = sha2::Sha256::digest(text.as_bytes());
    format!(
        "'sha256-{}'",
        base64::engine::general_purpose::STANDARD.encode(digest)
    )
}

/// The Content-Security-Policy of every page: nothing loads from anywhere,
/// and only the page's own stylesheet and script run (by hash, so a
/// `<script>` that escaping somehow missed still would not).
pub static CSP: LazyLock<String> = LazyLock::new(|| {
    format!(
        "default-src 'none'; style-src {}; script-src {}; img-src 'none'; \
         base-uri 'none'; form-action 'none'; frame-ancestors 'none'",
        csp_hash(STYLE),
        csp_hash(SCRIPT)
    )
});

/// `text` with `& < > " '` escaped, and the bidirectional controls that
/// could make a name read as another (U+202A–202E, U+2066–2069) shown as
/// their code points instead of acting.
pub fn esc(text: &str) -> String {
    let mut out = String::with_capacity(text.len());
    for c in text.chars() {
        match c {
            '&' => out.push_str("&amp;"),
            '<' => out.push_str("&lt;"),
            '>' => out.push_str("&gt;"),
            '"' => out.push_str("&quot;"),
            '\'' => out.push_str("&#39;"),
            '\u{202a}'..='\u{202e}' | '\u{2066}'..='\u{2069}' | '\u{200e}' | '\u{200f}' => {
                let _ = write!(out, "[U+{:04X}]", c as u32);
            }
            c if c.is_control() && c != '\n' && c != '\t' => {
                let _ = write!(out, "[U+{:04X}]", c as u32);
            }
            c => out.push(c),
        }
    }
    out
}

/// A whole page: the shell around `body` (already HTML).
pub fn page(title: &str, body: &str) -> String {
    format!(
        "<!doctype html>\n<html lang=\"en\"><head><meta charset=\"utf-8\">\
         <meta name=\"viewport\" content=\"width=device-width,initial-scale=1\">\
         <title>{}</title><style>{STYLE}</style></head><body>\n{body}\n\
         <script>{SCRIPT}</script></body></html>\n",
        esc(title)
    )
}

/// A block an operator copies: a button, then the text in a `<pre>`.
pub fn copy_block(text: &str) -> String {
    format!(
        "<button type=\"button\" data-copy>copy</button><pre>{}</pre>",
        esc(text)
    )
}

/// A table with these column heads and rows of cells (already HTML); the
/// columns named in `numeric` are right-aligned.
pub fn table(heads: &[&str], numeric: &[usize], rows: &[Vec<String>]) -> String {
    let mut out = String::from("<table><tr>");
    for h in heads {
        let _ = write!(out, "<th>{}</th>", esc(h));
    }
    out.push_str("</tr>");
    for row in rows {
        out.push_str("<tr>");
        for (i, cell) in row.iter().enumerate() {
            let class = if numeric.contains(&i) {
                " class=\"n\""
            } else {
                ""
            };
            let _ = write!(out, "<td{class}>{cell}</td>");
        }
        out.push_str("</tr>");
    }
    out.push_str("</table>");
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn markup_and_direction_controls_are_text() {
        assert_eq!(
            esc("\"><img src=x onerror=alert(1)>"),
            "&quot;&gt;&lt;img src=x onerror=alert(1)&gt;"
        );
        assert_eq!(esc("<script>"), "&lt;script&gt;");
        assert_eq!(esc("a\u{202e}txt.exe"), "a[U+202E]txt.exe");
        assert_eq!(esc("it's & ok"), "it&#39;s &amp; ok");
    }

    #[test]
    fn the_policy_allows_only_the_page_s_own_style_and_script() {
        assert!(CSP.contains("default-src 'none'"));
        assert!(CSP.contains(&csp_hash(STYLE)));
        assert!(CSP.contains(&csp_hash(SCRIPT)));
        assert!(!CSP.contains("unsafe-inline"));
    }
}
