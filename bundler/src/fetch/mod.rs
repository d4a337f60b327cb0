//! Verified downloads into the cache: hashed while the bytes stream in (one
//! pass), resumed with `Range` when a body is cut off, retried with backoff
//! on 5xx, timeouts and dropped connections, and continued from the
//! partial file a killed run left behind.
//!
//! The network side and the disk side run apart: an async task reads the
//! body and hands chunks over a bounded channel to a thread that hashes and
//! writes them, so hashing overlaps the transfer and memory stays at a few
//! chunks per download whatever the file's size.

use std::fs::{self, OpenOptions};
use std::io::{self, BufWriter, Read, Seek, SeekFrom, Write};
use std::path::PathBuf;

use bytes::Bytes;
use futures_util::StreamExt;
use llmgw_shared::{HashReader, Sha256, StreamDigest, StreamHasher, chain};
use tokio::sync::mpsc;

use crate::cache::{Cache, Expect};
use crate::error::CreateError;
use crate::http::{Http, HttpError, redact};
use crate::progress::Progress;

pub(crate) mod step;

use step::{Event, Held, Rules, State, Step, next_step};

/// Chunks in flight between the network and the disk, per download.
const CHANNEL_CHUNKS: usize = 16;
/// The disk side's write buffer.
const WRITE_BUFFER: usize = 1 << 20;

/// One file to fetch.
#[derive(Debug, Clone)]
pub struct Download {
    /// What it is, for messages: `ggml-org/llama.cpp b6123 llama-….tar.gz`.
    pub label: String,
    pub url: String,
    /// The size the publisher listed.
    pub size: u64,
    pub expect: Expect,
    /// What to tell the operator when the server refuses access (401/403):
    /// for a Hub file, how to give a token.
    pub denied_hint: Option<String>,
}

/// A download done (or found in the cache).
#[derive(Debug, Clone)]
pub struct Fetched {
    pub sha256: Sha256,
    pub size: u64,
    pub path: PathBuf,
    /// Bytes that came over the network in this run.
    pub downloaded: u64,
    /// Whether the whole file came from an earlier run's cache.
    pub reused: bool,
}

impl Fetched {
    /// Bytes that did not come over the network in this run: the whole
    /// file from the cache, or what an earlier run had written of it.
    pub fn bytes_reused(&self) -> u64 {
        if self.reused {
            self.size
        } else {
            self.size.saturating_sub(self.downloaded)
        }
    }
}

/// Fetches every download, `jobs` at a time; the results come back in the
/// order given. The first failure stops the rest (their partial files stay
/// in the cache for the next run).
pub async fn fetch_all(
    http: &Http,
    cache: &Cache,
    downloads: Vec<Download>,
    jobs: usize,
    progress: &Progress,
) -> Result<Vec<Fetched>, CreateError> {
    let results = futures_util::stream::iter(downloads.into_iter().enumerate())
        .map(|(i, d)| async move { (i, fetch_one(http, cache, &d, progress).await) })
        .buffer_unordered(jobs.max(1));
    futures_util::pin_mut!(results);
    let mut out: Vec<Option<Fetched>> = Vec::new();
    while let Some((i, r)) = results.next().await {
        let f = r?;
        if out.len() <= i {
            out.resize(i + 1, None);
        }
        out[i] = Some(f);
    }
    Ok(out.into_iter().flatten().collect())
}

/// What the disk side is told.
enum Msg {
    Data(Bytes),
    /// The server ignored the Range and sends the whole file again.
    Restart,
    /// The transfer broke off: put what arrived on disk, so that a run
    /// killed during the retry leaves it for the next run to resume.
    Flush,
}

