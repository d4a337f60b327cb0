//! The classic Helm chart repository: `GET /charts/index.yaml` and
//! `GET /charts/<name>-<version>.tgz`, for Argo CD, Flux `HelmRepository`
//! and Helm without OCI.
//!
//! Invariants: a file name is only a key into the index's chart table; the
//! index lists every chart version held, newest first, each with `urls`
//! pointing back at this mirror and `digest` the package's sha256, so
//! `helm pull --verify`-less clients still get the bytes the publisher's
//! descriptor named. The index is JSON, which is YAML (1.2) too, and which
//! Helm reads as such (`loadIndex` takes JSON).

use http::{HeaderMap, HeaderValue, Method, StatusCode, header};
use serde_json::{Map, Value, json};

use crate::serve::http::files::{BlobReply, serve_blob};
use crate::serve::http::paths::{self, quote_path};
use crate::serve::http::respond;
use crate::serve::index::natural_cmp;
use crate::serve::index::oci::OciIndex;
use crate::serve::request::Req;
use crate::serve::route::{Route, Routed};

/// `/charts/…`; `segs` are the raw segments after `charts`.
pub async fn charts(req: &Req<'_>, segs: &[&str]) -> Routed {
    if req.method != Method::GET && req.method != Method::HEAD {
        return (Route::Charts, respond::method_not_allowed("GET, HEAD"));
    }
    let ix = &req.index.oci;
    match segs {
        ["index.yaml"] => (Route::ChartsIndex, index_yaml(req, ix)),
        [file] => {
            let chart = paths::decode(file).ok().and_then(|f| ix.chart_file(&f));
            let Some(chart) = chart else {
                return (
                    Route::Charts,
                    respond::text(
                        StatusCode::NOT_FOUND,
                        "no chart package of that name is held; GET /charts/index.yaml lists them\n",
                    ),
                );
            };
            let reply = BlobReply {
                blob: &chart.package,
                etag: format!("\"{}\"", chart.package.sha256),
                content_type: "application/gzip",
                extra: HeaderMap::new(),
            };
            let r = serve_blob(&req.state.store, &req.index, req.method, req.headers, reply).await;
            (Route::ChartsPackage, r)
        }
        _ => (
            Route::Charts,
            respond::text(StatusCode::NOT_FOUND, "not found\n"),
        ),
    }
}

/// The repository index: `apiVersion: v1`, `entries` by chart name.
fn index_yaml(req: &Req<'_>, ix: &OciIndex) -> axum::response::Response {
    let base = req.base_url();
    let mut entries = Map::new();
    for (name, versions) in ix.charts() {
        let mut list: Vec<_> = versions.values().collect();
        list.sort_by(|a, b| natural_cmp(&b.version, &a.version));
        let list: Vec<Value> = list
            .into_iter()
            .map(|c| {
                let mut v = c.metadata.clone();
                let file = format!("{}-{}.tgz", c.name, c.version);
                v.insert(
                    "urls".into(),
                    json!([format!("{base}/charts/{}", quote_path(&file))]),
                );
                v.insert("digest".into(), c.package.sha256.to_string().into());
                v.insert("created".into(), c.created.clone().into());
                Value::Object(v)
            })
            .collect();
        entries.insert(name.clone(), Value::Array(list));
    }
    let v = json!({"apiVersion": "v1", "entries": entries});
    let mut extra = HeaderMap::new();
    extra.insert(
        header::CONTENT_TYPE,
        HeaderValue::from_static("application/x-yaml"),
    );
    respond::json_with(req.method, req.headers, &v, extra)
}
