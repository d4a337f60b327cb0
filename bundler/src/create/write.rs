//! The write phase: the bundle in its format (a directory of links into
//! the cache, volumes, or a `.tar`/`.tar.zst` written front to back with
//! each remaining download streamed into its place), then `OUT.sha256`.
//!
//! Invariant: nothing is visible under `--out` until it is whole: a tar is
//! written to `.NAME.partial` and renamed at the end, a directory and
//! volumes through the writer's temporary names.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::sync::Arc;

use llmgw_shared::Sha256;
use llmgw_shared::manifest::{MANIFEST_NAME, Manifest};

use crate::cache::{Cache, Expect};
use crate::error::CreateError;
use crate::fetch::{self, Download, Fetched};
use crate::http::Http;
use crate::pieces::{self, NetBlob};
use crate::progress::Events;
use crate::spec::CreateSpec;
use crate::writer::layout::Layout;
use crate::writer::resume::{Found, Have};
use crate::writer::sink::Keep;
use crate::writer::stream::{Source, Stats, Stream, StreamBlob};
use crate::writer::temp::TempBundle;
use crate::writer::{self, Blob, Format, zst};

use super::Options;

/// What writing the bundle gave: the manifest as written (a resumed run
/// keeps the creation time of the run it continues) and where bytes came from.
pub(super) struct Written {
    pub manifest: Manifest,
    pub downloaded: u64,
    pub reused: u64,
    /// For volumes: the files and the `.sha256` written.
    pub volumes: Option<crate::volumes::Written>,
}

/// What the writing phase works with.
pub(super) struct WriteCtx<'a> {
    pub spec: &'a CreateSpec,
    pub opts: &'a Options,
    pub http: &'a Http,
    pub cache: &'a Cache,
    pub series: &'a crate::series::Series,
}

/// The check a finished bundle passes before it is published.
type Check = Arc<dyn Fn(&Path) -> Result<(), writer::CheckError> + Send + Sync>;

impl WriteCtx<'_> {
    /// [`super::Options::check`] for the bundle whose manifest is `bytes`,
    /// saying on the progress line that it runs.
    fn before_publish(&self, bytes: &[u8]) -> Option<Check> {
        let check = self.opts.check.clone()?;
        let sha = llmgw_shared::BundleId::of(bytes);
        let progress = self.opts.progress.clone();
        Some(Arc::new(move |path: &Path| {
            progress.message("checking the bundle written as bundle import will");
            check.check(path, &sha)
        }))
    }

    /// A directory: every download into the cache, then hard links to it.
    pub(super) async fn dir(
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
        progress.message(&format!("writing {}", self.spec.out.display()));
        let (out, bytes) = (self.spec.out.clone(), manifest.to_canonical_json());
        let sig = self.series.sign(manifest, &bytes)?;
        let check = self.before_publish(&bytes);
        blocking(&self.spec.out, move || {
            writer::write_dir_bundle(&out, &bytes, sig.as_deref(), &blobs, check.as_deref())
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
    /// the manifest is written), then the volumes from there — but those
    /// an earlier run of the same request wrote already.
    pub(super) async fn volumes(
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
                self.opts.source_date_epoch.is_none(),
                &progress,
            )
        })?;
        self.check_volumes(&written)?;
        Ok(Written {
            manifest: written.manifest.clone(),
            downloaded: fetched.iter().map(|f| f.downloaded).sum(),
            reused: fetched.iter().map(Fetched::bytes_reused).sum(),
            volumes: Some(written),
        })
    }

    /// [`super::Options::check`] for a set of volumes: as `bundle verify`
    /// checks them. A refused set is moved aside, each volume to
    /// `NAME.refused`, so nothing that looks like a bundle stays.
    fn check_volumes(&self, written: &crate::volumes::Written) -> Result<(), CreateError> {
        let Some(check) = &self.opts.check else {
            return Ok(());
        };
        self.opts
            .progress
            .message("checking the volumes written as bundle verify will");
        let sha = llmgw_shared::BundleId::of(&written.manifest.to_canonical_json());
        let Err(source) = check.check_volumes(&written.files, &sha) else {
            return Ok(());
        };
        let mut kept = Vec::new();
        for f in written.files.iter().chain([&written.sha256_file]) {
            let mut to = f.as_os_str().to_owned();
            to.push(".refused");
            let to = std::path::PathBuf::from(to);
            std::fs::rename(f, &to).map_err(|e| CreateError::io(&to, e))?;
            kept.push(to);
        }
        Err(CreateError::RefusedAsWritten {
            kept: kept.into_iter().next().unwrap_or_default(),
            source,
        })
    }

    /// A `.tar` or `.tar.zst`: written front to back into `.NAME.partial`,
    /// carrying on from what an earlier run left there, each download
    /// streamed into its place.
    pub(super) async fn tar(
        &self,
        manifest: Manifest,
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

        let (manifest, bytes, salvaged) = self.as_earlier(manifest, old, &temp)?;
        let mtime = self.opts.source_date_epoch.unwrap_or(0);
        let blob_list: Vec<(Sha256, u64)> = manifest.carried_blobs().into_iter().collect();
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
        // Where pieces fetched ahead wait while one before them retries.
        let spool_in = self.cache.root().join("partial");
        let spool = tempfile::Builder::new()
            .prefix("spool-")
            .tempdir_in(&spool_in)
            .map_err(|e| CreateError::io(&spool_in, e))?;
        let pieces = pieces::start(self.http, net, self.spec.jobs, &progress, spool);

        let check = self.before_publish(&bytes);
        let zstd = zst.then_some((self.spec.zstd_level, zst::default_threads()));
        let (cache, out) = (self.cache.clone(), self.spec.out.clone());
        let manifest_end = layout.head_end();
        let stats = blocking(&self.spec.out, move || {
            let run = StreamRun {
                layout,
                found,
                blobs,
                zstd,
                cache,
                progress,
                check,
            };
            stream_into(temp, run, pieces, &out, manifest_end)
        })
        .await;
        if !self.spec.keep_in_cache {
            // Copied out of the old file for this run alone.
            for sha in &salvaged {
                self.cache.forget(sha);
            }
        }
        let stats = stats?;
        Ok(Written {
            manifest,
            downloaded: stats.downloaded,
            reused: stats.reused,
            volumes: None,
        })
    }
}

