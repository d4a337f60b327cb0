//! Which rows of a list a page shows. The front page shows the first few
//! of each list (bundles, releases, repositories, environments, images,
//! charts) and links to the list's own page, which shows all of it a page
//! at a time: a store of 10 000 releases is a short front page and fifty
//! short list pages, never one huge page.
//!
//! Invariant: page numbers in URLs count from 1 (`?page=1` is the first
//! page, a missing or unreadable number is the first page too); [`View`]
//! counts from 0, and [`pager`] alone writes page numbers back into links.

use std::fmt::Write as _;

/// Rows of each list shown on the front page itself.
pub const FRONT_ROWS: usize = 20;

/// Rows on one page of a list's own page.
pub const LIST_ROWS: usize = 200;

/// Which rows of a list to show.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum View {
    /// The front page: the first [`FRONT_ROWS`], and a link to the rest.
    Front,
    /// A list's own page: page N (from 0) of [`LIST_ROWS`] each.
    Page(usize),
}

impl View {
    /// The page asked for by a `?page=N` value (from 1; see the invariant).
    pub fn page(query: Option<&str>) -> Self {
        let n = query.and_then(|v| v.parse::<usize>().ok()).unwrap_or(1);
        View::Page(n.saturating_sub(1))
    }

    /// The rows of `items` this view shows.
    pub fn window<I: Iterator>(self, items: I) -> impl Iterator<Item = I::Item> {
        let (skip, take) = match self {
            View::Front => (0, FRONT_ROWS),
            View::Page(n) => (n.saturating_mul(LIST_ROWS), LIST_ROWS),
        };
        items.skip(skip).take(take)
    }

    /// What follows a list of `total` rows: on the front page, a link to
    /// the list's own page at `path` when not all rows fit; on a list's
    /// page, the links to the pages before and after.
    pub fn footer(self, path: &str, total: usize, noun: &str) -> String {
        match self {
            View::Front if total > FRONT_ROWS => format!(
                "<p><a href=\"{path}\">all {total} {noun}</a> (the first {FRONT_ROWS} are shown)</p>"
            ),
            View::Front => String::new(),
            View::Page(n) => pager(path, n, total.div_ceil(LIST_ROWS)),
        }
    }
}

/// Links to the previous and next of `pages` pages, where there are any;
/// `page` counts from 0. `path` is already HTML-escaped and may carry a
/// query of its own (`?rev=…`).
pub fn pager(path: &str, page: usize, pages: usize) -> String {
    if pages <= 1 {
        return String::new();
    }
    let join = if path.contains('?') { "&amp;" } else { "?" };
    let mut out = format!("<nav>page {} of {pages} ", page + 1);
    if page > 0 {
        let _ = write!(out, "<a href=\"{path}{join}page={page}\">previous</a> ");
    }
    if page + 1 < pages {
        let _ = write!(out, "<a href=\"{path}{join}page={}\">next</a>", page + 2);
    }
    out.push_str("</nav>");
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn urls_count_pages_from_one_and_views_from_zero() {
        assert_eq!(View::page(None), View::Page(0));
        assert_eq!(View::page(Some("1")), View::Page(0));
        assert_eq!(View::page(Some("3")), View::Page(2));
        assert_eq!(View::page(Some("0")), View::Page(0));
        assert_eq!(View::page(Some("x")), View::Page(0));
        let second: Vec<usize> = View::Page(1).window(0..1000).collect();
        assert_eq!(second.first(), Some(&LIST_ROWS));
        assert_eq!(second.len(), LIST_ROWS);
        assert_eq!(View::Front.window(0..1000).count(), FRONT_ROWS);
        assert_eq!(View::Page(usize::MAX).window(0..10).count(), 0);
    }

    #[test]
    fn the_pager_links_the_neighbours_and_keeps_the_query() {
        let nav = pager("/-/releases", 1, 3);
        assert!(nav.contains("page 2 of 3"), "{nav}");
        assert!(nav.contains("href=\"/-/releases?page=1\""), "{nav}");
        assert!(nav.contains("href=\"/-/releases?page=3\""), "{nav}");
        let nav = pager("/-/models/a/b?rev=v1", 0, 2);
        assert!(
            nav.contains("href=\"/-/models/a/b?rev=v1&amp;page=2\""),
            "{nav}"
        );
        assert_eq!(pager("/", 0, 1), "");
        assert!(
            View::Front
                .footer("/-/releases", 21, "releases")
                .contains("all 21 releases")
        );
        assert_eq!(View::Front.footer("/-/releases", 20, "releases"), "");
    }
}
