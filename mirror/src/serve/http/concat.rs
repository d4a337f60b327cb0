//! Sending bytes that are parts laid end to end — pieces held in memory
//! and a range of a held blob — as one blob is sent: HEAD, Range and
//! If-Range (206/416, see [`super::range`]), If-None-Match (304), ETag, a
//! true Content-Length, never compressed. A model's tar layer is its
//! headers, the stored file and zero padding, sent so without a copy.
//!
//! Invariant: a request's range is cut into the parts it covers
//! ([`slices`], pure) and only those are opened; the stored part is read
//! through [`super::files::blob_body`], the blob path every protocol uses,
//! so memory per download stays two chunks whatever the file's size.

use std::collections::VecDeque;
use std::pin::Pin;
use std::task::{Context, Poll, ready};

use axum::body::Body;
use axum::response::{IntoResponse, Response};
use bytes::Bytes;
use http::{HeaderMap, Method};
use http_body::{Frame, SizeHint};

use super::files::{blob_body, not_modified, sized, unsatisfiable, window, with_byte_headers};
use crate::serve::index::{Blob, Index};
use crate::store::Store;

/// One part of the bytes sent.
#[derive(Debug, Clone)]
pub enum Part {
    Memory(Bytes),
    /// A held blob, whole.
    Blob(Blob),
}

impl Part {
    fn len(&self) -> u64 {
        match self {
            Part::Memory(b) => b.len() as u64,
            Part::Blob(b) => b.size,
        }
    }
}

/// How the bytes are described to the client.
pub struct PartsReply<'a> {
    pub parts: Vec<Part>,
    /// Quoted.
    pub etag: String,
    pub content_type: &'a str,
    /// Protocol headers, sent on 200, 206, 304 and 416 alike.
    pub extra: HeaderMap,
}

/// Which bytes of which parts make `start..start + len` of the whole:
/// (part, offset in it, length), in order, none empty.
pub fn slices(lens: &[u64], start: u64, len: u64) -> Vec<(usize, u64, u64)> {
    let end = start + len;
    let mut out = Vec::new();
    let mut at = 0u64;
    for (i, l) in lens.iter().enumerate() {
        let (from, to) = (start.max(at), end.min(at + l));
        if from < to {
            out.push((i, from - at, to - from));
        }
        at += l;
    }
    out
}

/// Answers a GET or HEAD for bytes made of `reply.parts`.
pub async fn serve_parts(
    store: &Store,
    index: &Index,
    method: &Method,
    req: &HeaderMap,
    reply: PartsReply<'_>,
) -> Response {
    if let Some(r) = not_modified(req, &reply.etag, &reply.extra) {
        return r;
    }
    let lens: Vec<u64> = reply.parts.iter().map(Part::len).collect();
    let PartsReply {
        parts,
        etag,
        content_type,
        extra,
    } = reply;
    let finish = |r: Response| with_byte_headers(r, &etag, &extra);
    let size: u64 = lens.iter().sum();
    let Some((status, start, len)) = window(req, &etag, size) else {
        return finish(unsatisfiable(size));
    };
    let body = if method == Method::HEAD {
        Body::empty()
    } else {
        let mut bodies = VecDeque::new();
        for (i, off, n) in slices(&lens, start, len) {
            bodies.push_back(match &parts[i] {
                Part::Memory(b) => Body::from(b.slice(off as usize..(off + n) as usize)),
                Part::Blob(blob) => match blob_body(store, index, blob, off, n).await {
                    Ok(b) => b,
                    Err(e) => return e.into_response(),
                },
            });
        }
        Body::new(Concat { bodies })
    };
    finish(sized(body, (status, start, len), size, content_type))
}

/// Bodies sent one after the other.
struct Concat {
    bodies: VecDeque<Body>,
}

impl http_body::Body for Concat {
    type Data = Bytes;
    type Error = axum::Error;

    fn poll_frame(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
    ) -> Poll<Option<Result<Frame<Bytes>, axum::Error>>> {
        while let Some(front) = self.bodies.front_mut() {
            match ready!(Pin::new(front).poll_frame(cx)) {
                None => {
                    self.bodies.pop_front();
                }
                more => return Poll::Ready(more),
            }
        }
        Poll::Ready(None)
    }

    fn is_end_stream(&self) -> bool {
        self.bodies.is_empty()
    }

    /// Exact when every part's body knows what it has left; a part
    /// streamed from a bucket does not, and then hyper sends the
    /// Content-Length header [`sized`] set, as for a whole blob.
    fn size_hint(&self) -> SizeHint {
        let left: Option<u64> = self.bodies.iter().map(|b| b.size_hint().exact()).sum();
        left.map_or_else(SizeHint::default, SizeHint::with_exact)
    }
}

#[cfg(test)]
mod tests {
    use super::slices;

    #[test]
    fn a_range_is_cut_at_every_boundary() {
        let lens = [512, 1000, 536];
        assert_eq!(
            slices(&lens, 0, 2048),
            vec![(0, 0, 512), (1, 0, 1000), (2, 0, 536)]
        );
        assert_eq!(slices(&lens, 511, 2), vec![(0, 511, 1), (1, 0, 1)]);
        assert_eq!(slices(&lens, 512, 1000), vec![(1, 0, 1000)]);
        assert_eq!(slices(&lens, 1511, 2), vec![(1, 999, 1), (2, 0, 1)]);
        assert_eq!(slices(&lens, 2047, 1), vec![(2, 535, 1)]);
        assert_eq!(slices(&[0, 5], 0, 5), vec![(1, 0, 5)]);
        assert!(slices(&lens, 0, 0).is_empty());
    }
}
