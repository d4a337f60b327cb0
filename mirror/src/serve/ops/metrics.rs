//! Prometheus metrics: requests by route and status, bytes sent, requests
//! in flight, and what the store holds.

use axum::response::Response;
use http::{HeaderValue, StatusCode, header};
use prometheus_client::encoding::EncodeLabelSet;
use prometheus_client::metrics::counter::Counter;
use prometheus_client::metrics::family::Family;
use prometheus_client::metrics::gauge::Gauge;
use prometheus_client::registry::Registry;

use crate::serve::http::respond::text;
use crate::serve::route::Route;

#[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelSet)]
pub struct RequestLabels {
    pub route: Route,
    pub status: u16,
}

#[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelSet)]
pub struct RouteLabel {
    pub route: Route,
}

/// The server's counters; cheap to clone (each is an `Arc` inside).
#[derive(Clone, Default)]
pub struct Metrics {
    /// Seconds since the newest bundle was imported; absent with no bundle.
    pub newest_bundle_age: Family<Vec<(String, String)>, Gauge>,
    /// Seconds until the nearest `expires` of a current bundle (negative
    /// once past); absent when none has one.
    pub expiry: Family<Vec<(String, String)>, Gauge>,
    /// What both are computed from at each scrape.
    pub freshness: std::sync::Arc<std::sync::Mutex<super::freshness::Freshness>>,
    pub requests: Family<RequestLabels, Counter>,
    pub bytes_sent: Family<RouteLabel, Counter>,
    pub in_flight: Gauge,
    pub bundles: Gauge,
    pub blobs: Gauge,
    pub blob_bytes: Gauge,
    pub reloads: Counter,
    pub reload_errors: Counter,
    /// Requests for something a served route family does not hold.
    pub misses: Family<RouteLabel, Counter>,
    /// JSON answers built (each then kept for identical requests).
    pub json_builds: Family<RouteLabel, Counter>,
    /// Bytes of held files read to learn their tar layers' digests (a
    /// restart that finds them in the store's state reads none).
    pub model_layer_hashed_bytes: Counter,
    /// Each route's `requests` (status 200) and `bytes_sent` counters, once
    /// looked up: the same counters as the families', found without a lock
    /// and a hash of the labels on every answer (#35 item 6).
    hot: HotCounters,
}

/// One slot a route: its status-200 request counter and its bytes counter.
#[derive(Clone)]
struct HotCounters(std::sync::Arc<[std::sync::OnceLock<(Counter, Counter)>]>);

impl Default for HotCounters {
    fn default() -> Self {
        // The routes are numbered from 0 in their order; one past the
        // last is how many there are (a route added after it is counted
        // through the families, without a slot).
        HotCounters(
            (0..=Route::LAST as usize)
                .map(|_| Default::default())
                .collect(),
        )
    }
}

impl Metrics {
    /// Registers every metric under the `llmgw_mirror` prefix.
    pub fn registry(&self) -> Registry {
        let mut r = Registry::with_prefix("llmgw_mirror");
        r.register(
            "http_requests",
            "HTTP requests answered, by route and status",
            self.requests.clone(),
        );
        r.register(
            "misses",
            "Requests answered 404 for something a served route family does not hold, by route",
            self.misses.clone(),
        );
        r.register(
            "json_builds",
            "JSON answers built, by route: a cached answer is not built again, and requests \
             that ask while it is being built wait for that one build",
            self.json_builds.clone(),
        );
        r.register(
            "http_sent_bytes",
            "Response body bytes sent, by route",
            self.bytes_sent.clone(),
        );
        r.register(
            "http_requests_in_flight",
            "Requests whose response is not fully sent yet",
            self.in_flight.clone(),
        );
        r.register("bundles", "Bundles held in the store", self.bundles.clone());
        r.register(
            "blobs",
            "Distinct blobs the held bundles name",
            self.blobs.clone(),
        );
        r.register(
            "blob_bytes",
            "Total size of the distinct blobs the held bundles name",
            self.blob_bytes.clone(),
        );
        r.register(
            "newest_bundle_age_seconds",
            "Seconds since the newest bundle was imported (alert when the courier stops coming)",
            self.newest_bundle_age.clone(),
        );
        r.register(
            "bundle_expiry_seconds",
            "Seconds until the nearest expires of a current bundle (each signed series' \
             highest sequence, the newest unsigned bundle); negative once past",
            self.expiry.clone(),
        );
        r.register(
            "index_reloads",
            "Times the index was rebuilt because bundles/ changed",
            self.reloads.clone(),
        );
        r.register(
            "index_reload_errors",
            "Bundles that could not be read while rebuilding the index",
            self.reload_errors.clone(),
        );
        r.register(
            "model_layer_hashed_bytes",
            "Bytes of held model files read to learn the digests of their OCI tar layers",
            self.model_layer_hashed_bytes.clone(),
        );
        r
    }
}

impl Metrics {
    /// Counts one answer of `route` with `status` whose body sent `bytes`.
    pub fn count_answer(&self, route: Route, status: u16, bytes: u64) {
        let slot = (status == 200)
            .then(|| self.hot.0.get(route as usize))
            .flatten();
        let Some(slot) = slot else {
            self.requests
                .get_or_create(&RequestLabels { route, status })
                .inc();
            self.bytes_sent
                .get_or_create(&RouteLabel { route })
                .inc_by(bytes);
            return;
        };
        let (requests, sent) = slot.get_or_init(|| {
            (
                self.requests
                    .get_or_create(&RequestLabels { route, status })
                    .clone(),
                self.bytes_sent.get_or_create(&RouteLabel { route }).clone(),
            )
        });
        requests.inc();
        sent.inc_by(bytes);
    }

    /// Sets the freshness gauges for a scrape at `now` (Unix seconds).
    pub fn observe_freshness(&self, now: u64) {
        let f = self.freshness.lock().map(|f| *f).unwrap_or_default();
        let set = |family: &Family<Vec<(String, String)>, Gauge>, v: Option<i64>| {
            family.clear();
            if let Some(v) = v {
                family.get_or_create(&Vec::new()).set(v);
            }
        };
        let now = now as i64;
        set(
            &self.newest_bundle_age,
            f.newest_import.map(|t| now - t as i64),
        );
        set(&self.expiry, f.nearest_expiry.map(|t| t as i64 - now));
    }
}

/// `/metrics`: the counters in Prometheus text format.
pub fn answer(metrics: &Metrics, registry: &Registry) -> Response {
    // Ages as of now; what the store holds is kept current by the state's
    // refresh thread.
    let now = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |d| d.as_secs());
    metrics.observe_freshness(now);
    let mut out = String::new();
    if let Err(e) = prometheus_client::encoding::text::encode(&mut out, registry) {
        return text(StatusCode::INTERNAL_SERVER_ERROR, format!("{e}\n"));
    }
    let mut r = text(StatusCode::OK, out);
    r.headers_mut().insert(
        header::CONTENT_TYPE,
        HeaderValue::from_static("application/openmetrics-text; version=1.0.0; charset=utf-8"),
    );
    r
}
