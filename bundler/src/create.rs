//! `bundle create` from start to end: check the request, plan every file
//! with its publisher's digests, check free space, fetch (verified, into
//! the cache), build the manifest and write the bundle.
//!
//! The order matters. Everything that can be refused without a download is
//! refused first (bad flags, Python engines, missing assets, unsigned or
//! untrusted llmgw releases, no space), so an operator never waits an hour
//! to learn their request was wrong.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use llmgw_shared::manifest::{MANIFEST_NAME, Manifest};

use crate::cache::{Cache, Expect};
use crate::error::CreateError;
use crate::fetch::{self, Download, Fetched};
use crate::http::{Http, RetryPolicy, Token};
use crate::plan::Plan;
use crate::progress::Progress;
use crate::report::{self, CreateReport};
use crate::spec::CreateSpec;
use crate::writer::{self, Blob, Format};
use crate::{engines, hub, llmgw_release, space};

/// How a run behaves, apart from what it bundles.
#[derive(Clone)]
pub struct Options {
    pub progress: Progress,
    /// `HF_TOKEN`: sent to the Hub's origin only, never written.
    pub hf_token: Option<Token>,
    pub retry: RetryPolicy,
    /// `SOURCE_DATE_EPOCH`: the time the manifest records and the tar
    /// entries carry. Without it the manifest records now and tar
    /// entries carry 0.
    pub source_date_epoch: Option<u64>,
    /// The password of an encrypted `--sign-key`.
    pub password: llmgw_shared::signer::Password,
}

/// Makes the bundle `spec` describes.
pub async fn create(spec: &CreateSpec, opts: &Options) -> Result<CreateReport, CreateError> {
    let progress = &opts.progress;
    let format = Format::of(&spec.out);
    if spec.out.exists() {
        return Err(CreateError::Usage(format!(
            "--out {}: it exists already; remove it or choose another name (a bundle is never \
             overwritten)",
            spec.out.display()
        )));
    }
    let out_dir = match spec.out.parent() {
        Some(p) if !p.as_os_str().is_empty() => p.to_path_buf(),
        _ => PathBuf::from("."),
    };
    if !out_dir.is_dir() {
        return Err(CreateError::Usage(format!(
            "--out {}: the folder {} does not exist",
            spec.out.display(),
            out_dir.display()
        )));
    }
    let engine_builds = spec
        .engines
        .iter()
        .map(|e| engines::resolve(e, &spec.arches))
        .collect::<Result<Vec<_>, _>>()?;

    // The key is opened (and its password asked) before any download.
    let series = spec.series.resolve(
        opts.source_date_epoch
            .unwrap_or_else(llmgw_shared::time::build_time_unix),
        opts.password.clone(),
    )?;

    let cache = Cache::open(&spec.cache).map_err(|e| CreateError::io(&spec.cache, e))?;
    let http = Http::new(&spec.hf_endpoint, opts.hf_token.clone(), opts.retry)?;
    writer::remove_stale_temps(&spec.out);

    // Plan: every file, with its publisher's digests, before any large download.
    let mut plan = Plan::default();
    if let Some(l) = &spec.llmgw {
        progress.line(&format!(
            "llmgw {}: checking the release signature",
            l.version
        ));
        llmgw_release::plan(
            &http,
            &cache,
            l,
            &spec.arches,
            spec.allow_missing,
            &mut plan,
        )
        .await?;
    }
    for eb in &engine_builds {
        progress.line(&format!(
            "{} {}: {} builds for {}",
            eb.engine.name,
            eb.engine.version,
            eb.builds.len(),
            spec.arches.join(", ")
        ));
        engines::plan(&http, &spec.github_api, eb, spec.allow_missing, &mut plan).await?;
    }
    for r in &spec.repos {
        hub::plan(
            &http,
            &spec.hf_endpoint,
            opts.hf_token.is_some(),
            r,
            spec.allow_missing,
            &mut plan,
        )
        .await?;
    }

    // Room for it all, before the first large download.
    let total = plan.total_bytes();
    let cache_need: u64 = plan
        .downloads
        .iter()
        .map(|d| d.size - cache.bytes_present(&d.expect, d.size))
        .sum();
    space::check(
        cache.root(),
        cache_need,
        &out_dir,
        total + space::bundle_overhead(total),
    )?;
    progress.line(&format!(
        "{} files, {total} bytes; {cache_need} bytes to download",
        plan.downloads.len() + plan.stored.len()
    ));
    progress.set_total(total);
    for s in &plan.stored {
        progress.add_done(s.2);
    }

    // Files known only by their git blob sha1 first: with their sha256 the
    // manifest, and so the whole bundle's layout, is known.
    let (first, rest): (Vec<Download>, Vec<Download>) = std::mem::take(&mut plan.downloads)
        .into_iter()
        .partition(|d| matches!(d.expect, Expect::GitBlobSha1(_)));
    let mut fetched =
        fetch::fetch_all(&http, &cache, first.clone(), spec.jobs, progress, None).await?;
    let by_expect: BTreeMap<&Expect, &Fetched> = first
        .iter()
        .map(|d| &d.expect)
        .zip(fetched.iter())
        .collect();
    let manifest = build_manifest(spec, opts, &series, plan_into_parts(&mut plan), &by_expect)?;
    let bytes = manifest.to_canonical_json();
    let signature = series.sign(&manifest, &bytes)?;
    let manifest_sha256 = llmgw_shared::digest::sha256_hex(&bytes);
    let mtime = opts.source_date_epoch.unwrap_or(0);

    let mut small: Vec<Blob> = fetched
        .iter()
        .map(|f| Blob {
            sha256: f.sha256.clone(),
            size: f.size,
            path: f.path.clone(),
        })
        .collect();
    for (sha, path, size) in &plan.stored {
        small.push(Blob {
            sha256: sha.clone(),
            size: *size,
            path: path.clone(),
        });
    }

    if format == Format::Tar {
        // A plain tar is written while the large files download.
        let (out, m, blobs) = (spec.out.clone(), bytes.clone(), manifest.blobs());
        let sig = signature.clone();
        let tar = tokio::task::spawn_blocking(move || {
            writer::TarInPlace::create(&out, &m, sig.as_deref(), &blobs, mtime)
        })
        .await
        .map_err(|e| CreateError::io(&spec.out, std::io::Error::other(e)))?
        .map_err(|e| CreateError::io(&spec.out, e))?;
        let (t, s) = (tar.clone(), small.clone());
        tokio::task::spawn_blocking(move || {
            for b in &s {
                t.copy_in(&b.sha256, &b.path)?;
            }
            Ok::<(), std::io::Error>(())
        })
        .await
        .map_err(|e| CreateError::io(tar.path(), std::io::Error::other(e)))?
        .map_err(|e| CreateError::io(tar.path(), e))?;
        fetched
            .extend(fetch::fetch_all(&http, &cache, rest, spec.jobs, progress, Some(&tar)).await?);
        progress.finish();
        tar.finish(&spec.out)?;
    } else {
        fetched.extend(fetch::fetch_all(&http, &cache, rest, spec.jobs, progress, None).await?);
        let mut blobs = small;
        blobs.extend(fetched.iter().map(|f| Blob {
            sha256: f.sha256.clone(),
            size: f.size,
            path: f.path.clone(),
        }));
        progress.finish();
        progress.line(&format!("writing {}", spec.out.display()));
        let (out, bytes2, sig) = (spec.out.clone(), bytes.clone(), signature.clone());
        tokio::task::spawn_blocking(move || {
            writer::write_bundle(&out, format, &bytes2, sig.as_deref(), &blobs, mtime)
        })
        .await
        .map_err(|e| CreateError::io(&spec.out, std::io::Error::other(e)))??;
    }
    let sha256_file = write_sha256_file(&spec.out, &manifest_sha256)?;

    Ok(CreateReport {
        out: spec.out.clone(),
        format,
        manifest_sha256,
        sha256_file,
        artifacts: report::artifacts(&manifest),
        blobs: manifest.blobs().len(),
        bytes: manifest.total_bytes(),
        bytes_downloaded: fetched.iter().map(|f| f.downloaded).sum(),
        bytes_reused: fetched.iter().filter(|f| f.reused).map(|f| f.size).sum(),
        gaps: manifest.gaps.clone(),
        signed_by: series.key.as_ref().map(|k| k.key_id()),
        channel: manifest.channel().to_string(),
        sequence: manifest.sequence,
    })
}

