//! The front page's sections, each rendered from the index loaded for the
//! request: health, how to point a node at the mirror, the bundles held,
//! the releases, the Hub repositories and the Python environments.
//!
//! Invariant: every value shown comes from the index (what the held
//! manifests say, in the store's trusted order) or the server's own state,
//! and goes through [`esc`]; every path segment of a link is
//! percent-encoded first; a section lists what is held and nothing else.

use std::fmt::Write as _;

use llmgw_shared::url::{encode_path, encode_segment};

use super::html::{copy_block, esc, table};
use super::view::View;
use crate::serve::index::Index;
use crate::serve::node::{Holds, node_env};
use crate::serve::state::{AppState, Readiness};
use crate::store::inspect::human_bytes;

/// The health line: what `/readyz` and `/metrics` know, in words, each
/// coloured by how an operator should feel about it.
pub fn health(state: &AppState, now: u64) -> String {
    let (class, ready) = match state.readiness() {
        Readiness::Ready { bundles: 0 } => ("warn", "ready, but holds no bundles yet".to_string()),
        Readiness::Ready { bundles } => {
            let noun = if bundles == 1 { "bundle" } else { "bundles" };
            ("ok", format!("ready: {bundles} {noun}"))
        }
        Readiness::Reading => ("warn", "reading the store".to_string()),
        Readiness::HashingModels => ("warn", "hashing the models' image layers".to_string()),
        Readiness::Failing(why) => ("bad", format!("the store cannot be read: {why}")),
    };
    let freshness = state
        .metrics
        .freshness
        .lock()
        .map(|f| *f)
        .unwrap_or_default();
    let mut out = format!(
        "<p class=\"health\"><span class=\"{class}\">● {}</span>",
        esc(&ready)
    );
    if let Some(t) = freshness.newest_import {
        let days = now.saturating_sub(t) / 86_400;
        let class = if days > 30 { "warn" } else { "ok" };
        let _ = write!(
            out,
            "<span class=\"{class}\">last import {}</span>",
            esc(&ago(now.saturating_sub(t)))
        );
    }
    if let Some(t) = freshness.nearest_expiry {
        let (class, text) = if t <= now {
            ("bad", format!("a current bundle expired {}", ago(now - t)))
        } else if t - now < 14 * 86_400 {
            ("warn", format!("nearest expiry in {}", span(t - now)))
        } else {
            ("ok", format!("nearest expiry in {}", span(t - now)))
        };
        let _ = write!(out, "<span class=\"{class}\">{}</span>", esc(&text));
    }
    let errors = state.metrics.reload_errors.get();
    if errors > 0 {
        let _ = write!(
            out,
            "<span class=\"bad\">{errors} held bundles could not be read (see the server log)</span>"
        );
    }
    out.push_str("</p>");
    out
}

/// "3 days ago", "5 minutes ago".
fn ago(secs: u64) -> String {
    format!("{} ago", span(secs))
}

/// A duration in the largest whole unit.
fn span(secs: u64) -> String {
    let (n, unit) = match secs {
        s if s >= 2 * 86_400 => (s / 86_400, "days"),
        s if s >= 2 * 3_600 => (s / 3_600, "hours"),
        s if s >= 120 => (s / 60, "minutes"),
        s => (s, "seconds"),
    };
    format!("{n} {unit}")
}

/// The block a node copies: exactly what `llmgw mirror env` and `/-/env`
/// say (one function decides every line: [`node_env`]), so the page never
/// names an environment's index by chance, or one a node cannot resolve.
/// A store of hundreds of releases gives the first [`BLOCK_RELEASES`] of
/// them here, and says where every line is.
pub fn use_block(ix: &Index, base: &str) -> String {
    let mut env = node_env(&Holds::of_index(ix), base);
    let releases = env.releases.len();
    env.releases.truncate(BLOCK_RELEASES);
    let mut text = env.to_shell();
    if releases > BLOCK_RELEASES {
        let _ = writeln!(
            text,
            "# … and {} more releases: `llmgw mirror env` or {base}/-/env gives every line",
            releases - BLOCK_RELEASES
        );
    }
    format!("<h2>Use this mirror</h2>{}", copy_block(&text))
}

/// The releases the front page's block names (the list below has them all).
const BLOCK_RELEASES: usize = 3;

