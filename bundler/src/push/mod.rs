//! `llmgw mirror push`, the registry half: what the mirror's plan names
//! ([`llmgw_shared::push::PushPlan`]) copied into a site's registry —
//! per repository every blob first (asked for with HEAD and skipped when
//! held, mounted from another repository of the push where the registry
//! offers it, else uploaded), then the manifests children first, the tags
//! last, each by `--tags` ([`tags`]).
//!
//! Invariant: a tag is set only after everything it reaches is in the
//! registry and every answer agreed with what was sent ([`client`]), so a
//! run cut anywhere leaves no tag naming a manifest the registry lacks,
//! and a rerun skips what is there (resumable by construction). The first
//! refusal stops the run and is named.

mod body;
mod client;
pub mod tags;
pub mod target;

use std::collections::HashMap;

use futures_util::StreamExt;
use llmgw_shared::Sha256;
use llmgw_shared::push::{PushBlob, PushPlan, PushRepo};

use crate::error::oci::OciError;
pub use crate::error::push::PushError;
use crate::http::Http;
use crate::sources::oci::auth::RegistryAuth;
use crate::sources::oci::client::get_manifest;
use client::{Dest, Started};
pub use tags::TagPolicy;
pub use target::Target;

/// How many blobs are sent at once.
const PARALLEL_BLOBS: usize = 4;

/// What a push did.
#[derive(Debug, Clone, Default)]
pub struct Summary {
    /// Blobs uploaded.
    pub blobs_pushed: usize,
    /// Their bytes.
    pub bytes_pushed: u64,
    /// Blobs the registry mounted from another repository.
    pub blobs_mounted: usize,
    /// Blobs the registry held already.
    pub blobs_skipped: usize,
    /// Their bytes.
    pub bytes_skipped: u64,
    /// Manifests put.
    pub manifests_pushed: usize,
    /// Manifests the registry held already.
    pub manifests_skipped: usize,
    /// Tags set or moved.
    pub tags_set: usize,
    /// Tags already naming the mirror's manifest.
    pub tags_unchanged: usize,
    /// Tags whose index was merged with the mirror's.
    pub tags_merged: usize,
    /// Tags `--tags keep` left naming another manifest, said.
    pub tags_kept: Vec<String>,
}

/// What happened to one blob.
enum Outcome {
    Skipped(u64),
    Mounted,
    Pushed(u64),
}

/// The client a push runs with: tokens that may push, credentials read
/// as `bundle create --image` reads them (`auth_file`, i.e.
/// `$REGISTRY_AUTH_FILE`, else `~/.docker/config.json` under `home`).
pub fn client(
    auth_file: Option<&std::path::Path>,
    home: Option<&std::path::Path>,
    retry: crate::RetryPolicy,
) -> Result<(Http, std::sync::Arc<RegistryAuth>), PushError> {
    // No Hub is asked: the Hub's origin is only where HF_TOKEN would go,
    // and there is none.
    let http =
        Http::new("https://huggingface.co", None, retry).map_err(|source| PushError::Http {
            at: "the HTTP client".into(),
            doing: "building it".into(),
            source: Box::new(source),
        })?;
    let credentials = crate::sources::oci::credentials::Credentials::load(auth_file, home)?;
    let auth =
        std::sync::Arc::new(RegistryAuth::new(http.client().clone(), credentials).for_push());
    Ok((http.with_authorizer(auth.clone()), auth))
}

/// Pushes `plan` to `target`; `say` gets a line per repository.
pub async fn push(
    http: &Http,
    auth: &RegistryAuth,
    target: &Target,
    plan: &PushPlan,
    policy: TagPolicy,
    say: &(dyn Fn(&str) + Sync),
) -> Result<Summary, PushError> {
    let mut sum = Summary::default();
    // Where each blob is already, for a cross-repository mount.
    let mut landed: HashMap<Sha256, String> = HashMap::new();
    for (n, r) in plan.repos.iter().enumerate() {
        let dest = Dest {
            http,
            auth,
            repo: target.repo(&r.name),
        };
        say(&format!(
            "[{}/{}] {} -> {}: {} blobs, {} manifests, {} tags",
            n + 1,
            plan.repos.len(),
            r.what,
            dest.repo.shown,
            r.blobs.len(),
            r.manifests.len(),
            r.tags.len()
        ));
        let before = sum.clone();
        blobs(&dest, r, &landed, &mut sum).await?;
        for b in &r.blobs {
            landed
                .entry(b.sha256.clone())
                .or_insert_with(|| dest.repo.repository.clone());
        }
        for m in &r.manifests {
            if dest.has_manifest(&m.sha256, &m.media_type).await? {
                sum.manifests_skipped += 1;
            } else {
                dest.put_manifest(&format!("sha256:{}", m.sha256), &m.media_type, &m.bytes)
                    .await?;
                sum.manifests_pushed += 1;
            }
        }
        for (tag, digest) in &r.tags {
            set_tag(&dest, r, tag, digest, policy, &mut sum).await?;
        }
        say(&format!(
            "[{}/{}] {}: {} blobs pushed ({} bytes), {} mounted, {} skipped; {} manifests pushed",
            n + 1,
            plan.repos.len(),
            dest.repo.shown,
            sum.blobs_pushed - before.blobs_pushed,
            sum.bytes_pushed - before.bytes_pushed,
            sum.blobs_mounted - before.blobs_mounted,
            sum.blobs_skipped - before.blobs_skipped,
            sum.manifests_pushed - before.manifests_pushed,
        ));
    }
    Ok(sum)
}

