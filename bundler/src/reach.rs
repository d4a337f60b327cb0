//! Every host a plan fetches from, tried once before anything large is
//! fetched (#53 items 1 and 2): a dry run finds an unreachable host as the
//! run would, in seconds, and every unreachable host is reported at once,
//! each with the flags that get past it.
//!
//! Invariant: one cheap request per host that serves a file the cache does
//! not hold and that answered nothing yet this run (a HEAD of its root, one
//! attempt, no redirect followed: any answer, even a 404, means the host
//! answers; no file of it is touched; a registry asked for manifests while
//! planning is not asked again, without its token);
//! a host that cannot be reached is never asked again this run
//! (`Http::mark_unreachable`). Under `--allow-missing` an unreachable
//! optional source — a runtime extra — becomes a gap of the same shape as
//! `--no-extras` makes, so the mirror tells nodes what is missing; any
//! other file of an unreachable host stops the run, which lists them all.

use std::collections::BTreeMap;
use std::time::Duration;

use llmgw_shared::manifest::{EXTRA_GAP_PREFIX, extra_gap_file};
use reqwest::Url;

use crate::cache::Cache;
use crate::error::{CreateError, UnreachableHost};
use crate::fetch::Download;
use crate::http::{Http, HttpError, origin_key, redact};
use crate::plan::Plan;

/// How long one host may take to answer its HEAD.
const PROBE_TIMEOUT: Duration = Duration::from_secs(10);

/// What the flags are for a host's files, by what they are.
pub struct Flags<'a> {
    /// `--hf-endpoint`'s URL: files from its origin are the Hub's.
    pub hf_endpoint: &'a str,
    /// `--allow-missing` was given.
    pub allow_missing: bool,
}

impl<'a> Flags<'a> {
    /// The flags of `spec`.
    pub fn of(spec: &'a crate::spec::CreateSpec) -> Self {
        Self {
            hf_endpoint: &spec.hf_endpoint,
            allow_missing: spec.allow_missing,
        }
    }
}

/// Tries every host of `plan`'s downloads once; see the module's doc.
pub async fn check(
    http: &Http,
    cache: &Cache,
    plan: &mut Plan,
    flags: &Flags<'_>,
) -> Result<(), CreateError> {
    let mut hosts: BTreeMap<String, Vec<usize>> = BTreeMap::new();
    for (i, d) in plan.downloads.iter().enumerate() {
        if cache.known_sha256(&d.expect).is_some() {
            continue;
        }
        if let Ok(url) = Url::parse(&d.url) {
            hosts.entry(origin_key(&url)).or_default().push(i);
        }
    }
    let probes = hosts.values().map(|idx| {
        let url = plan.downloads[idx[0]].url.clone();
        async move { (url.clone(), probe(http, &url).await) }
    });
    for (url, outcome) in futures_util::future::join_all(probes).await {
        if let (Err(reason), Ok(u)) = (outcome, Url::parse(&url)) {
            http.mark_unreachable(&u, reason);
        }
    }
    let mut unreachable = Vec::new();
    let mut drop: Vec<usize> = Vec::new();
    for idx in hosts.values() {
        let Ok(url) = Url::parse(&plan.downloads[idx[0]].url) else {
            continue;
        };
        let Some(reason) = http.unreachable_reason(&url) else {
            continue;
        };
        let (extras, other): (Vec<usize>, Vec<usize>) =
            idx.iter().partition(|&&i| is_extra(&plan.downloads[i]));
        let mut stop = other.clone();
        if flags.allow_missing {
            drop.extend(&extras);
        } else {
            stop.extend(&extras);
        }
        if stop.is_empty() {
            continue;
        }
        let first = &plan.downloads[stop[0]];
        let extra_hosts: Vec<&str> = extras
            .iter()
            .filter_map(|&i| extra_gap_file(&plan.downloads[i].label).map(|(h, _)| h))
            .collect();
        unreachable.push(UnreachableHost {
            host: host_of(&url),
            reason: reason.clone(),
            files: stop.len(),
            example: first.label.clone(),
            flags: advice(&url, extra_hosts.first().copied(), !other.is_empty(), flags),
        });
    }
    if !unreachable.is_empty() {
        return Err(CreateError::Unreachable { hosts: unreachable });
    }
    gaps_for(plan, &drop, http);
    Ok(())
}

