//! Xet, the Hub's own transfer protocol, served from the held blobs so
//! `hf_xet` downloads as it does from the Hub (see `protocols.md` §1):
//!
//! - the Hub routes say a file is in Xet (`X-Xet-Hash` and a `Link
//!   rel="xet-auth"` on its resolve HEAD; `xetHash` in tree entries) and
//!   hand out a token and this server's content address
//!   (`GET /api/{type}s/{repo}/xet-read-token/{rev}`, [`token`]);
//! - `GET /-/xet/v2/reconstructions/{file hash}` (and `v1`, which older
//!   clients and the v2 fallback ask), optionally with `Range`: which
//!   xorb byte ranges rebuild the file ([`plan`]);
//! - `GET /-/xet/xorbs/{file hash}/{xorb hash}` with `Range`: those bytes,
//!   packed on the fly from the blob ([`body`]).
//!
//! Invariant: a Xet hash is only ever a key into the index's table
//! ([`super::index::xet::XetTable`]); every byte sent is the blob's, read through the
//! same path as a plain download, with only the chunk headers added. When
//! the mirror needs a token, a xorb URL carries a signature made with it
//! (the client fetches xorbs without its token, as it fetches presigned
//! URLs from the Hub's storage), so a xorb URL is a capability the mirror
//! gave, never a way around the token.

mod body;
pub mod error;
pub mod plan;

use axum::response::Response;
use http::{HeaderMap, HeaderValue, Method, StatusCode, header};
use llmgw_shared::XetHash;
use llmgw_shared::xet::XetRecord;

use super::index::Blob;
use super::request::Req;
use super::route::{Route, Routed, routed};
use crate::serve::http::files::blob_body;
use crate::serve::http::range::{RangeAsk, parse_range};
use crate::serve::http::respond;
pub use error::XetError;

/// Where this server's Xet routes are, under its base URL.
pub const CAS_PATH: &str = "/-/xet";

/// How long a handed-out token is said to last: clients ask again after.
const TOKEN_SECONDS: u64 = 3600;

/// `/-/xet/...` — `segs` after `xet`.
pub async fn xet(r: &Req<'_>, segs: &[&str]) -> Routed {
    if r.method != Method::GET && r.method != Method::HEAD {
        return routed(Route::Xet, Err::<Response, _>(XetError::Method));
    }
    match segs {
        [version @ ("v1" | "v2"), "reconstructions", hash] => routed(
            Route::XetReconstruction,
            reconstruction(r, version == &"v2", hash).await,
        ),
        ["xorbs", file, xorb] => routed(Route::XetXorb, xorb_bytes(r, file, xorb).await),
        _ => routed(Route::Xet, Err::<Response, _>(XetError::NoRoute)),
    }
}

fn parse(hash: &str) -> Result<XetHash, XetError> {
    XetHash::parse_exact("Xet hash", hash).map_err(|_| XetError::BadHash)
}

/// The held blob of file hash `hash` and its record, read off the async
/// workers.
async fn file(r: &Req<'_>, hash: &XetHash) -> Result<(Blob, std::sync::Arc<XetRecord>), XetError> {
    let blob = r
        .index
        .xet
        .blob_of(hash)
        .cloned()
        .ok_or_else(|| XetError::FileUnknown(hash.to_string()))?;
    let (index, store, b) = (r.index.clone(), r.state.store.clone(), blob.clone());
    let record = tokio::task::spawn_blocking(move || index.xet.record(&store, &b))
        .await
        .map_err(|_| XetError::FileUnknown(hash.to_string()))??;
    Ok((blob, record))
}

/// `GET /-/xet/v{1,2}/reconstructions/{hash}`.
async fn reconstruction(r: &Req<'_>, v2: bool, hash: &str) -> Result<Response, XetError> {
    let hash = parse(hash)?;
    let (_, record) = file(r, &hash).await?;
    let range = match r.headers.get(header::RANGE).and_then(|v| v.to_str().ok()) {
        None => None,
        Some(v) => match parse_range(v, record.size()) {
            RangeAsk::Range(a, b) => Some((a, b)),
            RangeAsk::Unsatisfiable => {
                return Err(XetError::Unsatisfiable {
                    size: record.size(),
                });
            }
            RangeAsk::Ignore => None,
        },
    };
    let plan = plan::plan(&record, range);
    let base = format!("{}{CAS_PATH}/xorbs/{hash}", r.base_url());
    let url_of = |x: usize| {
        let xorb = &record.xorbs[x].hash;
        match &r.state.token_sha256 {
            Some(key) => {
                let sig = super::auth::sign(key, &signed_text(&hash, xorb));
                format!("{base}/{xorb}?sig={sig}")
            }
            None => format!("{base}/{xorb}"),
        }
    };
    let v = if v2 {
        plan::v2_json(&record, &plan, url_of)
    } else {
        plan::v1_json(&record, &plan, url_of)
    };
    Ok(uncached(respond::json(r.method, r.headers, &v)))
}

/// What a xorb URL's signature covers.
fn signed_text(file: &XetHash, xorb: &XetHash) -> String {
    format!("xet-xorb\n{file}\n{xorb}")
}

