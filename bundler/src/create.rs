//! `bundle create` from start to end, in three phases: plan (check the
//! request, list every file with its publisher's digests, check free
//! space), fetch what the manifest needs first (files known only by their
//! git blob sha1, into the cache) and build the manifest, then write the
//! bundle, with every other download streamed into it.
//!
//! The order matters. Everything that can be refused without a download is
//! refused first (bad flags, Python engines, missing assets, unsigned or
//! untrusted llmgw releases, no space), so an operator never waits an hour
//! to learn their request was wrong.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use llmgw_shared::manifest::{MANIFEST_NAME, Manifest};

use std::sync::Arc;

use crate::cache::{Cache, Expect};
use crate::error::CreateError;
use crate::fetch::{self, Download, Fetched};
use crate::http::{Http, RetryPolicy, Token};
use crate::pieces::{self, NetBlob};
use crate::plan::Plan;
use crate::progress::Progress;
use crate::report::{self, CreateReport};
use crate::spec::CreateSpec;
use crate::writer::layout::Layout;
use crate::writer::resume::{Found, Have};
use crate::writer::sink::Keep;
use crate::writer::stream::{Source, Stream, StreamBlob};
use crate::writer::temp::TempBundle;
use crate::writer::{self, Blob, Format, zst};
use crate::{engines, space};

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
    if spec.volumes.is_some() {
        crate::volumes::check_free_names(&spec.out)?;
    }
    let out_is_fat = crate::volumes::size::is_fat(&out_dir).unwrap_or(false);
    if let Some(v) = &spec.volumes
        && out_is_fat
        && v.volume_size > crate::volumes::size::FAT_MAX_FILE
    {
        return Err(CreateError::Usage(format!(
            "--out {}: the folder is on a FAT filesystem, which holds no file over {} bytes              (4 GiB − 1), and --volume-size is {}; use --volume-size fat32",
            spec.out.display(),
            crate::volumes::size::FAT_MAX_FILE,
            v.volume_size
        )));
    }
    let python_requests = crate::python::requests_of(spec)?;
    let engine_builds = spec
        .engines
        .iter()
        .filter(|e| !engines::is_python(&e.name))
        .map(|e| engines::resolve(e, &spec.arches))
        .collect::<Result<Vec<_>, _>>()?;

    // The lists are read (and a bad one refused) before the series
    // counter moves.
    let delivery = spec.delta.load()?;
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
    let planned = crate::plan::plan_request(
        spec,
        opts,
        &http,
        &cache,
        &python_requests,
        &engine_builds,
        true,
    )
    .await?;
    let mut plan = planned.plan;
    delivery.trim(&mut plan);

    // Room for it all, before the first large download.
    if out_is_fat && spec.volumes.is_none() {
        check_fat(spec, format, &plan)?;
    }
    check_space(spec, format, &cache, &out_dir, &plan)?;
    if let Some(v) = &spec.volumes {
        let sizes = plan.downloads.iter().map(|d| d.size);
        crate::volumes::check_fits(v, sizes.chain(plan.stored.iter().map(|s| s.2)))?;
    }
    let total = plan.total_bytes();
    let missing: u64 = plan
        .downloads
        .iter()
        .map(|d| d.size - cache.bytes_present(&d.expect, d.size))
        .sum();
    progress.line(&format!(
        "{} files, {total} bytes; at most {missing} bytes to download",
        plan.downloads.len() + plan.stored.len()
    ));
    progress.set_total(total);
    for s in &plan.stored {
        progress.add_done(s.2);
    }

    // Fetch: first the files known only by their git blob sha1: with their
    // sha256 the manifest, and so the whole bundle's layout, is known.
    let (first, rest): (Vec<Download>, Vec<Download>) = std::mem::take(&mut plan.downloads)
        .into_iter()
        .partition(|d| matches!(d.expect, Expect::GitBlobSha1(_)));
    let fetched = fetch::fetch_all(&http, &cache, first.clone(), spec.jobs, progress).await?;
    let by_expect: BTreeMap<&Expect, &Fetched> = first
        .iter()
        .map(|d| &d.expect)
        .zip(fetched.iter())
        .collect();
    let manifest = build_manifest(spec, opts, &series, plan_into_parts(&mut plan), &by_expect)?;
    let manifest = delivery.apply(manifest)?;
    let carried = manifest.carried_blobs();
    let mut small: Vec<Blob> = fetched
        .iter()
        .filter(|f| carried.contains_key(&f.sha256))
        .map(|f| Blob {
            sha256: f.sha256.clone(),
            size: f.size,
            path: f.path.clone(),
        })
        .collect();
    for (sha, path, size) in plan.stored.iter().filter(|s| carried.contains_key(&s.0)) {
        small.push(Blob {
            sha256: sha.clone(),
            size: *size,
            path: path.clone(),
        });
    }

    // Write: the rest is fetched straight into the bundle.
    let ctx = WriteCtx {
        spec,
        opts,
        http: &http,
        cache: &cache,
        series: &series,
    };
    let written = match (&spec.volumes, format) {
        (Some(v), _) => ctx.volumes(v, manifest, small, rest).await?,
        (None, Format::Dir) => ctx.dir(&manifest, small, rest).await?,
        (None, Format::Tar | Format::TarZst) => ctx.tar(manifest, format, small, rest).await?,
    };
    progress.finish();
    let manifest = written.manifest;
    let manifest_sha256 = llmgw_shared::digest::sha256_hex(&manifest.to_canonical_json());
    let sha256_file = match &written.volumes {
        Some(v) => v.sha256_file.clone(),
        None => write_sha256_file(&spec.out, &manifest_sha256)?,
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

/// Refuses, before the first large download, a bundle a FAT output folder
/// cannot hold: a `.tar` over 4 GiB − 1, or a directory with such a file.
fn check_fat(spec: &CreateSpec, format: Format, plan: &Plan) -> Result<(), CreateError> {
    let max = crate::volumes::size::FAT_MAX_FILE;
    let total = plan.total_bytes();
    let too_big = match format {
        Format::Tar => total + space::bundle_overhead(total) > max,
        Format::TarZst => false,
        Format::Dir => plan.downloads.iter().any(|d| d.size > max),
    };
    if too_big {
        return Err(CreateError::Usage(format!(
            "--out {}: the folder is on a FAT filesystem, which holds no file over {max} bytes              (4 GiB − 1), and this bundle ({total} bytes) needs one; write volumes that fit with              --out NAME.tar --volume-size fat32",
            spec.out.display()
        )));
    }
    Ok(())
}

/// Refuses, before the first large download, a run the disks cannot hold.
/// The cache needs room for what it will keep: everything for a directory
/// bundle (whose files are links to it) or with `--cache`, else only the
/// small files the manifest needs first; the output needs the bundle
/// (next to nothing for a directory of links on the cache's filesystem).
fn check_space(
    spec: &CreateSpec,
    format: Format,
    cache: &Cache,
    out_dir: &Path,
    plan: &Plan,
) -> Result<(), CreateError> {
    let total = plan.total_bytes();
    let keeps_all = format == Format::Dir || spec.keep_in_cache || spec.volumes.is_some();
    let cache_need: u64 = plan
        .downloads
        .iter()
        .filter(|d| keeps_all || matches!(d.expect, Expect::GitBlobSha1(_)))
        .map(|d| d.size - cache.bytes_present(&d.expect, d.size))
        .sum();
    let same_fs = space::free_space(cache.root()).map(|c| c.1).ok()
        == space::free_space(out_dir).map(|o| o.1).ok();
    let out_need = match (&spec.volumes, format) {
        // Every volume, and the parity shards twice (computed, then written).
        (Some(v), _) => {
            total
                + space::bundle_overhead(total)
                + 2 * u64::from(v.parity) * v.volume_size.min(total + (1 << 20))
        }
        (None, Format::Dir) if same_fs => space::bundle_overhead(0),
        _ => total + space::bundle_overhead(total),
    };
    space::check(cache.root(), cache_need, out_dir, out_need)?;
    Ok(())
}

/// What writing the bundle gave: the manifest as written (a resumed run
/// keeps the creation time of the run it continues) and where bytes came from.
struct Written {
    manifest: Manifest,
    downloaded: u64,
    reused: u64,
    /// For volumes: the files and the `.sha256` written.
    volumes: Option<crate::volumes::Written>,
}

/// What the writing phase works with.
struct WriteCtx<'a> {
    spec: &'a CreateSpec,
    opts: &'a Options,
    http: &'a Http,
    cache: &'a Cache,
    series: &'a crate::series::Series,
}