impl WriteCtx<'_> {
    /// The manifest and its bytes: an earlier run's of the same request
    /// (its creation time kept, so that the manifest, and with it the
    /// layout, is the same) when `old` is that; else the one given, and
    /// what the earlier run left discarded once the blobs this run wants
    /// are copied out of it into the cache (#53 item 5: whatever flags
    /// changed), which are answered.
    fn as_earlier(
        &self,
        manifest: Manifest,
        old: Option<Vec<u8>>,
        temp: &TempBundle,
    ) -> Result<(Manifest, Vec<u8>, Vec<Sha256>), CreateError> {
        let progress = &self.opts.progress;
        let bytes = manifest.to_canonical_json();
        let Some(old) = old else {
            return Ok((manifest, bytes, Vec::new()));
        };
        let mut again = manifest.clone();
        if self.opts.source_date_epoch.is_none()
            && let Ok(o) = Manifest::from_json_bytes(&old)
        {
            again.created = o.created;
        }
        let again_bytes = again.to_canonical_json();
        if again_bytes == old {
            progress.message(&format!(
                "{}: carrying on from what an earlier run wrote",
                temp.path.display()
            ));
            return Ok((again, again_bytes, Vec::new()));
        }
        let wanted = manifest.carried_blobs();
        let salvaged = tokio::task::block_in_place(|| temp.salvage(&wanted, self.cache))?;
        progress.message(&format!(
            "{}: left by a run for other content; {} of it this run wants ({} bytes) kept, \
             the rest started over",
            temp.path.display(),
            llmgw_shared::plural(salvaged.blobs.len(), "blob", "blobs"),
            salvaged.bytes
        ));
        temp.discard()?;
        Ok((manifest, bytes, salvaged.blobs))
    }
}

/// What the stream of a tar bundle is made of.
struct StreamRun {
    layout: Arc<Layout>,
    found: Found,
    blobs: Vec<StreamBlob>,
    zstd: Option<(i32, usize)>,
    cache: Cache,
    progress: Events,
    /// Run on the finished file before it is renamed to `--out`.
    check: Option<Check>,
}

/// Streams every blob into the bundle and puts it in place at `out`; on a
/// failure, keeps what was written (all of it, or the verified part when
/// the bytes were wrong) for the next run to carry on from.
fn stream_into(
    temp: TempBundle,
    run: StreamRun,
    mut pieces: pieces::Pieces,
    out: &Path,
    manifest_end: u64,
) -> Result<Stats, CreateError> {
    let mut sink = temp.sink(run.layout.clone(), &run.found, run.zstd)?;
    let stream = Stream {
        layout: &run.layout,
        blobs: run.blobs,
        cache: &run.cache,
        progress: &run.progress,
        path: &temp.path,
    };
    match stream.run(&mut sink, Some(&mut pieces.rx)) {
        Ok(stats) => {
            drop(pieces);
            sink.finish().map_err(|e| CreateError::io(&temp.path, e))?;
            temp.finish(out, run.check.as_deref())?;
            Ok(stats)
        }
        Err(e) => {
            drop(pieces);
            let keep = match e {
                CreateError::WrongBytes { .. } | CreateError::WrongSize { .. } => Keep::Verified,
                _ => Keep::All,
            };
            let _ = sink.abandon(keep);
            let path = temp.path.clone();
            let len = temp.len();
            if temp.keep_if_longer(manifest_end) {
                run.progress.message(&format!(
                    "kept {} ({len} bytes) for the next run with the same --out to carry on from",
                    path.display()
                ));
            }
            Err(e)
        }
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
        let d = downloads.remove(sha.as_str());
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
            counted: small.contains_key(sha.as_str()),
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

/// `PATH.sha256`: `<hex>  manifest.json`, so `sha256sum -c` checks an
/// extracted manifest and the first token is the bundle's identity.
pub(super) fn write_sha256_file(out: &Path, sha: &str) -> Result<PathBuf, CreateError> {
    let mut name = out.as_os_str().to_os_string();
    name.push(".sha256");
    let path = PathBuf::from(name);
    let tmp = writer::temp_name(&path);
    std::fs::write(&tmp, format!("{sha}  {MANIFEST_NAME}\n"))
        .map_err(|e| CreateError::io(&tmp, e))?;
    std::fs::rename(&tmp, &path).map_err(|e| CreateError::io(&path, e))?;
    Ok(path)
}
