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
//! target that stops answering (a signed URL expired) is dropped and the
//! file's own URL asked again.

use std::sync::{Arc, Mutex};

use bytes::Bytes;
use llmgw_shared::chain;
use reqwest::{StatusCode, Url};
use tokio::sync::{OwnedSemaphorePermit, Semaphore, mpsc};
use tokio::task::JoinSet;

use crate::error::CreateError;
use crate::fetch::content_range_start;
use crate::http::{Http, HttpError, redact};
use crate::progress::Progress;

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
pub fn start(http: &Http, blobs: Vec<NetBlob>, jobs: usize, progress: &Progress) -> Pieces {
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
                        let _ = ptx.send(Err(e));
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

/// The Range to ask for: none for a whole file (a plain GET, as curl
/// sends), open-ended for a file's last piece, else bounded.
fn range(at: u64, end: u64, size: u64) -> Option<(u64, Option<u64>)> {
    match (at, end == size) {
        (0, true) => None,
        (_, true) => Some((at, None)),
        _ => Some((at, Some(end - 1))),
    }
}

async fn fetch(
    http: &Http,
    b: &NetBlob,
    target: &Mutex<Option<Url>>,
    start: u64,
    end: u64,
    tx: &mpsc::UnboundedSender<Result<Msg, CreateError>>,
    progress: &Progress,
) -> Result<(), CreateError> {
    let mut at = start;
    let mut attempt = 1u32;
    let mut asked_again = false;
    // Sleeps before the next attempt, or answers with the error when it is
    // not worth another.
    let retry = |e: HttpError, attempt: &mut u32| {
        if e.is_retryable() && *attempt < http.retry.attempts {
            progress.line(&format!(
                "{}: attempt {attempt} failed ({}); retrying",
                b.label,
                chain(&e)
            ));
            let wait = http.retry.backoff(*attempt);
            *attempt += 1;
            Ok(wait)
        } else {
            Err(CreateError::Http(e.tried(*attempt)))
        }
    };
    while at < end {
        let stored = target.lock().ok().and_then(|t| t.clone());
        let url = stored.as_ref().map_or(b.url.as_str(), Url::as_str);
        let (mut resp, final_url) = match http.get(url, None, range(at, end, b.size)).await {
            Ok(r) => r,
            Err(e) => {
                tokio::time::sleep(retry(e, &mut attempt)?).await;
                continue;
            }
        };
        let status = resp.status();
        // Bytes to throw away first: a server that ignores Range sends the
        // file from its start.
        let mut skip = 0u64;
        if status == StatusCode::PARTIAL_CONTENT {
            let got = content_range_start(resp.headers());
            if got != Some(at) {
                return Err(CreateError::Http(HttpError::Protocol {
                    url: redact(&final_url),
                    detail: format!(
                        "asked for bytes from {at} on, the server sent a range starting at {}",
                        got.map_or("an unreadable place".to_string(), |s| s.to_string())
                    ),
                }));
            }
        } else if status == StatusCode::OK {
            skip = at;
        } else if stored.is_some() && status.is_client_error() && !asked_again {
            // The stored redirect target expired: ask the file's URL again.
            if let Ok(mut t) = target.lock() {
                *t = None;
            }
            asked_again = true;
            continue;
        } else if status == StatusCode::RANGE_NOT_SATISFIABLE {
            return Err(CreateError::Http(HttpError::Protocol {
                url: redact(&final_url),
                detail: format!(
                    "{}: asked for bytes from {at} on of the {} its publisher listed; the \
                     server has fewer (416)",
                    b.label, b.size
                ),
            }));
        } else if let (Some(hint), 401 | 403) = (&b.denied_hint, status.as_u16()) {
            return Err(CreateError::Hub(format!(
                "{}: {} answered {status}; {hint}",
                b.label,
                redact(&final_url)
            )));
        } else {
            let e = HttpError::Status {
                url: redact(&final_url),
                status: status.as_u16(),
                error_code: resp
                    .headers()
                    .get("x-error-code")
                    .and_then(|v| v.to_str().ok())
                    .map(str::to_string),
                message: None,
            };
            tokio::time::sleep(retry(e, &mut attempt)?).await;
            continue;
        }
        if stored.is_none()
            && final_url.as_str() != b.url
            && let Ok(mut t) = target.lock()
        {
            *t = Some(final_url.clone());
        }
        let broke = loop {
            match resp.chunk().await {
                Ok(Some(mut c)) => {
                    if skip > 0 {
                        let k = (skip as usize).min(c.len());
                        c = c.slice(k..);
                        skip -= k as u64;
                    }
                    c.truncate(c.len().min((end - at) as usize));
                    if c.is_empty() {
                        continue;
                    }
                    at += c.len() as u64;
                    if tx.send(Ok(Msg::Data(c))).is_err() {
                        // Nobody wants the bytes any more.
                        return Ok(());
                    }
                    if at == end {
                        break None;
                    }
                }
                Ok(None) => {
                    break Some(HttpError::Transport {
                        url: redact(&final_url),
                        detail: format!("the body ended after {at} of {} bytes", b.size),
                        retryable: true,
                    });
                }
                Err(e) => break Some(HttpError::transport(&final_url, &e)),
            }
        };
        if let Some(e) = broke {
            let _ = tx.send(Ok(Msg::Flush));
            tokio::time::sleep(retry(e, &mut attempt)?).await;
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ranges_asked_for() {
        assert_eq!(range(0, 10, 10), None);
        assert_eq!(range(4, 10, 10), Some((4, None)));
        assert_eq!(range(0, 4, 10), Some((0, Some(3))));
        assert_eq!(range(4, 8, 10), Some((4, Some(7))));
    }
}
