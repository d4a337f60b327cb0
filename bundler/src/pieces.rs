//! Downloads for a tar bundle, delivered in the bundle's own order.
//!
//! A `.tar` or `.tar.zst` is one stream, written front to back exactly
//! once, so its blobs must arrive in hex order. To keep `--jobs`
//! connections busy anyway, each file is cut into [`PIECE`]-sized byte
//! ranges, up to `jobs` of them are fetched at once, and they are handed
//! over in order: the piece at the head streams straight into the bundle.
//! The ones behind it wait — up to `2 × jobs` in memory, the rest, up to
//! [`AHEAD_PER_JOB`] `× jobs` pieces in all, whole in a spool file in the
//! cache's `partial/` — so no more than `2 × jobs × PIECE` bytes wait in
//! memory, whatever the size of a file or of the bundle.
//!
//! Each piece retries on its own (5xx, timeouts, dropped connections; a cut
//! body continues from where it stopped), and lets go of its connection
//! while it waits to retry: the other downloads go on meanwhile (#53
//! item 3), as far as the spool allows. Where a file redirects (the
//! Hub's and GitHub's storage), the target is kept for its next pieces; a
//! target that refuses (a signed URL expired) is dropped and the file's own
//! URL asked again, once. Those decisions are `fetch::step`'s, the same
//! policy [`crate::fetch`] follows; this module makes the requests and
//! hands the bytes on.

use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex};

use bytes::Bytes;
use llmgw_shared::chain;
use reqwest::Url;
use tokio::sync::{OwnedSemaphorePermit, Semaphore, mpsc};
use tokio::task::JoinSet;

use crate::error::CreateError;
use crate::fetch::answered;
use crate::fetch::step::{
    Ending, PieceStep, Rules, State, Stop, Take, Trouble, piece_answer, piece_chunk, retry_or_fail,
    stopped,
};
use crate::http::{Http, HttpError, redact};
use crate::progress::Events;

#[cfg(test)]
#[path = "pieces_tests.rs"]
mod tests;

/// The size of a byte range fetched as one request.
pub const PIECE: u64 = 8 << 20;

/// How many pieces per connection may be started before the head piece is
/// written: how far the downloads go on while one retries.
pub const AHEAD_PER_JOB: usize = 16;

/// One file to fetch into the stream.
#[derive(Debug, Clone)]
pub struct NetBlob {
    /// The blob's index in the bundle's sorted list.
    pub index: usize,
    pub label: String,
    pub url: String,
    pub size: u64,
    /// The first byte still needed (a resumed run has the rest).
    pub from: u64,
    /// What to tell the operator on 401/403 (a Hub file: how to pass a token).
    pub denied_hint: Option<String>,
}

/// What a piece sends along.
pub enum Msg {
    Data(Bytes),
    /// The transfer broke off and will be retried: what arrived should be
    /// on disk, so that a run killed during the retry keeps it.
    Flush,
    /// The whole piece, fetched while the pieces before it were waiting,
    /// in this spool file (removed with the spool when [`Pieces`] drops).
    Spooled(PathBuf),
}

/// Bytes `start..end` of blob `blob`, arriving on `rx`; the channel closes
/// when the piece is complete, or after an error.
pub struct Piece {
    pub blob: usize,
    pub start: u64,
    pub end: u64,
    pub rx: mpsc::UnboundedReceiver<Result<Msg, CreateError>>,
    _slot: OwnedSemaphorePermit,
    /// Held while its bytes may wait in memory (none: it is spooled).
    _memory: Option<OwnedSemaphorePermit>,
}

#[cfg(test)]
impl Piece {
    /// A piece fed by hand.
    pub fn for_test(
        blob: usize,
        start: u64,
        end: u64,
        rx: mpsc::UnboundedReceiver<Result<Msg, CreateError>>,
    ) -> Self {
        let slot = Arc::new(Semaphore::new(1))
            .try_acquire_owned()
            .expect("a fresh semaphore has a permit");
        Self {
            blob,
            start,
            end,
            rx,
            _slot: slot,
            _memory: None,
        }
    }
}

/// The pieces of every blob, in order. Dropping it stops every download
/// and removes the spool.
pub struct Pieces {
    pub rx: mpsc::Receiver<Piece>,
    producer: tokio::task::AbortHandle,
    /// Owned here alone, so it is removed when this drops (a piece still
    /// running then fails to write into it, and nobody hears).
    _spool: tempfile::TempDir,
}

impl Drop for Pieces {
    fn drop(&mut self) {
        self.producer.abort();
    }
}