impl WriteCtx<'_> {
    /// A directory: every download into the cache, then hard links to it.
    async fn dir(
        &self,
        manifest: &Manifest,
        small: Vec<Blob>,
        rest: Vec<Download>,
    ) -> Result<Written, CreateError> {
        let progress = &self.opts.progress;
        let fetched =
            fetch::fetch_all(self.http, self.cache, rest, self.spec.jobs, progress).await?;
        let mut blobs = small;
        blobs.extend(fetched.iter().map(|f| Blob {
            sha256: f.sha256.clone(),
            size: f.size,
            path: f.path.clone(),
        }));
        progress.line(&format!("writing {}", self.spec.out.display()));
        let (out, bytes) = (self.spec.out.clone(), manifest.to_canonical_json());
        let sig = self.series.sign(manifest, &bytes)?;
        blocking(&self.spec.out, move || {
            writer::write_dir_bundle(&out, &bytes, sig.as_deref(), &blobs)
        })
        .await?;
        Ok(Written {
            manifest: manifest.clone(),
            downloaded: fetched.iter().map(|f| f.downloaded).sum(),
            reused: fetched.iter().map(Fetched::bytes_reused).sum(),
            volumes: None,
        })
    }

    /// Volumes: every download into the cache (chunks are hashed before
    /// the manifest is written), then the volumes from there.
    async fn volumes(
        &self,
        v: &crate::volumes::VolumeSpec,
        manifest: Manifest,
        small: Vec<Blob>,
        rest: Vec<Download>,
    ) -> Result<Written, CreateError> {
        let progress = self.opts.progress.clone();
        let fetched =
            fetch::fetch_all(self.http, self.cache, rest, self.spec.jobs, &progress).await?;
        let mut blobs = small;
        blobs.extend(fetched.iter().map(|f| Blob {
            sha256: f.sha256.clone(),
            size: f.size,
            path: f.path.clone(),
        }));
        let mtime = self.opts.source_date_epoch.unwrap_or(0);
        // The signing key stays where it is: this thread leaves the async
        // workers for the (long, blocking) write instead.
        let written = tokio::task::block_in_place(|| {
            crate::volumes::write(
                &self.spec.out,
                v,
                manifest,
                &blobs,
                self.series,
                mtime,
                &progress,
            )
        })?;
        Ok(Written {
            manifest: written.manifest.clone(),
            downloaded: fetched.iter().map(|f| f.downloaded).sum(),
            reused: fetched.iter().map(Fetched::bytes_reused).sum(),
            volumes: Some(written),
        })
    }

    /// A `.tar` or `.tar.zst`: written front to back into `.NAME.partial`,
    /// carrying on from what an earlier run left there, each download
    /// streamed into its place.
    async fn tar(
        &self,
        mut manifest: Manifest,
        format: Format,
        small: Vec<Blob>,
        rest: Vec<Download>,
    ) -> Result<Written, CreateError> {
        let progress = self.opts.progress.clone();
        let zst = format == Format::TarZst;
        let out = self.spec.out.clone();
        let (temp, old) = blocking(&self.spec.out, move || {
            let t = TempBundle::open(&out, zst)?;
            let old = t.old_manifest();
            Ok((t, old))
        })
        .await?;

        // An earlier run of the same request: keep its creation time, so
        // that the manifest, and with it the layout, is the same.
        let mut bytes = manifest.to_canonical_json();
        if let Some(old) = old {
            let mut again = manifest.clone();
            if self.opts.source_date_epoch.is_none()
                && let Ok(o) = Manifest::from_json_bytes(&old)
            {
                again.created = o.created;
            }
            let again_bytes = again.to_canonical_json();
            if again_bytes == old {
                progress.line(&format!(
                    "{}: carrying on from what an earlier run wrote",
                    temp.path.display()
                ));
                manifest = again;
                bytes = again_bytes;
            } else {
                progress.line(&format!(
                    "{}: left by a run for other content; starting over",
                    temp.path.display()
                ));
                temp.discard()?;
            }
        }
        let mtime = self.opts.source_date_epoch.unwrap_or(0);
        let blob_list: Vec<(String, u64)> = manifest.carried_blobs().into_iter().collect();
        let sig = self.series.sign(&manifest, &bytes)?;
        let layout = Arc::new(
            Layout::new(&bytes, sig.as_deref(), &blob_list, mtime)
                .map_err(|e| CreateError::io(&temp.path, e))?,
        );

        // Where each blob comes from: the old file, the cache, or the network.
        let (cache, keep) = (self.cache.clone(), self.spec.keep_in_cache);
        let l2 = layout.clone();
        let (temp, found, blobs, net) = blocking(&self.spec.out, move || {
            let mut found = temp.scan(&l2)?;
            let (blobs, net) = sources(&l2, &mut found, &small, rest, &cache, keep)?;
            Ok((temp, found, blobs, net))
        })
        .await?;
        let mut pieces = pieces::start(self.http, net, self.spec.jobs, &progress);

        let zstd = zst.then_some((self.spec.zstd_level, zst::default_threads()));
        let (cache, out) = (self.cache.clone(), self.spec.out.clone());
        let manifest_end = layout.head_end();
        let stats = blocking(&self.spec.out, move || {
            let mut sink = temp.sink(layout.clone(), &found, zstd)?;
            let stream = Stream {
                layout: &layout,
                blobs,
                cache: &cache,
                progress: &progress,
                path: &temp.path,
            };
            match stream.run(&mut sink, Some(&mut pieces.rx)) {
                Ok(stats) => {
                    drop(pieces);
                    sink.finish().map_err(|e| CreateError::io(&temp.path, e))?;
                    temp.finish(&out)?;
                    Ok(stats)
                }
                Err(e) => {
                    drop(pieces);
                    let keep = match e {
                        CreateError::WrongBytes { .. } | CreateError::WrongSize { .. } => {
                            Keep::Verified
                        }
                        _ => Keep::All,
                    };
                    let _ = sink.abandon(keep);
                    let path = temp.path.clone();
                    let len = temp.len();
                    if temp.keep_if_longer(manifest_end) {
                        progress.line(&format!(
                            "kept {} ({len} bytes) for the next run with the same --out to carry on from",
                            path.display()
                        ));
                    }
                    Err(e)
                }
            }
        })
        .await?;
        Ok(Written {
            manifest,
            downloaded: stats.downloaded,
            reused: stats.reused,
            volumes: None,
        })
    }
}

