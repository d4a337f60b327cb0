//! The plan phase: every refusal that needs no network (the output, the
//! request, the lists, the signing key), then every file the request means
//! with its publisher's digests, then room for it all.
//!
//! Invariant: nothing large is downloaded before this phase ends; what it
//! fetches is what planning needs (release listings, checksum files,
//! signatures, Python indexes).

use crate::cache::Cache;
use crate::delta::Delivery;
use crate::error::CreateError;
use crate::http::Http;
use crate::series::Series;
use crate::spec::CreateSpec;
use crate::writer::{self, Format};

use super::{Options, room};

/// A request planned, with what the next phases work with.
pub(super) struct Planned {
    pub cache: Cache,
    pub http: Http,
    pub series: Series,
    pub delivery: Delivery,
    pub plan: crate::plan::Plan,
}

/// Checks and plans the request; see the module docs.
pub(super) async fn plan(
    spec: &CreateSpec,
    opts: &Options,
    format: Format,
) -> Result<Planned, CreateError> {
    let progress = &opts.progress;
    let out = room::check_out(spec)?;
    let request = super::request::Request::of(spec)?;
    // The lists are read (and a bad one refused) before the series
    // counter moves.
    let delivery = spec.delta.load()?;
    // The key is opened (and its password asked) before any download.
    let series = spec.series.resolve(
        opts.source_date_epoch
            .unwrap_or_else(llmgw_shared::build_time_unix),
        opts.password.clone(),
    )?;
    let cache = Cache::open(&spec.cache).map_err(|e| CreateError::io(&spec.cache, e))?;
    let (http, auth) = super::request::client(spec, opts)?;
    writer::remove_stale_temps(&spec.out);
    if let (Some(key), Some(sequence)) = (&series.key, series.sequence) {
        delivery.check_series(
            &key.key_id(),
            series
                .channel
                .as_deref()
                .unwrap_or(llmgw_shared::manifest::DEFAULT_CHANNEL),
            sequence,
        )?;
    }
    let planned =
        super::request::plan_request(spec, opts, (&http, &auth), &cache, &request).await?;
    let mut plan = planned.plan;
    delivery.trim(&mut plan);
    room::check_room(spec, format, &cache, &out, &plan)?;
    let total = plan.total_bytes();
    let missing: u64 = plan
        .downloads
        .iter()
        .map(|d| d.size - cache.bytes_present(&d.expect, d.size))
        .sum();
    let files = plan.downloads.len() + plan.stored.len();
    progress.message(&format!(
        "{files} files, {total} bytes; at most {missing} bytes to download"
    ));
    progress.begin(Some(files as u64), total);
    for s in &plan.stored {
        crate::progress::found(progress.as_ref(), s.size);
    }

    Ok(Planned {
        cache,
        http,
        series,
        delivery,
        plan,
    })
}