/// What bounds the downloads: connections at once, pieces started and not
/// yet handed over, pieces whose bytes wait in memory.
#[derive(Clone)]
struct Bounds {
    conns: Arc<Semaphore>,
    ahead: Arc<Semaphore>,
    memory: Arc<Semaphore>,
}

/// Starts fetching `blobs` (in the order given), `jobs` pieces at a time;
/// the pieces that cannot wait in memory wait in `spool`.
pub fn start(
    http: &Http,
    blobs: Vec<NetBlob>,
    jobs: usize,
    progress: &Events,
    spool: tempfile::TempDir,
) -> Pieces {
    let jobs = jobs.max(1);
    let bounds = Bounds {
        conns: Arc::new(Semaphore::new(jobs)),
        ahead: Arc::new(Semaphore::new(jobs * AHEAD_PER_JOB)),
        memory: Arc::new(Semaphore::new(2 * jobs)),
    };
    let (tx, rx) = mpsc::channel(jobs * AHEAD_PER_JOB);
    let dir = spool.path().to_path_buf();
    let (http, progress) = (http.clone(), progress.clone());
    let producer = tokio::spawn(async move {
        // Dropped (the producer aborted) it aborts every piece.
        let mut set = JoinSet::new();
        for b in blobs {
            let b = Arc::new(b);
            let target = Arc::new(Mutex::new(None::<Url>));
            let mut start = b.from;
            while start < b.size {
                let end = (start + PIECE).min(b.size);
                let Ok(slot) = bounds.ahead.clone().acquire_owned().await else {
                    return;
                };
                // Taken here, in order: the pieces of a file ask one after
                // another on one connection, the redirect target stored.
                let Ok(conn) = bounds.conns.clone().acquire_owned().await else {
                    return;
                };
                let memory = bounds.memory.clone().try_acquire_owned().ok();
                let to = memory
                    .is_none()
                    .then(|| dir.join(format!("{}-{start}", b.index)));
                let (ptx, prx) = mpsc::unbounded_channel();
                let job = Job {
                    http: http.clone(),
                    b: b.clone(),
                    target: target.clone(),
                    progress: progress.clone(),
                    conns: bounds.conns.clone(),
                };
                set.spawn(async move { job.run(conn, (start, end), ptx, to).await });
                let piece = Piece {
                    blob: b.index,
                    start,
                    end,
                    rx: prx,
                    _slot: slot,
                    _memory: memory,
                };
                if tx.send(piece).await.is_err() {
                    return;
                }
                while set.try_join_next().is_some() {}
                start = end;
            }
        }
        while set.join_next().await.is_some() {}
    });
    Pieces {
        rx,
        producer: producer.abort_handle(),
        _spool: spool,
    }
}

/// One piece's download.
struct Job {
    http: Http,
    b: Arc<NetBlob>,
    target: Arc<Mutex<Option<Url>>>,
    progress: Events,
    conns: Arc<Semaphore>,
}

impl Job {
    /// Fetches bytes `start..end`: handed on as they arrive, or when `to`
    /// is given, into that spool file and then handed on as one.
    async fn run(
        self,
        conn: OwnedSemaphorePermit,
        (start, end): (u64, u64),
        ptx: mpsc::UnboundedSender<Result<Msg, CreateError>>,
        to: Option<PathBuf>,
    ) {
        let r = match &to {
            None => self.fetch(conn, start, end, &ptx).await,
            Some(path) => self.spooled(conn, start, end, path).await,
        };
        let _ = ptx.send(match (r, to) {
            (Ok(()), Some(path)) => Ok(Msg::Spooled(path)),
            (Ok(()), None) => return,
            (Err(e), _) => Err(crate::fetch::with_advice(&self.b.label, e)),
        });
    }

    /// [`Job::fetch`] into the spool file `path`.
    async fn spooled(
        &self,
        conn: OwnedSemaphorePermit,
        start: u64,
        end: u64,
        path: &Path,
    ) -> Result<(), CreateError> {
        let io = |e| CreateError::io(path, e);
        let mut file = tokio::fs::File::create(path).await.map_err(io)?;
        let (tx, mut rx) = mpsc::unbounded_channel();
        let fetching = async move { self.fetch(conn, start, end, &tx).await };
        let writing = async {
            use tokio::io::AsyncWriteExt;
            while let Some(m) = rx.recv().await {
                if let Ok(Msg::Data(d)) = m {
                    file.write_all(&d).await?;
                }
            }
            file.flush().await
        };
        let (fetched, written) = tokio::join!(fetching, writing);
        fetched?;
        written.map_err(io)
    }

