//! The decisions of one download, apart from its I/O: given where the
//! download stands and what just happened, what to do next.
//!
//! Two drivers make the requests, wait and hand the bytes on:
//! [`super::fetch_one`] (a whole file into the cache) and
//! [`crate::pieces`] (a byte range of a file into a tar bundle's stream).
//! Every choice either makes (which range to ask for, resume or start over,
//! skip, read, retry, ask the file's own URL again, give up and with which
//! error) is made here by pure functions, one per thing that happens
//! (an answer, a chunk, a body's stop, a failed request), tested by the
//! tables in `tests.rs`: there is one retry, redirect and backoff policy in
//! the bundler, not one per driver.
//!
//! Invariant: each function answers with only the steps its driver can
//! take there — an answer to a file in the cache never says "skip" and a
//! piece's never says "restart" — so a driver has no arm for a step it
//! cannot get.

use std::time::Duration;

use reqwest::StatusCode;

use crate::error::{CreateError, HubError};
use crate::http::{CutShort, HttpError, RetryPolicy};

#[cfg(test)]
mod tables;
#[cfg(test)]
mod tests;

/// Where a download stands.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct State {
    /// The next byte wanted: the bytes before it are held (on disk, or
    /// handed on).
    pub offset: u64,
    /// Where this download stops: the file's size, or the end of a piece.
    pub end: u64,
    /// The size its publisher listed.
    pub size: u64,
    /// Bytes at the front of the body being read to throw away: a server
    /// that ignored the Range sends the bytes before `offset` again.
    pub skip: u64,
    /// The attempt under way, from 1.
    pub attempt: u32,
    /// Whether the one ask of the file's own URL, after its stored
    /// redirect target refused, has been spent.
    pub asked_again: bool,
}

impl State {
    /// The Range to ask for: none for a whole file from its start (a plain
    /// GET, as curl sends), open-ended up to the file's end, else bounded.
    pub fn range(&self) -> Option<(u64, Option<u64>)> {
        match (self.offset, self.end == self.size) {
            (0, true) => None,
            (at, true) => Some((at, None)),
            (at, false) => Some((at, Some(self.end.saturating_sub(1)))),
        }
    }

    /// Whether every byte of the download is held: nothing to ask for.
    pub fn complete(&self) -> bool {
        self.offset >= self.end
    }
}

/// An answer to a request, as the decisions need it.
#[derive(Debug)]
pub(crate) struct Answer {
    pub status: StatusCode,
    /// Where a 206's `Content-Range` starts, when it can be read.
    pub range_start: Option<u64>,
    /// The Hub's `X-Error-Code`, when it sent one.
    pub error_code: Option<String>,
    /// Where it came from (redacted).
    pub url: String,
    /// Whether the request went to a redirect target kept from an earlier
    /// answer rather than to the file's own URL.
    pub via_stored: bool,
}

/// How a body being read stopped before every byte wanted was taken.
#[derive(Debug)]
pub(crate) enum Stop {
    /// It ended, from `url` (redacted).
    Ended { url: String },
    /// It broke off.
    Failed(HttpError),
}

/// What a failure leads to.
#[derive(Debug)]
pub(crate) enum Trouble {
    /// Wait `wait`, then ask again as the next attempt; `error` is why,
    /// for the progress line.
    Retry { wait: Duration, error: HttpError },
    /// Stop with this error.
    Fail(CreateError),
}

/// How an attempt that read a body ends.
#[derive(Debug)]
pub(crate) enum Ending {
    /// Every byte is here.
    Done,
    Trouble(Trouble),
}

/// What a download into the cache does with an answer. What it holds is
/// in a file of its own (the cache's partial file): it can be dropped and
/// fetched again.
#[derive(Debug)]
pub(crate) enum FileStep {
    /// Read the body; the bytes continue those held.
    Read,
    /// The answer is the whole file again (the server ignored the Range):
    /// drop what is held, then read.
    RestartAndRead,
    /// What is held is longer than what the server has (the file changed
    /// upstream): drop it and ask again at once.
    RestartAndAsk,
    Trouble(Trouble),
}