/// One HEAD of the root of `url`'s host, one attempt, no redirect
/// followed: `Err(why)` when the host cannot be reached.
async fn probe(http: &Http, url: &str) -> Result<(), String> {
    let Ok(mut u) = Url::parse(url) else {
        return Ok(());
    };
    if let Some(why) = http.unreachable_reason(&u) {
        return Err(why);
    }
    if http.answered(&u) {
        return Ok(());
    }
    u.set_path("/");
    u.set_query(None);
    let send = http.client().head(u.clone()).send();
    match tokio::time::timeout(PROBE_TIMEOUT, send).await {
        Err(_) => Err(format!("no answer within {} s", PROBE_TIMEOUT.as_secs())),
        Ok(Ok(_)) => Ok(()),
        Ok(Err(e)) => match HttpError::transport(&u, e) {
            HttpError::Unreachable { reason, .. } => Err(reason),
            // Connected, then something else went wrong: the host answers,
            // and the download says what is wrong with its file.
            _ => Ok(()),
        },
    }
}

/// Whether `d` is a runtime extra (`--no-extras` leaves those out).
fn is_extra(d: &Download) -> bool {
    d.label.starts_with(EXTRA_GAP_PREFIX)
}

/// `host[:port]` as the operator typed it in a URL.
fn host_of(url: &Url) -> String {
    let host = url.host_str().unwrap_or_default();
    match url.port() {
        Some(p) => format!("{host}:{p}"),
        None => host.to_string(),
    }
}

/// The flags that get past an unreachable host, by what it serves (the
/// upstream host of its runtime extras, when it serves some: `--extras-base`
/// may have pointed them at this one).
fn advice(url: &Url, extras: Option<&str>, other: bool, flags: &Flags<'_>) -> String {
    let host = url.host_str().unwrap_or_default();
    let mut ways = Vec::new();
    if let Some(upstream) = extras {
        ways.push(format!(
            "--extras-base {upstream}=URL to fetch its runtime extras from a copy, --no-extras \
             to leave them out, or --allow-missing to record them as gaps"
        ));
    }
    if other {
        let hub = Url::parse(flags.hf_endpoint).is_ok_and(|h| origin_key(&h) == origin_key(url));
        ways.push(if hub {
            "--hf-endpoint URL for a Hub mirror that has the files, or leave out the \
             --model/--dataset that needs them"
                .to_string()
        } else {
            format!(
                "leave out what is fetched from it, or make {host} reachable (a proxy: \
                 HTTPS_PROXY, HTTP_PROXY)"
            )
        });
    }
    ways.join("; ")
}

/// Drops the downloads at `drop` (runtime extras of unreachable hosts)
/// from the plan and its extras, each a gap naming its host and the flags.
fn gaps_for(plan: &mut Plan, drop: &[usize], http: &Http) {
    if drop.is_empty() {
        return;
    }
    let gone: Vec<Download> = drop.iter().map(|&i| plan.downloads[i].clone()).collect();
    plan.keep_downloads(|d| !gone.iter().any(|g| g.expect == d.expect));
    for d in gone {
        let Ok(url) = Url::parse(&d.url) else {
            continue;
        };
        let why = http.unreachable_reason(&url).unwrap_or_default();
        let key = d.expect.key().to_string();
        plan.extras.retain(|e| e.sha256.as_str() != key);
        let upstream = extra_gap_file(&d.label).map_or("HOST", |(h, _)| h);
        plan.gap(
            d.label.clone(),
            format!(
                "--allow-missing: {} cannot be reached ({why}); engines fetch it at run time. \
                 Pass --extras-base {upstream}=URL to carry it from a copy",
                redact(&url)
            ),
        );
    }
}
