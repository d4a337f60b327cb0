//! The service `mirror serve` answers connections with: each request
//! straight to the entry handler ([`super::dispatch::entry`]).
//!
//! Invariant: an answer is what [`super::router`] (the `axum` router with
//! the entry handler as its one fallback, which the in-process tests
//! drive) gives for the same request, byte for byte: the router's only
//! work besides calling the handler is its top-level step, done here the
//! same way ([`top_level`]). Its path matching, parameter extraction and
//! boxing of layers found nothing to route (every path goes to the one
//! handler) and cost about a tenth of a cached JSON answer's instructions
//! (#35 item 6).

use std::convert::Infallible;
use std::future::Future;
use std::pin::Pin;
use std::sync::Arc;
use std::task::{Context, Poll};

use axum::body::Body;
use axum::response::Response;
use http::{HeaderMap, HeaderValue, Method, Request, header};
use http_body::Body as _;

use super::dispatch;
use super::state::AppState;

/// Hands every request to the entry handler.
#[derive(Clone)]
pub struct Entry(pub Arc<AppState>);

impl<B> tower_service::Service<Request<B>> for Entry
where
    B: http_body::Body<Data = bytes::Bytes> + Send + 'static,
    B::Error: Into<axum::BoxError>,
{
    type Response = Response;
    type Error = Infallible;
    type Future = Pin<Box<dyn Future<Output = Result<Response, Infallible>> + Send>>;

    fn poll_ready(&mut self, _: &mut Context<'_>) -> Poll<Result<(), Infallible>> {
        Poll::Ready(Ok(()))
    }

    fn call(&mut self, req: Request<B>) -> <Self as tower_service::Service<Request<B>>>::Future {
        let state = self.0.clone();
        let req = req.map(Body::new);
        let connect = req.method() == Method::CONNECT;
        Box::pin(async move { Ok(top_level(dispatch::entry(state, req).await, connect)) })
    }
}

/// Makes the one [`Entry`] service each connection is answered by.
#[derive(Clone)]
pub struct MakeEntry(pub Arc<AppState>);

impl<T> tower_service::Service<T> for MakeEntry {
    type Response = Entry;
    type Error = Infallible;
    type Future = std::future::Ready<Result<Entry, Infallible>>;

    fn poll_ready(&mut self, _: &mut Context<'_>) -> Poll<Result<(), Infallible>> {
        Poll::Ready(Ok(()))
    }

    fn call(&mut self, _: T) -> <Self as tower_service::Service<T>>::Future {
        std::future::ready(Ok(Entry(self.0.clone())))
    }
}

/// What `axum`'s router does to every answer of a route it called at its
/// top level: a `Content-Length` from a body of known size when the answer
/// has none (so a 304 or an empty answer says `0`); a successful answer to
/// CONNECT gets no body (its headers stay). HEAD's body is dropped by the
/// entry handler already.
fn top_level(mut resp: Response, connect: bool) -> Response {
    if connect {
        if resp.status().is_success()
            && (resp.headers().contains_key(header::CONTENT_LENGTH)
                || resp.headers().contains_key(header::TRANSFER_ENCODING)
                || resp.body().size_hint().lower() != 0)
        {
            *resp.body_mut() = Body::empty();
        }
        return resp;
    }
    set_content_length(resp.body().size_hint(), resp.headers_mut());
    resp
}

fn set_content_length(size: http_body::SizeHint, headers: &mut HeaderMap) {
    if headers.contains_key(header::CONTENT_LENGTH) {
        return;
    }
    if let Some(n) = size.exact() {
        headers.insert(header::CONTENT_LENGTH, HeaderValue::from(n));
    }
}