/// Decides where each blob of `layout` comes from, and lists the downloads.
fn sources(
    layout: &Layout,
    found: &mut Found,
    small: &[Blob],
    rest: Vec<Download>,
    cache: &Cache,
    keep: bool,
) -> Result<(Vec<StreamBlob>, Vec<NetBlob>), CreateError> {
    let small: BTreeMap<&str, &Blob> = small.iter().map(|b| (b.sha256.as_str(), b)).collect();
    let mut downloads: BTreeMap<String, Download> = rest
        .into_iter()
        .map(|d| (d.expect.key().to_string(), d))
        .collect();
    let mut blobs = Vec::new();
    let mut net = Vec::new();
    for (k, (sha, size)) in layout.blobs.iter().enumerate() {
        let have = std::mem::replace(&mut found.have[k], Have::None);
        let d = downloads.remove(sha);
        let label = d
            .as_ref()
            .map_or_else(|| format!("blob {sha}"), |d| d.label.clone());
        // The small files were counted when they were fetched (downloaded
        // or reused), so they are not counted again here.
        let (source, prefix, reused) = match (have, small.get(sha.as_str())) {
            (Have::Complete, Some(_)) => (Source::Done, None, false),
            (Have::Complete, None) => (Source::Done, None, true),
            (Have::Prefix(n, h), Some(b)) => (Source::File(b.path.clone()), Some((n, h)), false),
            (Have::Prefix(n, h), None) => (Source::Net, Some((n, h)), false),
            (Have::None, Some(b)) => (Source::File(b.path.clone()), None, false),
            (Have::None, None) => match cache
                .reuse(&Expect::Sha256(sha.clone()), *size)
                .map_err(|e| CreateError::io(cache.root(), e))?
            {
                Some((_, path)) => (Source::File(path), None, true),
                None => (Source::Net, None, false),
            },
        };
        if matches!(source, Source::Net) {
            let d = d.ok_or_else(|| {
                CreateError::io(
                    cache.root(),
                    std::io::Error::other(format!("blob {sha} has no download planned")),
                )
            })?;
            net.push(NetBlob {
                index: k,
                label: label.clone(),
                url: d.url,
                size: *size,
                from: prefix.as_ref().map_or(0, |p| p.0),
                denied_hint: d.denied_hint,
            });
        }
        blobs.push(StreamBlob {
            label,
            source,
            prefix,
            keep,
            reused,
        });
    }
    Ok((blobs, net))
}

/// Runs blocking work off the async workers.
async fn blocking<T: Send + 'static>(
    path: &Path,
    f: impl FnOnce() -> Result<T, CreateError> + Send + 'static,
) -> Result<T, CreateError> {
    tokio::task::spawn_blocking(f)
        .await
        .map_err(|e| CreateError::io(path, std::io::Error::other(e)))?
}

type Parts = (
    Vec<llmgw_shared::manifest::Release>,
    Vec<llmgw_shared::manifest::HfRepo>,
    Vec<llmgw_shared::manifest::Gap>,
    Vec<llmgw_shared::manifest::PythonEnv>,
);

fn plan_into_parts(plan: &mut Plan) -> Parts {
    (
        std::mem::take(&mut plan.releases),
        std::mem::take(&mut plan.repos),
        std::mem::take(&mut plan.gaps),
        std::mem::take(&mut plan.python_envs),
    )
}

/// The manifest, with the sha256 of every file known only by its git blob
/// sha1 filled in from what its bytes hashed to.
fn build_manifest(
    spec: &CreateSpec,
    opts: &Options,
    series: &crate::series::Series,
    (releases, mut repos, gaps, python_envs): Parts,
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
    m.python_envs = python_envs;
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