/// Fetches one file into the cache, or finds it there.
pub async fn fetch_one(
    http: &Http,
    cache: &Cache,
    d: &Download,
    progress: &Progress,
) -> Result<Fetched, CreateError> {
    let (cache2, expect, size) = (cache.clone(), d.expect.clone(), d.size);
    let reused = tokio::task::spawn_blocking(move || cache2.reuse(&expect, size))
        .await
        .map_err(|e| CreateError::io(cache.root(), io::Error::other(e)))?
        .map_err(|e| CreateError::io(cache.root(), e))?;
    if let Some((sha256, path)) = reused {
        progress.file_line(&format!("{}: in the cache ({} bytes)", d.label, d.size));
        progress.add_done(d.size);
        return Ok(Fetched {
            sha256,
            size: d.size,
            path,
            downloaded: 0,
            reused: true,
        });
    }

    let partial = cache.partial_path(&d.expect);
    let item = progress.item(&d.label, d.size);
    // The disk side: opens the partial file, hashes what an earlier run
    // left in it, then appends what arrives.
    let (tx, rx) = mpsc::channel::<Msg>(CHANNEL_CHUNKS);
    let git = matches!(d.expect, Expect::GitBlobSha1(_));
    let (path2, size) = (partial.clone(), d.size);
    let (start_tx, start_rx) = tokio::sync::oneshot::channel::<u64>();
    let sink = tokio::task::spawn_blocking(move || sink(path2, size, git, start_tx, rx));
    let mut offset = match start_rx.await {
        Ok(o) => o,
        // The disk side failed before it started: its error says why.
        Err(_) => {
            return Err(join_sink(sink, &partial).await.err().unwrap_or_else(|| {
                CreateError::io(&partial, io::Error::other("the writer stopped"))
            }));
        }
    };
    if offset > 0 {
        item.resumed(offset);
    }

    let mut downloaded = 0u64;
    let mut attempt = 1u32;
    let rules = Rules {
        retry: http.retry,
        held: Held::OnDisk,
        label: &d.label,
        denied_hint: d.denied_hint.as_deref(),
    };
    let state = |offset, attempt| State {
        offset,
        end: d.size,
        size: d.size,
        skip: 0,
        attempt,
        asked_again: false,
    };
    // Each turn is one attempt: ask, read what comes, and either finish or
    // wait for the next. What to do is `next_step`'s; this loop does it.
    let result: Result<(), CreateError> = 'attempts: loop {
        match next_step(state(offset, attempt), Event::Ready, &rules) {
            Step::Done => break Ok(()),
            Step::Fail(e) => break Err(e),
            _ => {}
        }
        let range = state(offset, attempt).range();
        let (mut resp, event) = match http.get(&d.url, None, range).await {
            Ok((resp, final_url)) => {
                let event = answered(&resp, &final_url, false);
                (Some((resp, final_url)), event)
            }
            Err(e) => (None, Event::RequestFailed(e)),
        };
        let mut step = next_step(state(offset, attempt), event, &rules);
        if matches!(step, Step::RestartAndRead | Step::RestartAndAsk) {
            if tx.send(Msg::Restart).await.is_err() {
                // The disk side stopped; its error is reported below.
                break Ok(());
            }
            if matches!(step, Step::RestartAndRead) {
                item.restarted();
            }
            offset = 0;
            if matches!(step, Step::RestartAndAsk) {
                continue;
            }
            step = Step::Read;
        }
        if let (Step::Read, Some((resp, final_url))) = (&step, resp.as_mut()) {
            step = loop {
                let event = match resp.chunk().await {
                    Ok(Some(chunk)) => {
                        let n = chunk.len() as u64;
                        // Nothing to skip or cut here: the bytes are the
                        // whole chunk, or a failure.
                        match next_step(state(offset, attempt), Event::Chunk(n), &rules) {
                            Step::Take { .. } => {}
                            other => break other,
                        }
                        offset += n;
                        downloaded += n;
                        item.inc(n);
                        if tx.send(Msg::Data(chunk)).await.is_err() {
                            // The disk side stopped; its error is reported below.
                            break 'attempts Ok(());
                        }
                        continue;
                    }
                    Ok(None) => Event::BodyEnded {
                        url: redact(final_url),
                    },
                    Err(e) => Event::BodyFailed(HttpError::transport(final_url, e)),
                };
                break next_step(state(offset, attempt), event, &rules);
            };
        }
        match step {
            Step::Done => break Ok(()),
            Step::Fail(e) => break Err(e),
            Step::Retry { wait, error } => {
                item.retry(attempt, &chain(&error));
                // What arrived goes to disk, so that a run killed during
                // the wait leaves it for the next run to resume.
                let _ = tx.send(Msg::Flush).await;
                tokio::time::sleep(wait).await;
                attempt += 1;
            }
            // Read, Take, Ask and the restarts were done above.
            other => {
                break Err(CreateError::io(
                    &partial,
                    io::Error::other(format!("a download stopped at step {other:?} (a bug)")),
                ));
            }
        }
    };
    drop(tx);
    let digest = join_sink(sink, &partial).await;
    if let Err(e) = result {
        item.failed();
        return Err(e);
    }
    let digest = digest?;
    if digest.len != d.size {
        let _ = fs::remove_file(&partial);
        item.failed();
        return Err(CreateError::WrongSize {
            what: d.label.clone(),
            expected: d.size,
            actual: digest.len,
        });
    }
    let (ok, actual) = match &d.expect {
        Expect::Sha256(h) => (&digest.sha256 == h, digest.sha256.to_string()),
        Expect::GitBlobSha1(g) => {
            let a = digest.git_blob_sha1.as_ref();
            (a == Some(g), a.map(ToString::to_string).unwrap_or_default())
        }
    };
    if !ok {
        let _ = fs::remove_file(&partial);
        item.failed();
        return Err(CreateError::WrongBytes {
            what: d.label.clone(),
            algorithm: d.expect.algorithm(),
            expected: d.expect.key().to_string(),
            actual,
        });
    }
    let (cache2, sha, expect, p) = (
        cache.clone(),
        digest.sha256.clone(),
        d.expect.clone(),
        partial.clone(),
    );
    let path = tokio::task::spawn_blocking(move || cache2.commit(&p, &sha, &expect))
        .await
        .map_err(|e| CreateError::io(&partial, io::Error::other(e)))?
        .map_err(|e| CreateError::io(&partial, e))?;
    item.done();
    Ok(Fetched {
        sha256: digest.sha256,
        size: d.size,
        path,
        downloaded,
        reused: false,
    })
}

