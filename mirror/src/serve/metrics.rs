//! Prometheus metrics: requests by route and status, bytes sent, requests
//! in flight, and what the store holds.

use prometheus_client::encoding::EncodeLabelSet;
use prometheus_client::metrics::counter::Counter;
use prometheus_client::metrics::family::Family;
use prometheus_client::metrics::gauge::Gauge;
use prometheus_client::registry::Registry;

#[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelSet)]
pub struct RequestLabels {
    pub route: &'static str,
    pub status: u16,
}

#[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelSet)]
pub struct RouteLabel {
    pub route: &'static str,
}

/// The server's counters; cheap to clone (each is an `Arc` inside).
#[derive(Clone, Default)]
pub struct Metrics {
    pub requests: Family<RequestLabels, Counter>,
    pub bytes_sent: Family<RouteLabel, Counter>,
    pub in_flight: Gauge,
    pub bundles: Gauge,
    pub blobs: Gauge,
    pub blob_bytes: Gauge,
    pub reloads: Counter,
    pub reload_errors: Counter,
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
            "index_reloads",
            "Times the index was rebuilt because bundles/ changed",
            self.reloads.clone(),
        );
        r.register(
            "index_reload_errors",
            "Bundles that could not be read while rebuilding the index",
            self.reload_errors.clone(),
        );
        r
    }
}