/// Whether `path` is a xorb URL this mirror signed with its token's
/// digest `key` (the entry handler lets those through without the token).
pub fn signed_xorb_url(key: &[u8; 32], path: &str, query: Option<&str>) -> bool {
    let segs: Vec<&str> = path.trim_start_matches('/').split('/').collect();
    let ["-", "xet", "xorbs", file, xorb] = segs.as_slice() else {
        return false;
    };
    let (Ok(file), Ok(xorb)) = (parse(file), parse(xorb)) else {
        return false;
    };
    let sig = crate::serve::http::paths::query_pairs(query)
        .into_iter()
        .find(|(k, _)| k == "sig")
        .map(|(_, v)| v);
    sig.is_some_and(|s| super::auth::signed(key, &signed_text(&file, &xorb), &s))
}

/// `GET /-/xet/xorbs/{file}/{xorb}`: the xorb's bytes, or the asked range.
async fn xorb_bytes(r: &Req<'_>, file_hash: &str, xorb: &str) -> Result<Response, XetError> {
    let (file_hash, xorb) = (parse(file_hash)?, parse(xorb)?);
    let (blob, record) = file(r, &file_hash).await?;
    let x = record
        .xorb_named(&xorb)
        .ok_or_else(|| XetError::XorbUnknown {
            file: file_hash.to_string(),
            xorb: xorb.to_string(),
        })?;
    let span = record.span(x);
    let packed = record.packed_len(span.first_chunk, span.end_chunk);
    let asked = r.headers.get(header::RANGE).and_then(|v| v.to_str().ok());
    let (first, last, partial) = match asked.map(|v| parse_range(v, packed)) {
        Some(RangeAsk::Range(a, b)) => (a, b, true),
        Some(RangeAsk::Unsatisfiable) => return Err(XetError::Unsatisfiable { size: packed }),
        _ => (0, packed - 1, false),
    };
    // The chunks the range touches, and where it starts in the first.
    let lens = record.chunk_lens(span.first_chunk, span.end_chunk);
    let (mut c0, mut at) = (0usize, 0u64);
    while at + llmgw_shared::xet::CHUNK_HEADER_LEN + u64::from(lens[c0]) <= first {
        at += llmgw_shared::xet::CHUNK_HEADER_LEN + u64::from(lens[c0]);
        c0 += 1;
    }
    let mut c1 = c0;
    let mut end = at;
    while end <= last {
        end += llmgw_shared::xet::CHUNK_HEADER_LEN + u64::from(lens[c1]);
        c1 += 1;
    }
    let (from, to) = (span.first_chunk + c0, span.first_chunk + c1);
    let len = last - first + 1;
    let mut h = HeaderMap::new();
    h.insert(
        header::CONTENT_TYPE,
        HeaderValue::from_static("application/octet-stream"),
    );
    h.insert(header::CONTENT_LENGTH, HeaderValue::from(len));
    h.insert(header::ACCEPT_RANGES, HeaderValue::from_static("bytes"));
    if partial {
        let range = format!("bytes {first}-{last}/{packed}");
        h.insert(header::CONTENT_RANGE, respond::header_text(&range));
    }
    let status = if partial {
        StatusCode::PARTIAL_CONTENT
    } else {
        StatusCode::OK
    };
    let body = if r.method == Method::HEAD {
        axum::body::Body::empty()
    } else {
        let (start, bytes) = (
            record.chunk_start(from),
            record.chunk_start(to) - record.chunk_start(from),
        );
        let blob_bytes = blob_body(&r.state.store, &r.index, &blob, start, bytes)
            .await
            .map_err(Box::new)?;
        body::packed(blob_bytes, lens[c0..c1].to_vec(), first - at, len)
    };
    let mut resp = Response::new(body);
    *resp.status_mut() = status;
    *resp.headers_mut() = h;
    Ok(resp)
}

/// An answer that depends on more than the index (a time, the range
/// asked): never kept in the answer cache.
fn uncached(mut resp: Response) -> Response {
    resp.extensions_mut().remove::<respond::CachedJson>();
    resp
}

/// `GET /api/{type}s/{repo}/xet-read-token/{rev}`: this server's content
/// address and a token, in the headers `huggingface_hub` reads and the JSON
/// body `hf_xet`'s refresher reads. The token handed out is the one the
/// request carried (the mirror's own, when it has one), so the client's
/// reconstruction requests carry it again; without one, any word does.
pub fn token(r: &Req<'_>) -> Response {
    let given = r
        .headers
        .get(header::AUTHORIZATION)
        .and_then(|v| v.to_str().ok())
        .and_then(|v| v.trim().split_once(' '))
        .map(|(_, t)| t.trim().to_string())
        .filter(|t| !t.is_empty())
        .unwrap_or_else(|| "llmgw-mirror".to_string());
    let exp = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |d| d.as_secs())
        + TOKEN_SECONDS;
    let cas = format!("{}{CAS_PATH}", r.base_url());
    let mut extra = HeaderMap::new();
    extra.insert("x-xet-cas-url", respond::header_text(&cas));
    extra.insert("x-xet-access-token", respond::header_text(&given));
    extra.insert("x-xet-token-expiration", HeaderValue::from(exp));
    let v = serde_json::json!({"casUrl": cas, "accessToken": given, "exp": exp});
    let mut resp = uncached(respond::json_with(r.method, r.headers, &v, extra));
    resp.headers_mut()
        .insert(header::CACHE_CONTROL, HeaderValue::from_static("no-store"));
    resp
}
