//! `bundle create` from start to end, in three phases, each a module:
//! plan (check the request and where it goes, ask the upstreams for every
//! file with its publisher's digests, check free space: [`plan`], [`room`]),
//! fetch what the manifest needs first and build it ([`manifest`]),
//! then write the bundle with every other download streamed into it
//! ([`write`]).
//!
//! The order matters. Everything that can be refused without a download is
//! refused first (bad flags, Python engines, missing assets, unsigned or
//! untrusted llmgw releases, no space), so an operator never waits an hour
//! to learn their request was wrong.

mod manifest;
mod options;
mod plan;
pub mod request;
mod room;
mod wants;
mod write;

use crate::error::CreateError;
use crate::fetch::Fetched;
use crate::report::{self, CreateReport};
use crate::spec::CreateSpec;
use crate::writer::Format;

pub use options::{CheckWritten, Options};

/// Makes the bundle `spec` describes.
pub async fn create(spec: &CreateSpec, opts: &Options) -> Result<CreateReport, CreateError> {
    let progress = &opts.progress;
    let format = Format::of(&spec.out);

    // Plan: refusals that need no network, then every file with its
    // publisher's digests, then room for it all, before any large download.
    let plan::Planned {
        cache,
        http,
        series,
        delivery,
        plan,
    } = plan::plan(spec, opts, format).await?;

    // Fetch: first the files known only by their git blob sha1: with their
    // sha256 the manifest, and so the whole bundle's layout, is known.
    let first = manifest::fetch_first(spec, opts, &http, &cache, &series, &delivery, plan).await?;
    let fetched = first.fetched;

    // Write: the rest is fetched straight into the bundle.
    let ctx = write::WriteCtx {
        spec,
        opts,
        http: &http,
        cache: &cache,
        series: &series,
    };
    let (manifest, small, rest) = (first.manifest, first.small, first.rest);
    let written = match (&spec.volumes, format) {
        (Some(v), _) => ctx.volumes(v, manifest, small, rest).await?,
        (None, Format::Dir) => ctx.dir(&manifest, small, rest).await?,
        (None, Format::Tar | Format::TarZst) => ctx.tar(manifest, format, small, rest).await?,
    };
    progress.finish();
    let manifest = written.manifest;
    let manifest_sha256 = llmgw_shared::BundleId::of(&manifest.to_canonical_json());
    let sha256_file = match &written.volumes {
        Some(v) => v.sha256_file.clone(),
        None => write::write_sha256_file(&spec.out, &manifest_sha256)?,
    };

    Ok(CreateReport {
        out: spec.out.clone(),
        format,
        manifest_sha256,
        sha256_file,
        artifacts: report::artifacts(&manifest),
        blobs: manifest.carried_blobs().len(),
        bytes: manifest.carried_blobs().values().sum(),
        prerequisites: manifest.delta.as_ref().map_or(0, |d| d.prerequisites.len()),
        prerequisite_bytes: manifest
            .delta
            .as_ref()
            .map_or(0, |d| d.prerequisites.iter().map(|p| p.size).sum()),
        repairs: manifest.delta.as_ref().map_or(0, |d| d.repairs.len()),
        bytes_downloaded: fetched.iter().map(|f| f.downloaded).sum::<u64>() + written.downloaded,
        bytes_reused: fetched.iter().map(Fetched::bytes_reused).sum::<u64>() + written.reused,
        gaps: manifest.gaps.clone(),
        signed_by: series.key.as_ref().map(|k| k.key_id()),
        channel: manifest.channel().to_string(),
        sequence: manifest.sequence,
        volumes: written.volumes.map(|v| v.files).unwrap_or_default(),
    })
}