type Parts = (
    Vec<llmgw_shared::manifest::Release>,
    Vec<llmgw_shared::manifest::HfRepo>,
    Vec<llmgw_shared::manifest::Gap>,
);

fn plan_into_parts(plan: &mut Plan) -> Parts {
    (
        std::mem::take(&mut plan.releases),
        std::mem::take(&mut plan.repos),
        std::mem::take(&mut plan.gaps),
    )
}

/// The manifest, with the sha256 of every file known only by its git blob
/// sha1 filled in from what its bytes hashed to.
fn build_manifest(
    spec: &CreateSpec,
    opts: &Options,
    series: &crate::series::Series,
    (releases, mut repos, gaps): Parts,
    by_expect: &BTreeMap<&Expect, &Fetched>,
) -> Result<Manifest, CreateError> {
    for r in &mut repos {
        for f in &mut r.files {
            if f.lfs {
                continue;
            }
            let e = Expect::GitBlobSha1(f.git_oid.clone());
            let got = by_expect.get(&e).ok_or_else(|| {
                CreateError::Hub(format!("{} {}: fetched but not recorded", r.id, f.path))
            })?;
            f.sha256 = got.sha256.clone();
        }
    }
    let created = opts
        .source_date_epoch
        .unwrap_or_else(llmgw_shared::time::build_time_unix);
    let mut m = Manifest::new(spec.arches.clone(), created);
    m.releases = releases;
    m.repos = repos;
    m.gaps = gaps;
    series.apply(&mut m);
    m.sort();
    m.validate()?;
    Ok(m)
}

/// `PATH.sha256`: `<hex>  manifest.json`, so `sha256sum -c` checks an
/// extracted manifest and the first token is the bundle's identity.
fn write_sha256_file(out: &Path, sha: &str) -> Result<PathBuf, CreateError> {
    let mut name = out.as_os_str().to_os_string();
    name.push(".sha256");
    let path = PathBuf::from(name);
    let tmp = writer::temp_name(&path);
    std::fs::write(&tmp, format!("{sha}  {MANIFEST_NAME}\n"))
        .map_err(|e| CreateError::io(&tmp, e))?;
    std::fs::rename(&tmp, &path).map_err(|e| CreateError::io(&path, e))?;
    Ok(path)
}