/// What a piece of a tar bundle does with an answer. What it holds was
/// handed on to the bundle's stream (written once, front to back): it
/// cannot be taken back.
#[derive(Debug)]
pub(crate) enum PieceStep {
    /// Read the body; the bytes continue those held.
    Read,
    /// The answer is the whole file again: read, throwing away the first
    /// `skip` bytes (those held).
    SkipAndRead {
        skip: u64,
    },
    /// Forget the stored redirect target and ask the file's own URL again
    /// at once: a signed URL expires, and the file's URL signs a new one.
    AskOriginal,
    Trouble(Trouble),
}

/// Of the bytes of a piece's body that arrived, throw away the first
/// `skip`, take the `keep` after them, and, unless `last`, read on.
/// `last`: every byte of the piece is here; the rest of the body is not
/// this piece's (a whole body sent for a piece carries the bytes of the
/// pieces after it; the bundle checks the blob's hash).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct Take {
    pub skip: u64,
    pub keep: u64,
    pub last: bool,
}

/// What the decisions depend on besides the state: how often to try and
/// what to say.
#[derive(Debug, Clone, Copy)]
pub(crate) struct Rules<'a> {
    pub retry: RetryPolicy,
    /// The download, for messages.
    pub label: &'a str,
    /// What to tell the operator when the server refuses access.
    pub denied_hint: Option<&'a str>,
}

/// What a download into the cache does with `a`.
pub(crate) fn file_answer(s: State, a: Answer, rules: &Rules<'_>) -> FileStep {
    match answered(s, a, rules) {
        Answered::Read => FileStep::Read,
        Answered::Whole if s.offset > 0 => FileStep::RestartAndRead,
        Answered::Whole => FileStep::Read,
        Answered::Refused { .. } if s.offset > 0 => FileStep::RestartAndAsk,
        Answered::Refused { trouble, .. } | Answered::Trouble(trouble) => {
            FileStep::Trouble(trouble)
        }
        // Never sent to a stored target: the file's own URL refused.
        Answered::StoredRefused(trouble) => FileStep::Trouble(trouble),
    }
}

/// What a piece of a tar bundle does with `a`.
pub(crate) fn piece_answer(s: State, a: Answer, rules: &Rules<'_>) -> PieceStep {
    match answered(s, a, rules) {
        Answered::Read => PieceStep::Read,
        Answered::Whole if s.offset > 0 => PieceStep::SkipAndRead { skip: s.offset },
        Answered::Whole => PieceStep::Read,
        Answered::StoredRefused(_) => PieceStep::AskOriginal,
        Answered::Refused { url, .. } => {
            PieceStep::Trouble(Trouble::Fail(shorter_than_listed(s, url, rules)))
        }
        Answered::Trouble(trouble) => PieceStep::Trouble(trouble),
    }
}

/// What an answer is, whatever holds the bytes.
enum Answered {
    /// The bytes asked for, from the offset.
    Read,
    /// A 200: the whole file from its start.
    Whole,
    /// A client error from a stored redirect target, not yet asked again;
    /// what it leads to if the file's own URL is not asked.
    StoredRefused(Trouble),
    /// A 416 to a request with a Range: the server has fewer bytes than
    /// asked for; what it leads to when nothing held can be dropped.
    Refused {
        url: String,
        trouble: Trouble,
    },
    Trouble(Trouble),
}

