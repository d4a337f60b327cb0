//! One log line and the metrics of each request, taken when its body is
//! done (sent, failed or dropped), so `bytes` and `ms` are what the client
//! actually got and the in-flight gauge covers the whole download; the line
//! is written by the access log's thread ([`super::access`]).

use std::pin::Pin;
use std::task::{Context, Poll};
use std::time::Instant;

use axum::body::Body;
use axum::response::Response;
use bytes::Bytes;
use std::sync::Arc;

use http::{Method, StatusCode, Uri};
use http_body::{Frame, SizeHint};

use super::access;
use super::metrics::Metrics;
use crate::serve::route::Route;

/// The longest part of a path the log and the miss log keep.
const MAX_LOGGED_PATH: usize = 512;

/// What a request's log line needs, taken when it arrives. Nothing here is
/// copied per request: the metrics are one reference count, the URI shares
/// the request's bytes.
pub struct Tracker {
    metrics: Arc<Metrics>,
    method: Method,
    uri: Uri,
    start: Instant,
}

impl Tracker {
    pub fn start(metrics: &Arc<Metrics>, method: &Method, uri: &Uri) -> Self {
        metrics.in_flight.inc();
        Self {
            metrics: metrics.clone(),
            method: method.clone(),
            uri: uri.clone(),
            start: Instant::now(),
        }
    }

    /// The request's path (its first 512 bytes, cut at a character),
    /// without the query.
    pub fn path(&self) -> &str {
        let path = self.uri.path();
        let mut end = path.len().min(MAX_LOGGED_PATH);
        while !path.is_char_boundary(end) {
            end -= 1;
        }
        &path[..end]
    }

    /// Wraps the response's body so the request is logged when it ends.
    pub fn finish(self, route: Route, resp: Response) -> Response {
        let (parts, body) = resp.into_parts();
        let tracked = TrackedBody {
            inner: body,
            done: Some(Done {
                tracker: self,
                route,
                status: parts.status,
            }),
            bytes: 0,
        };
        Response::from_parts(parts, Body::new(tracked))
    }
}

/// Leaving flight when the request is done, however it ends (a handler
/// that panics drops its tracker too).
impl Drop for Tracker {
    fn drop(&mut self) {
        self.metrics.in_flight.dec();
    }
}

struct Done {
    tracker: Tracker,
    route: Route,
    status: StatusCode,
}

struct TrackedBody {
    inner: Body,
    done: Option<Done>,
    bytes: u64,
}

impl http_body::Body for TrackedBody {
    type Data = Bytes;
    type Error = axum::Error;

    fn poll_frame(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
    ) -> Poll<Option<Result<Frame<Bytes>, axum::Error>>> {
        let r = Pin::new(&mut self.inner).poll_frame(cx);
        if let Poll::Ready(Some(Ok(frame))) = &r
            && let Some(d) = frame.data_ref()
        {
            self.bytes += d.len() as u64;
        }
        r
    }

    fn is_end_stream(&self) -> bool {
        self.inner.is_end_stream()
    }

    fn size_hint(&self) -> SizeHint {
        self.inner.size_hint()
    }
}

impl Drop for TrackedBody {
    fn drop(&mut self) {
        let Some(d) = self.done.take() else { return };
        let t = &d.tracker;
        t.metrics
            .count_answer(d.route, d.status.as_u16(), self.bytes);
        if access::enabled() {
            let ms = t.start.elapsed().as_secs_f64() * 1000.0;
            access::log(access::Line {
                at: std::time::SystemTime::now(),
                method: t.method.clone(),
                route: d.route,
                status: d.status.as_u16(),
                bytes: self.bytes,
                ms: (ms * 10.0).round() / 10.0,
                path_len: t.path().len(),
                uri: t.uri.clone(),
            });
        }
    }
}