/// The bundles held, newest import first, the rows `view` shows.
pub fn bundles(ix: &Index, view: View) -> String {
    let total = ix.bundles.len();
    let rows: Vec<Vec<String>> = view
        .window(ix.bundles.iter().rev())
        .map(|b| {
            let signer = ix.signers.get(b.id.as_str()).map(|(key, _)| key.as_str());
            vec![
                format!(
                    "<code title=\"{0}\">{1}</code>",
                    esc(b.id.as_str()),
                    esc(&b.id.as_str()[..12])
                ),
                esc(&b.created),
                esc(b.channel.as_deref().unwrap_or("default")),
                b.sequence.map_or_else(String::new, |s| s.to_string()),
                signer.map_or_else(|| "<span class=\"dim\">unsigned</span>".into(), esc),
                publishers(b),
                esc(b.expires.as_deref().unwrap_or("")),
                esc(&human_bytes(b.bytes)),
            ]
        })
        .collect();
    let mut out = format!("<h2>Bundles ({total})</h2>");
    if rows.is_empty() {
        out.push_str(
            "<p class=\"dim\">none yet: import one with <code>llmgw bundle import</code></p>",
        );
        return out;
    }
    out.push_str(&table(
        &[
            "bundle",
            "created",
            "channel",
            "sequence",
            "signed by",
            "publishers' signatures",
            "expires",
            "size",
        ],
        &[3, 7],
        &rows,
    ));
    out.push_str(&view.footer("/-/bundles", total, "bundles"));
    out
}

/// A bundle's publishers' signatures: how many, each signer in the
/// title, each Sigstore bundle and the trusted root a link.
fn publishers(b: &crate::serve::index::entries::BundleInfo) -> String {
    let Some(sigs) = &b.signatures else {
        return "<span class=\"dim\">none</span>".into();
    };
    let base = format!("/-/bundles/{}/evidence", b.id);
    let mut links: Vec<String> = sigs
        .signed
        .iter()
        .map(|s| {
            format!(
                "<a href=\"{base}/{}{}\" title=\"{}: by {}\">{}</a>",
                s.artifact,
                llmgw_shared::manifest::SIGSTORE_SUFFIX,
                esc(&s.what),
                esc(&s.identity),
                esc(s.what.rsplit(' ').next().unwrap_or(&s.what))
            )
        })
        .collect();
    links.push(format!(
        "<a href=\"{base}/{}\">trusted root</a>",
        llmgw_shared::manifest::TRUSTED_ROOT_NAME
    ));
    if !sigs.unsigned.is_empty() {
        links.push(format!(
            "<span class=\"warn\">{} unsigned</span>",
            sigs.unsigned.len()
        ));
    }
    links.join(", ")
}

/// The releases, by repository and tag.
pub fn releases(ix: &Index, base: &str, view: View) -> String {
    if ix.releases.is_empty() {
        return String::new();
    }
    let total = ix.releases.len();
    let rows: Vec<Vec<String>> = view
        .window(ix.releases.values())
        .map(|r| {
            let bytes: u64 = r.assets.values().map(|a| a.blob.size).sum();
            let api = format!(
                "{base}/api/v3/repos/{}/releases/tags/{}",
                encode_path(&r.repo),
                encode_segment(&r.tag)
            );
            vec![
                esc(&r.repo),
                format!("<a href=\"{}\">{}</a>", esc(&api), esc(&r.tag)),
                esc(&r.engine),
                r.assets.len().to_string(),
                esc(&human_bytes(bytes)),
            ]
        })
        .collect();
    format!(
        "<h2>Releases ({total})</h2>{}{}",
        table(
            &["repository", "tag", "engine", "assets", "size"],
            &[3, 4],
            &rows
        ),
        view.footer("/-/releases", total, "releases")
    )
}