fn answered(s: State, a: Answer, rules: &Rules<'_>) -> Answered {
    let Answer {
        status,
        range_start,
        error_code,
        url,
        via_stored,
    } = a;
    // A 206 to a request without a Range is not an answer to it: it falls
    // through to the failures below.
    if status == StatusCode::PARTIAL_CONTENT && s.range().is_some() {
        if range_start == Some(s.offset) {
            return Answered::Read;
        }
        return Answered::Trouble(Trouble::Fail(CreateError::Http(HttpError::Protocol {
            url,
            detail: format!(
                "asked for bytes from {} on, the server sent a range starting at {}",
                s.offset,
                range_start.map_or("an unreadable place".to_string(), |s| s.to_string())
            ),
        })));
    }
    if status == StatusCode::OK {
        return Answered::Whole;
    }
    let stored_refused = via_stored && status.is_client_error() && !s.asked_again;
    let refused = status == StatusCode::RANGE_NOT_SATISFIABLE;
    let trouble = if let (Some(hint), 401 | 403) = (rules.denied_hint, status.as_u16()) {
        Trouble::Fail(CreateError::Hub(HubError::Denied {
            label: rules.label.to_string(),
            url: url.clone(),
            status,
            hint: hint.to_string(),
        }))
    } else {
        let e = HttpError::Status {
            url: url.clone(),
            status: status.as_u16(),
            error_code,
            message: None,
        };
        retry_or_fail(s, e, rules)
    };
    if stored_refused {
        Answered::StoredRefused(trouble)
    } else if refused {
        Answered::Refused { url, trouble }
    } else {
        Answered::Trouble(trouble)
    }
}

/// A 416 when the bytes held cannot be dropped: the server's file is
/// shorter than its listing said, and nothing here can mend that.
fn shorter_than_listed(s: State, url: String, rules: &Rules<'_>) -> CreateError {
    let asked = match s.range() {
        Some((from, Some(to))) => format!("bytes {from}-{to}"),
        Some((from, None)) => format!("bytes from {from} on"),
        None => "the whole file".to_string(),
    };
    CreateError::Http(HttpError::Protocol {
        url,
        detail: format!(
            "{}: asked for {asked} of the {} its publisher listed; the server has fewer \
             (416): the file changed upstream after it was listed, so run create again to \
             list it afresh",
            rules.label, s.size
        ),
    })
}

/// `n` bytes of a download into the cache arrived: taken whole, or a
/// failure when they run past the file's size. Read to the body's end, so
/// that a body longer than the file is seen.
pub(crate) fn file_chunk(s: State, n: u64, rules: &Rules<'_>) -> Result<(), CreateError> {
    if s.offset.saturating_add(n) > s.size {
        return Err(CreateError::WrongSize {
            what: rules.label.to_string(),
            expected: s.size,
            actual: s.offset.saturating_add(n),
        });
    }
    Ok(())
}

/// `n` bytes of a piece's body arrived: stop at the piece's end.
pub(crate) fn piece_chunk(s: State, n: u64) -> Take {
    let skip = s.skip.min(n);
    let keep = (n - skip).min(s.end.saturating_sub(s.offset));
    Take {
        skip,
        keep,
        last: s.offset + keep >= s.end,
    }
}

/// How an attempt ends when its body stopped.
pub(crate) fn stopped(s: State, stop: Stop, rules: &Rules<'_>) -> Ending {
    match stop {
        Stop::Ended { .. } if s.complete() => Ending::Done,
        // Cut off without an error: resumed like any drop.
        Stop::Ended { url } => Ending::Trouble(retry_or_fail(
            s,
            HttpError::Cut {
                url,
                how: CutShort::EndedEarly {
                    got: s.offset,
                    size: s.size,
                },
            },
            rules,
        )),
        Stop::Failed(e) => Ending::Trouble(retry_or_fail(s, e, rules)),
    }
}

/// Another attempt when the failure is worth one and attempts are left.
pub(crate) fn retry_or_fail(s: State, e: HttpError, rules: &Rules<'_>) -> Trouble {
    if e.is_retryable() && s.attempt < rules.retry.attempts {
        Trouble::Retry {
            wait: rules.retry.backoff(s.attempt),
            error: e,
        }
    } else {
        Trouble::Fail(CreateError::Http(e.tried(s.attempt)))
    }
}
