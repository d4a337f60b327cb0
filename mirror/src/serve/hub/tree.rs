//! `GET /api/{type}s/{repo}/tree/{rev}[/{path}]`: a folder's entries (or,
//! with `recursive`, everything below it), a page at a time as the Hub
//! pages them — 1 000 entries a page, 50 with `expand` — with the next
//! page named in a `Link: <…>; rel="next"` header that `huggingface_hub`'s
//! `paginate` follows. A 100 000-file dataset is then a hundred answers of
//! a quarter megabyte, not one of ten.
//!
//! Invariant: the pages of one listing hold every entry exactly once, in
//! path order: the cursor is the last path a page held (base64url, checked
//! as any path when read back), and the next page starts strictly after it.

use base64::Engine as _;
use base64::engine::general_purpose::URL_SAFE_NO_PAD;
use llmgw_shared::check_relative_path;
use llmgw_shared::url::{encode_path, encode_segment};
use serde_json::Value;

use super::error::HubError;
use super::shapes::tree_json;
use crate::serve::http::paths::{self, BadPath, query_bool, query_get};
use crate::serve::index::{HubRepo, Snapshot, TreeEntry};
use crate::serve::request::Req;

/// Entries on one page, as the Hub serves them.
pub const PAGE: usize = 1_000;

/// Entries on one page of an `expand=true` listing (the Hub: "more
/// expensive for the server so only 50 results are returned per page").
pub const EXPANDED_PAGE: usize = 50;

/// The longest cursor read: a path is at most a few KiB.
const MAX_CURSOR: usize = 8 << 10;

/// One page of a listing: its entries, and the URL of the next page when
/// there is one.
pub struct TreePage {
    pub entries: Value,
    pub next: Option<String>,
}

/// Where a listing is, for the next page's URL.
pub struct Listing<'a> {
    pub plural: &'static str,
    pub repo: &'a HubRepo,
    pub rev: &'a str,
}

/// `tree/{rev}[/{path}]`: one page of a folder's entries, or of all below it.
pub fn tree(
    req: &Req<'_>,
    at: &Listing<'_>,
    snap: &Snapshot,
    after: &[&str],
) -> Result<TreePage, HubError> {
    let path = paths::decode_join(after)?;
    if !path.is_empty() {
        check_relative_path("tree path", &path).map_err(BadPath::from)?;
    }
    if !snap.is_dir(&path) {
        return Err(HubError::EntryNotFound {
            id: at.repo.id.clone(),
            path,
            commit: snap.commit.clone(),
        });
    }
    let expand = query_bool(&req.query, "expand");
    let recursive = query_bool(&req.query, "recursive");
    let start = cursor(req)?;
    let page = if expand { EXPANDED_PAGE } else { PAGE };
    let mut entries: Box<dyn Iterator<Item = TreeEntry<'_>>> = if recursive {
        Box::new(snap.descendants(&path, start.as_deref()))
    } else {
        Box::new(snap.children(&path, start.as_deref()))
    };
    let mut out = Vec::new();
    let mut last = None;
    for e in entries.by_ref().take(page) {
        out.push(tree_json(&e, snap, &req.index.xet, expand));
        last = Some(e.path());
    }
    let next = match (last, entries.next()) {
        (Some(last), Some(_)) => Some(next_url(req, at, &path, last)),
        _ => None,
    };
    Ok(TreePage {
        entries: Value::Array(out),
        next,
    })
}

/// The path a `cursor` query names, checked as any path from a client.
fn cursor(req: &Req<'_>) -> Result<Option<String>, HubError> {
    let Some(raw) = query_get(&req.query, "cursor") else {
        return Ok(None);
    };
    let bad = || HubError::BadCursor(raw.chars().take(64).collect());
    if raw.len() > MAX_CURSOR {
        return Err(bad());
    }
    let bytes = URL_SAFE_NO_PAD.decode(raw).map_err(|_| bad())?;
    let path = String::from_utf8(bytes).map_err(|_| bad())?;
    check_relative_path("cursor", &path).map_err(|_| bad())?;
    Ok(Some(path))
}

/// The next page: this listing's URL with the same flags and a cursor
/// after `last`.
fn next_url(req: &Req<'_>, at: &Listing<'_>, path: &str, last: &str) -> String {
    let mut url = format!(
        "{}/api/{}/{}/tree/{}",
        req.base_url(),
        at.plural,
        at.repo.id,
        encode_segment(at.rev)
    );
    if !path.is_empty() {
        url.push('/');
        url.push_str(&encode_path(path));
    }
    url.push('?');
    for flag in ["recursive", "expand"] {
        if query_bool(&req.query, flag) {
            url.push_str(flag);
            url.push_str("=true&");
        }
    }
    url.push_str("cursor=");
    url.push_str(&URL_SAFE_NO_PAD.encode(last));
    url
}