/// The Hub repositories: branches, tags and commits, and a link to each
/// one's file list.
pub fn repos(ix: &Index, view: View) -> String {
    if ix.repos.is_empty() {
        return String::new();
    }
    let mut list: Vec<_> = ix.repos.values().collect();
    list.sort_by(|a, b| (a.kind, &a.id).cmp(&(b.kind, &b.id)));
    let total = list.len();
    let rows: Vec<Vec<String>> = view
        .window(list.iter())
        .map(|r| {
            let kind = r.kind.api_plural();
            let refs = |tags: bool| {
                r.refs
                    .iter()
                    .filter(|(name, _)| r.tags.contains(*name) == tags)
                    .map(|(name, commit)| {
                        format!(
                            "{} <code class=\"dim\">{}</code>",
                            esc(name),
                            esc(&commit[..8.min(commit.len())])
                        )
                    })
                    .collect::<Vec<_>>()
                    .join("<br>")
            };
            let files = r.default_snapshot().map_or(0, |s| s.files().count());
            vec![
                esc(kind.trim_end_matches('s')),
                format!(
                    "<a href=\"/-/{kind}/{}\">{}</a>",
                    esc(&encode_path(&r.id)),
                    esc(&r.id)
                ),
                refs(false),
                refs(true),
                r.snapshots.len().to_string(),
                files.to_string(),
            ]
        })
        .collect();
    format!(
        "<h2>Models, datasets and kernels ({total})</h2>{}{}",
        table(
            &["kind", "repository", "branches", "tags", "commits", "files"],
            &[4, 5],
            &rows
        ),
        view.footer("/-/repos", total, "repositories")
    )
}

/// The Python environments, each with its index URL to copy.
pub fn envs(ix: &Index, base: &str, view: View) -> String {
    let total = ix.pypi.envs().count();
    let rows: Vec<Vec<String>> = view
        .window(ix.pypi.envs())
        .map(|e| {
            vec![
                format!(
                    "<a href=\"/-/pypi/{}\">{}</a>",
                    esc(&encode_segment(&e.name)),
                    esc(&e.name)
                ),
                esc(&e.arch),
                esc(&e.python),
                e.files.len().to_string(),
                esc(&human_bytes(e.bytes)),
                format!(
                    "<code>{}</code>",
                    esc(&format!("{base}/pypi/{}/simple", encode_segment(&e.name)))
                ),
            ]
        })
        .collect();
    if rows.is_empty() {
        return String::new();
    }
    format!(
        "<h2>Python environments ({total})</h2>{}{}",
        table(
            &[
                "environment",
                "arch",
                "python",
                "files",
                "size",
                "index URL"
            ],
            &[3, 4],
            &rows
        ),
        view.footer("/-/pypi", total, "environments")
    )
}

/// The images, where the store holds any: the name a node pulls, the
/// registry it came from, its tags and size.
pub fn images(ix: &Index, base: &str, view: View) -> String {
    let host = base.split_once("://").map_or(base, |(_, h)| h);
    let total = ix.oci.repos().count();
    if total == 0 {
        return String::new();
    }
    let rows: Vec<Vec<String>> = view
        .window(ix.oci.repos())
        .map(|r| {
            let bytes: u64 = r.blobs.values().sum::<u64>()
                + r.manifests.values().map(|m| m.blob.size).sum::<u64>();
            let tags: Vec<String> = r.tags.keys().map(|t| esc(t)).collect();
            vec![
                format!("<code>{}</code>", esc(&format!("{host}/{}", r.name))),
                esc(&crate::serve::index::oci::registry_label(&r.registry)),
                tags.join(", "),
                esc(&human_bytes(bytes)),
            ]
        })
        .collect();
    format!(
        "<h2>Images ({total})</h2>{}{}",
        table(&["pull as", "registry (ns)", "tags", "size"], &[3], &rows),
        view.footer("/-/images", total, "images")
    )
}

/// The Helm charts, where the store holds any: each chart's versions, and
/// the classic repository's URL.
pub fn charts(ix: &Index, base: &str, view: View) -> String {
    let all = ix.oci.charts();
    if all.is_empty() {
        return String::new();
    }
    let rows: Vec<Vec<String>> = view
        .window(all.iter())
        .map(|(name, versions)| {
            let list: Vec<String> = versions.keys().map(|v| esc(v)).collect();
            let bytes: u64 = versions.values().map(|c| c.package.size).sum();
            vec![esc(name), list.join(", "), esc(&human_bytes(bytes))]
        })
        .collect();
    format!(
        "<h2>Helm charts ({})</h2><p>classic repository: <code>{}</code></p>{}{}",
        all.len(),
        esc(&format!("{base}/charts")),
        table(&["chart", "versions", "size"], &[2], &rows),
        view.footer("/-/charts", all.len(), "charts")
    )
}