/// Every blob of `r`, a few at a time.
async fn blobs(
    dest: &Dest<'_>,
    r: &PushRepo,
    landed: &HashMap<Sha256, String>,
    sum: &mut Summary,
) -> Result<(), PushError> {
    let mut done = futures_util::stream::iter(r.blobs.iter())
        .map(|b| one_blob(dest, b, landed.get(&b.sha256).map(String::as_str)))
        .buffer_unordered(PARALLEL_BLOBS);
    while let Some(outcome) = done.next().await {
        match outcome? {
            Outcome::Skipped(n) => {
                sum.blobs_skipped += 1;
                sum.bytes_skipped += n;
            }
            Outcome::Mounted => sum.blobs_mounted += 1,
            Outcome::Pushed(n) => {
                sum.blobs_pushed += 1;
                sum.bytes_pushed += n;
            }
        }
    }
    Ok(())
}

async fn one_blob(dest: &Dest<'_>, b: &PushBlob, from: Option<&str>) -> Result<Outcome, PushError> {
    if dest.has_blob(&b.sha256, b.size).await? {
        return Ok(Outcome::Skipped(b.size));
    }
    match dest.start(&b.sha256, from).await? {
        Started::Mounted => Ok(Outcome::Mounted),
        Started::At(url) => {
            dest.put_blob(url, b).await?;
            Ok(Outcome::Pushed(b.size))
        }
    }
}

/// Sets `tag` to `digest` (a manifest of `r`, pushed), as `policy` says
/// when the registry's tag names another manifest.
async fn set_tag(
    dest: &Dest<'_>,
    r: &PushRepo,
    tag: &str,
    digest: &Sha256,
    policy: TagPolicy,
    sum: &mut Summary,
) -> Result<(), PushError> {
    let Some(ours) = r.manifests.iter().find(|m| &m.sha256 == digest) else {
        return Ok(());
    };
    let theirs = match get_manifest(dest.http, dest.auth, &dest.repo, tag).await {
        Ok(a) => Some(a),
        Err(OciError::NotFound { .. }) => None,
        Err(e) => return Err(e.into()),
    };
    let Some(theirs) = theirs else {
        dest.put_manifest(tag, &ours.media_type, &ours.bytes)
            .await?;
        sum.tags_set += 1;
        return Ok(());
    };
    if theirs.sha256 == *digest {
        sum.tags_unchanged += 1;
        return Ok(());
    }
    match policy {
        TagPolicy::Overwrite => {
            dest.put_manifest(tag, &ours.media_type, &ours.bytes)
                .await?;
            sum.tags_set += 1;
        }
        TagPolicy::Keep => sum.tags_kept.push(format!(
            "{}:{} names sha256:{}, not the mirror's sha256:{digest} (--tags keep)",
            dest.repo.shown,
            llmgw_shared::shown(tag),
            theirs.sha256
        )),
        TagPolicy::Merge => {
            let why = |why: String| PushError::Merge {
                at: dest.repo.shown.clone(),
                tag: llmgw_shared::shown(tag).to_string(),
                why,
            };
            if !tags::is_index(&ours.media_type) {
                return Err(why(format!("the mirror's is a {}", ours.media_type)));
            }
            if !tags::is_index(&theirs.media_type) {
                return Err(why(format!(
                    "the tag names a {} (sha256:{})",
                    llmgw_shared::shown(&theirs.media_type),
                    theirs.sha256
                )));
            }
            let merged = tags::merge(&ours.bytes, &theirs.bytes).map_err(why)?;
            let sha = Sha256::of(&merged);
            dest.put_manifest(&format!("sha256:{sha}"), &ours.media_type, &merged)
                .await?;
            dest.put_manifest(tag, &ours.media_type, &merged).await?;
            sum.tags_merged += 1;
        }
    }
    Ok(())
}
