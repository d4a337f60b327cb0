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
use crate::progress::{Events, Item};

#[cfg(test)]
mod resume_tests;
pub(crate) mod step;

use step::{
    Answer, Ending, FileStep, Rules, State, Stop, Trouble, file_answer, file_chunk, retry_or_fail,
    stopped,
};

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
    progress: &Events,
) -> Result<Vec<Fetched>, CreateError> {
    let results = futures_util::stream::iter(downloads.into_iter().enumerate())
        .map(|(i, d)| async move {
            let r = fetch_one(http, cache, &d, progress).await;
            (i, r.map_err(|e| with_advice(&d.label, e)))
        })
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

/// A download's failure, with the flags that get past it where the
/// download is optional: a runtime extra can come from a copy
/// (`--extras-base`) or be left out (`--no-extras`) (#53 item 1).
pub fn with_advice(label: &str, e: CreateError) -> CreateError {
    let Some((host, _)) = llmgw_shared::manifest::extra_gap_file(label) else {
        return e;
    };
    if matches!(e, CreateError::Part { .. }) {
        return e;
    }
    CreateError::Part {
        part: label.to_string(),
        advice: format!(
            "pass --extras-base {host}=URL to fetch it from a copy, or --no-extras to leave the \
             runtime extras out as gaps"
        ),
        error: Box::new(e),
    }
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

/// Fetches one file into the cache, or finds it there: the partial file
/// opened (and what an earlier run left in it hashed), the bytes
/// transferred, then checked and committed.
pub async fn fetch_one(
    http: &Http,
    cache: &Cache,
    d: &Download,
    progress: &Events,
) -> Result<Fetched, CreateError> {
    if let Some(f) = in_cache(cache, d, progress).await? {
        return Ok(f);
    }
    match download(http, cache, d, progress).await? {
        Outcome::Done(f) => Ok(f),
        // An earlier run's bytes (another base URL, a run that failed on
        // other bytes) were wrong: not the file's fault; once more whole.
        Outcome::ResumedWrong(e) => {
            progress.message(&format!(
                "{}: the bytes an earlier run left do not match ({}); fetching it whole again",
                d.label,
                llmgw_shared::Chain(&e)
            ));
            match download(http, cache, d, progress).await? {
                Outcome::Done(f) => Ok(f),
                Outcome::ResumedWrong(e) => Err(e),
            }
        }
    }
}

/// How a download into the cache ended, when its transfer did.
enum Outcome {
    Done(Fetched),
    /// It carried on from an earlier run's partial file and the whole did
    /// not match: the partial file is removed.
    ResumedWrong(CreateError),
}

/// The file into the cache, carried on from an earlier run's partial file
/// when there is one, and checked.
async fn download(
    http: &Http,
    cache: &Cache,
    d: &Download,
    progress: &Events,
) -> Result<Outcome, CreateError> {
    let partial = cache.partial_path(&d.expect);
    let item = Item::start(progress, &d.label, d.size);
    let (tx, sink, offset) = open_partial(&partial, d).await?;
    if offset > 0 {
        item.resumed(offset);
    }
    let result = transfer(http, d, &tx, &item, offset).await;
    drop(tx);
    let digest = join_sink(sink, &partial).await;
    let downloaded = match result {
        Ok(n) => n,
        Err(e) => {
            item.failed();
            return Err(e);
        }
    };
    let digest = digest?;
    if let Err(e) = check(d, &digest) {
        let _ = fs::remove_file(&partial);
        item.failed();
        if offset > 0 {
            return Ok(Outcome::ResumedWrong(e));
        }
        return Err(e);
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
    Ok(Outcome::Done(Fetched {
        sha256: digest.sha256,
        size: d.size,
        path,
        downloaded,
        reused: false,
    }))
}

/// The file as an earlier run left it in the cache, when it is there whole.
async fn in_cache(
    cache: &Cache,
    d: &Download,
    progress: &Events,
) -> Result<Option<Fetched>, CreateError> {
    let (cache2, expect, size) = (cache.clone(), d.expect.clone(), d.size);
    let reused = tokio::task::spawn_blocking(move || cache2.reuse(&expect, size))
        .await
        .map_err(|e| CreateError::io(cache.root(), io::Error::other(e)))?
        .map_err(|e| CreateError::io(cache.root(), e))?;
    let Some((sha256, path)) = reused else {
        return Ok(None);
    };
    progress.file_message(&format!("{}: in the cache ({} bytes)", d.label, d.size));
    crate::progress::found(progress.as_ref(), d.size);
    Ok(Some(Fetched {
        sha256,
        size: d.size,
        path,
        downloaded: 0,
        reused: true,
    }))
}

type Sink = tokio::task::JoinHandle<io::Result<StreamDigest>>;

/// Starts the disk side: it opens the partial file, hashes what an earlier
/// run left in it, then appends what arrives on the channel. Answers the
/// offset to resume from.
async fn open_partial(
    partial: &PathBuf,
    d: &Download,
) -> Result<(mpsc::Sender<Msg>, Sink, u64), CreateError> {
    let (tx, rx) = mpsc::channel::<Msg>(CHANNEL_CHUNKS);
    let git = matches!(d.expect, Expect::GitBlobSha1(_));
    let (path2, size) = (partial.clone(), d.size);
    let (start_tx, start_rx) = tokio::sync::oneshot::channel::<u64>();
    let sink = tokio::task::spawn_blocking(move || sink(path2, size, git, start_tx, rx));
    match start_rx.await {
        Ok(offset) => Ok((tx, sink, offset)),
        // The disk side failed before it started: its error says why.
        Err(_) => Err(join_sink(sink, partial)
            .await
            .err()
            .unwrap_or_else(|| CreateError::io(partial, io::Error::other("the writer stopped")))),
    }
}

/// Where a transfer stands between attempts.
struct Progressed {
    offset: u64,
    downloaded: u64,
    attempt: u32,
}

impl Progressed {
    fn state(&self, d: &Download) -> State {
        State {
            offset: self.offset,
            end: d.size,
            size: d.size,
            skip: 0,
            attempt: self.attempt,
            asked_again: false,
        }
    }
}

/// How one attempt of a transfer ended.
enum Attempt {
    Ended(Ending),
    /// What was held was dropped: ask again at once.
    AskAgain,
    /// The disk side stopped; its error is reported when it is joined.
    DiskStopped,
}

/// The attempts of one download, from `offset`: each asks, reads what
/// comes, and either finishes or waits for the next. What to do is
/// [`step`]'s; this loop does it. Answers the bytes that came over the
/// network.
async fn transfer(
    http: &Http,
    d: &Download,
    tx: &mpsc::Sender<Msg>,
    item: &Item,
    offset: u64,
) -> Result<u64, CreateError> {
    let rules = Rules {
        retry: http.retry,
        label: &d.label,
        denied_hint: d.denied_hint.as_deref(),
    };
    let mut at = Progressed {
        offset,
        downloaded: 0,
        attempt: 1,
    };
    loop {
        if at.state(d).complete() {
            return Ok(at.downloaded);
        }
        match attempt(http, d, &rules, tx, item, &mut at).await {
            Attempt::Ended(Ending::Done) | Attempt::DiskStopped => return Ok(at.downloaded),
            Attempt::Ended(Ending::Trouble(Trouble::Fail(e))) => return Err(e),
            Attempt::Ended(Ending::Trouble(Trouble::Retry { wait, error })) => {
                item.retry(at.attempt, &chain(&error));
                // What arrived goes to disk, so that a run killed during
                // the wait leaves it for the next run to resume.
                let _ = tx.send(Msg::Flush).await;
                tokio::time::sleep(wait).await;
                at.attempt += 1;
            }
            Attempt::AskAgain => {}
        }
    }
}

/// One request of a download and the reading of its body.
async fn attempt(
    http: &Http,
    d: &Download,
    rules: &Rules<'_>,
    tx: &mpsc::Sender<Msg>,
    item: &Item,
    at: &mut Progressed,
) -> Attempt {
    let (mut resp, final_url) = match http.get(&d.url, None, at.state(d).range()).await {
        Ok(answer) => answer,
        Err(e) => {
            return Attempt::Ended(Ending::Trouble(retry_or_fail(at.state(d), e, rules)));
        }
    };
    match file_answer(at.state(d), answered(&resp, &final_url, false), rules) {
        FileStep::Read => {}
        FileStep::Trouble(t) => return Attempt::Ended(Ending::Trouble(t)),
        FileStep::RestartAndRead | FileStep::RestartAndAsk
            if tx.send(Msg::Restart).await.is_err() =>
        {
            return Attempt::DiskStopped;
        }
        FileStep::RestartAndRead => {
            item.restarted();
            at.offset = 0;
        }
        FileStep::RestartAndAsk => {
            at.offset = 0;
            return Attempt::AskAgain;
        }
    }
    loop {
        let stop = match resp.chunk().await {
            Ok(Some(chunk)) => {
                let n = chunk.len() as u64;
                if let Err(e) = file_chunk(at.state(d), n, rules) {
                    return Attempt::Ended(Ending::Trouble(Trouble::Fail(e)));
                }
                at.offset += n;
                at.downloaded += n;
                item.inc(n);
                if tx.send(Msg::Data(chunk)).await.is_err() {
                    return Attempt::DiskStopped;
                }
                continue;
            }
            Ok(None) => Stop::Ended {
                url: redact(&final_url),
            },
            Err(e) => Stop::Failed(HttpError::transport(&final_url, e)),
        };
        return Attempt::Ended(stopped(at.state(d), stop, rules));
    }
}

/// Whether the bytes are the ones expected: the size, then the digest.
fn check(d: &Download, digest: &StreamDigest) -> Result<(), CreateError> {
    if digest.len != d.size {
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
        return Err(CreateError::WrongBytes {
            what: d.label.clone(),
            algorithm: d.expect.algorithm(),
            expected: d.expect.key().to_string(),
            actual,
        });
    }
    Ok(())
}

async fn join_sink(sink: Sink, partial: &PathBuf) -> Result<StreamDigest, CreateError> {
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

/// What an answer says, for the [`step`] decisions; `via_stored`: the
/// request went to a redirect target kept from an earlier answer.
pub(crate) fn answered(
    resp: &reqwest::Response,
    final_url: &reqwest::Url,
    via_stored: bool,
) -> Answer {
    Answer {
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
