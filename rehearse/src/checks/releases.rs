//! Every release as a node's `curl` or `gh` meets it: the GitHub-shaped
//! API's release by tag lists every asset carried, and a HEAD of each
//! asset's download URL answers its size.
//!
//! Invariant: one row per release; a failure names the request and what
//! the mirror answered.

use llmgw_shared::manifest::{Manifest, Release};

use crate::client::{Mirror, seg};
use crate::report::Check;

/// The rows for every release of `m`.
pub async fn check(mirror: &Mirror, m: &Manifest) -> Vec<Check> {
    let mut out = Vec::new();
    for r in &m.releases {
        let subject = format!("{} {}: {} assets", r.repo, r.tag, r.assets.len());
        out.push(match one(mirror, r).await {
            Ok(()) => Check::pass("release", subject),
            Err(e) => Check::fail(
                "release",
                subject,
                e,
                "make the bundle again (the release is not served as carried): report it, with \
                 this line, as a fault of llmgw",
            ),
        });
    }
    out
}

async fn one(mirror: &Mirror, r: &Release) -> Result<(), String> {
    let url = format!("/api/v3/repos/{}/releases/tags/{}", r.repo, seg(&r.tag));
    let a = mirror
        .get_ok(&url, &[("accept", "application/vnd.github+json")])
        .await?;
    let v: serde_json::Value =
        serde_json::from_slice(&a.body).map_err(|e| format!("GET {url}: not JSON: {e}"))?;
    let listed: std::collections::BTreeSet<&str> = v["assets"]
        .as_array()
        .into_iter()
        .flatten()
        .filter_map(|a| a["name"].as_str())
        .collect();
    for asset in &r.assets {
        if !listed.contains(asset.name.as_str()) {
            return Err(format!("GET {url}: {} is not listed", asset.name));
        }
        let url = format!(
            "/{}/releases/download/{}/{}",
            r.repo,
            seg(&r.tag),
            seg(&asset.name)
        );
        let a = mirror.head_ok(&url, &[]).await?;
        if a.header("content-length") != asset.size.to_string() {
            return Err(format!(
                "HEAD {url}: Content-Length {:?}, the bundle has {}",
                a.header("content-length"),
                asset.size
            ));
        }
    }
    Ok(())
}
