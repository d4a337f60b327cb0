//! One log line and the metrics of each request, written when its body is
//! done (sent, failed or dropped), so `bytes` and `ms` are what the client
//! actually got and the in-flight gauge covers the whole download.

use std::pin::Pin;
use std::task::{Context, Poll};
use std::time::Instant;

use axum::body::Body;
use axum::response::Response;
use bytes::Bytes;
use http::{Method, StatusCode};
use http_body::{Frame, SizeHint};

use super::metrics::{Metrics, RequestLabels, RouteLabel};
use super::route::Route;
use super::state::AppState;

pub struct Tracker {
    metrics: Metrics,
    method: Method,
    path: String,
    start: Instant,
}

impl Tracker {
    pub fn start(state: &AppState, method: &Method, path: &str) -> Self {
        state.metrics.in_flight.inc();
        Self {
            metrics: state.metrics.clone(),
            method: method.clone(),
            path: path.chars().take(512).collect(),
            start: Instant::now(),
        }
    }

    /// The request's path (its first 512 characters), without the query.
    pub fn path(&self) -> &str {
        &self.path
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
        let m = &t.metrics;
        m.requests
            .get_or_create(&RequestLabels {
                route: d.route,
                status: d.status.as_u16(),
            })
            .inc();
        m.bytes_sent
            .get_or_create(&RouteLabel { route: d.route })
            .inc_by(self.bytes);
        let ms = t.start.elapsed().as_secs_f64() * 1000.0;
        tracing::info!(
            target: "llmgw::access",
            method = %t.method,
            route = %d.route,
            status = d.status.as_u16(),
            bytes = self.bytes,
            ms = (ms * 10.0).round() / 10.0,
            path = ?t.path,
            "request"
        );
    }
}
