//! Downloads for a tar bundle, delivered in the bundle's own order.
//!
//! A `.tar` or `.tar.zst` is one stream, written front to back exactly
//! once, so its blobs must arrive in hex order. To keep `--jobs`
//! connections busy anyway, each file is cut into [`PIECE`]-sized byte
//! ranges, up to `jobs` of them are fetched at once, and they are handed
//! over in order: the piece at the head streams straight into the bundle,
//! the ones behind it wait in memory. A piece holds its slot until it has
//! been handed over, so no more than `jobs` × [`PIECE`] bytes wait, whatever
//! the size of a file or of the bundle.
//!
//! Each piece retries on its own (5xx, timeouts, dropped connections; a cut
//! body continues from where it stopped), and where a file redirects (the
//! Hub's and GitHub's storage), the target is kept for its next pieces; a
//! target that refuses (a signed URL expired) is dropped and the file's own
//! URL asked again, once. Those decisions are `fetch::step`'s, the same
//! policy [`crate::fetch`] follows; this module makes the requests and
//! hands the bytes on.

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

/// The size of a byte range fetched as one request.
pub const PIECE: u64 = 8 << 20;

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
}

/// Bytes `start..end` of blob `blob`, arriving on `rx`; the channel closes
/// when the piece is complete, or after an error.
pub struct Piece {
    pub blob: usize,
    pub start: u64,
    pub end: u64,
    pub rx: mpsc::UnboundedReceiver<Result<Msg, CreateError>>,
    _slot: OwnedSemaphorePermit,
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
        }
    }
}

/// The pieces of every blob, in order. Dropping it stops every download.
pub struct Pieces {
    pub rx: mpsc::Receiver<Piece>,
    producer: tokio::task::AbortHandle,
}

impl Drop for Pieces {
    fn drop(&mut self) {
        self.producer.abort();
    }
}

/// Starts fetching `blobs` (in the order given), `jobs` pieces at a time.
pub fn start(http: &Http, blobs: Vec<NetBlob>, jobs: usize, progress: &Events) -> Pieces {
    let jobs = jobs.max(1);
    let (tx, rx) = mpsc::channel(jobs);
    let (http, progress) = (http.clone(), progress.clone());
    let producer = tokio::spawn(async move {
        let slots = Arc::new(Semaphore::new(jobs));
        // Dropped (the producer aborted) it aborts every piece.
        let mut set = JoinSet::new();
        for b in blobs {
            let b = Arc::new(b);
            let target = Arc::new(Mutex::new(None::<Url>));
            let mut start = b.from;
            while start < b.size {
                let end = (start + PIECE).min(b.size);
                let Ok(slot) = slots.clone().acquire_owned().await else {
                    return;
                };
                let (ptx, prx) = mpsc::unbounded_channel();
                let job = (http.clone(), b.clone(), target.clone(), progress.clone());
                set.spawn(async move {
                    let (http, b, target, progress) = job;
                    if let Err(e) = fetch(&http, &b, &target, start, end, &ptx, &progress).await {
                        let _ = ptx.send(Err(crate::fetch::with_advice(&b.label, e)));
                    }
                });
                let piece = Piece {
                    blob: b.index,
                    start,
                    end,
                    rx: prx,
                    _slot: slot,
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
    }
}

/// Bytes `start..end` of `b`, handed on as they arrive: each turn asks
/// (the stored redirect target when there is one), reads what comes, and
/// either finishes or asks again. What to do is the [`step`] decisions';
/// this loop does it.
async fn fetch(
    http: &Http,
    b: &NetBlob,
    target: &Mutex<Option<Url>>,
    start: u64,
    end: u64,
    tx: &mpsc::UnboundedSender<Result<Msg, CreateError>>,
    progress: &Events,
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
                tokio::time::sleep(wait).await;
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