    /// [`fetch`] with this job's parts.
    async fn fetch(
        &self,
        conn: OwnedSemaphorePermit,
        start: u64,
        end: u64,
        tx: &mpsc::UnboundedSender<Result<Msg, CreateError>>,
    ) -> Result<(), CreateError> {
        let p = (&self.http, &*self.b, &*self.target, &self.progress);
        fetch(p, (&self.conns, conn), start, end, tx).await
    }
}

/// Bytes `start..end` of `b`, handed on as they arrive: each turn asks
/// (the stored redirect target when there is one), reads what comes, and
/// either finishes or asks again. What to do is the [`step`] decisions';
/// this loop does it.
async fn fetch(
    (http, b, target, progress): (&Http, &NetBlob, &Mutex<Option<Url>>, &Events),
    (conns, mut conn): (&Arc<Semaphore>, OwnedSemaphorePermit),
    start: u64,
    end: u64,
    tx: &mpsc::UnboundedSender<Result<Msg, CreateError>>,
) -> Result<(), CreateError> {
    let rules = Rules {
        retry: http.retry,
        label: &b.label,
        denied_hint: b.denied_hint.as_deref(),
    };
    let mut s = State {
        offset: start,
        end,
        size: b.size,
        skip: 0,
        attempt: 1,
        asked_again: false,
    };
    while !s.complete() {
        match ask(http, b, target, &rules, tx, &mut s).await {
            Turn::Ended(Ending::Done) => return Ok(()),
            Turn::Ended(Ending::Trouble(Trouble::Fail(e))) => return Err(e),
            Turn::Ended(Ending::Trouble(Trouble::Retry { wait, error })) => {
                progress.message(&format!(
                    "{}: attempt {} failed ({}); retrying",
                    b.label,
                    s.attempt,
                    chain(&error)
                ));
                // Another piece has the connection meanwhile.
                drop(conn);
                tokio::time::sleep(wait).await;
                let Ok(again) = conns.clone().acquire_owned().await else {
                    return Ok(());
                };
                conn = again;
                s.attempt += 1;
            }
            Turn::AskOriginal => {
                if let Ok(mut t) = target.lock() {
                    *t = None;
                }
                s.asked_again = true;
            }
            Turn::NobodyWants => return Ok(()),
        }
    }
    Ok(())
}

/// How one request of a piece ended.
enum Turn {
    Ended(Ending),
    /// The stored redirect target refused: ask the file's own URL.
    AskOriginal,
    /// Nobody wants the bytes any more (the bundle's writer stopped).
    NobodyWants,
}

/// One request of a piece and the reading of its body.
async fn ask(
    http: &Http,
    b: &NetBlob,
    target: &Mutex<Option<Url>>,
    rules: &Rules<'_>,
    tx: &mpsc::UnboundedSender<Result<Msg, CreateError>>,
    s: &mut State,
) -> Turn {
    let stored = target.lock().ok().and_then(|t| t.clone());
    let url = stored.as_ref().map_or(b.url.as_str(), Url::as_str);
    let (mut resp, final_url) = match http.get(url, None, s.range()).await {
        Ok(answer) => answer,
        Err(e) => return Turn::Ended(Ending::Trouble(retry_or_fail(*s, e, rules))),
    };
    s.skip = match piece_answer(*s, answered(&resp, &final_url, stored.is_some()), rules) {
        PieceStep::Read => 0,
        PieceStep::SkipAndRead { skip } => skip,
        PieceStep::AskOriginal => return Turn::AskOriginal,
        PieceStep::Trouble(t) => return Turn::Ended(Ending::Trouble(t)),
    };
    // The file redirects: its next pieces go straight to the target.
    if stored.is_none()
        && final_url.as_str() != b.url
        && let Ok(mut t) = target.lock()
    {
        *t = Some(final_url.clone());
    }
    let stop = loop {
        match resp.chunk().await {
            Ok(Some(c)) => {
                let Take { skip, keep, last } = piece_chunk(*s, c.len() as u64);
                s.skip -= skip;
                s.offset += keep;
                let (skip, keep) = (skip as usize, keep as usize);
                if keep > 0 && tx.send(Ok(Msg::Data(c.slice(skip..skip + keep)))).is_err() {
                    return Turn::NobodyWants;
                }
                if last {
                    return Turn::Ended(Ending::Done);
                }
            }
            Ok(None) => {
                break Stop::Ended {
                    url: redact(&final_url),
                };
            }
            Err(e) => break Stop::Failed(HttpError::transport(&final_url, e)),
        }
    };
    // The body broke off: what arrived is flushed first.
    let _ = tx.send(Ok(Msg::Flush));
    Turn::Ended(stopped(*s, stop, rules))
}