async fn join_sink(
    sink: tokio::task::JoinHandle<io::Result<StreamDigest>>,
    partial: &PathBuf,
) -> Result<StreamDigest, CreateError> {
    sink.await
        .map_err(|e| CreateError::io(partial, io::Error::other(e)))?
        .map_err(|e| CreateError::io(partial, e))
}

/// The disk side of one download. Reports the offset to resume from, then
/// hashes and writes every chunk until the network side hangs up.
fn sink(
    path: PathBuf,
    size: u64,
    git: bool,
    start: tokio::sync::oneshot::Sender<u64>,
    mut rx: mpsc::Receiver<Msg>,
) -> io::Result<StreamDigest> {
    let new_hasher = || {
        if git {
            StreamHasher::with_git_blob(size)
        } else {
            StreamHasher::sha256()
        }
    };
    let mut file = OpenOptions::new()
        .read(true)
        .write(true)
        .create(true)
        .truncate(false)
        .open(&path)?;
    let mut have = file.metadata()?.len();
    if have > size {
        file.set_len(0)?;
        have = 0;
    }
    // Bytes a killed run left: hash them (they are not trusted until the
    // whole file's hash matches) and carry on after them.
    let mut prefix = HashReader::new((&mut file).take(have), new_hasher());
    prefix.drain()?;
    let mut hasher = prefix.into_hasher();
    file.seek(SeekFrom::Start(have))?;
    let _ = start.send(have);
    let mut out = BufWriter::with_capacity(WRITE_BUFFER, file);
    while let Some(msg) = rx.blocking_recv() {
        match msg {
            Msg::Data(b) => {
                hasher.update(&b);
                out.write_all(&b)?;
            }
            Msg::Flush => out.flush()?,
            Msg::Restart => {
                out.flush()?;
                let f = out.get_mut();
                f.set_len(0)?;
                f.seek(SeekFrom::Start(0))?;
                hasher = new_hasher();
            }
        }
    }
    out.flush()?;
    Ok(hasher.finalize())
}

/// What an answer says, for [`next_step`]; `via_stored`: the request went
/// to a redirect target kept from an earlier answer.
pub(crate) fn answered(
    resp: &reqwest::Response,
    final_url: &reqwest::Url,
    via_stored: bool,
) -> Event {
    Event::Answered {
        status: resp.status(),
        range_start: content_range_start(resp.headers()),
        error_code: resp
            .headers()
            .get("x-error-code")
            .and_then(|v| v.to_str().ok())
            .map(str::to_string),
        url: redact(final_url),
        via_stored,
    }
}

fn content_range_start(h: &reqwest::header::HeaderMap) -> Option<u64> {
    let v = h.get(reqwest::header::CONTENT_RANGE)?.to_str().ok()?;
    let rest = v.trim().strip_prefix("bytes ")?;
    rest.split('-').next()?.trim().parse().ok()
}
