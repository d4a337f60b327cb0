//! The decisions of one download, apart from its I/O: given where the
//! download stands and what just happened, what to do next.
//!
//! Two drivers make the requests, wait and hand the bytes on:
//! [`super::fetch_one`] (a whole file into the cache) and
//! [`crate::pieces`] (a byte range of a file into a tar bundle's stream).
//! Every choice either makes (which range to ask for, resume or start over,
//! skip, read, retry, ask the file's own URL again, give up and with which
//! error) is [`next_step`]'s, a pure function tested by the tables in
//! `tests.rs`: there is one retry, redirect and backoff policy in the
//! bundler, not one per driver.

use std::time::Duration;

use reqwest::StatusCode;

use crate::error::CreateError;
use crate::http::{CutShort, HttpError, RetryPolicy};

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
}

/// What just happened.
#[derive(Debug)]
pub(crate) enum Event {
    /// About to ask: the start, or after a wait.
    Ready,
    /// The request failed before an answer.
    RequestFailed(HttpError),
    /// An answer came from `url` (redacted).
    Answered {
        status: StatusCode,
        /// Where a 206's `Content-Range` starts, when it can be read.
        range_start: Option<u64>,
        /// The Hub's `X-Error-Code`, when it sent one.
        error_code: Option<String>,
        url: String,
        /// Whether the request went to a redirect target kept from an
        /// earlier answer rather than to the file's own URL.
        via_stored: bool,
    },
    /// `n` more bytes of the body arrived.
    Chunk(u64),
    /// The body ended, from `url` (redacted).
    BodyEnded { url: String },
    /// The body broke off.
    BodyFailed(HttpError),
}

/// What to do next.
#[derive(Debug)]
pub(crate) enum Step {
    /// Every byte is here.
    Done,
    /// Ask for the bytes from the offset on ([`State::range`]).
    Ask,
    /// Forget the stored redirect target and ask the file's own URL again
    /// at once: a signed URL expires, and the file's URL signs a new one.
    AskOriginal,
    /// Read the answer's body; the bytes continue those held.
    Read,
    /// The answer is the whole file again (the server ignored the Range)
    /// and what is held can be dropped: drop it, then read.
    RestartAndRead,
    /// The answer is the whole file again and what is held was handed on:
    /// read, throwing away the first `skip` bytes (those held).
    SkipAndRead { skip: u64 },
    /// What is held is longer than what the server has (the file changed
    /// upstream): drop it and ask again at once.
    RestartAndAsk,
    /// Of the bytes that arrived, throw away the first `skip`, take the
    /// `keep` after them, and, unless `last`, read on. `last`: every byte
    /// of the download is here; the rest of the body is not this
    /// download's.
    Take { skip: u64, keep: u64, last: bool },
    /// Wait `wait`, then ask again as the next attempt; `error` is why,
    /// for the progress line.
    Retry { wait: Duration, error: HttpError },
    /// Stop with this error.
    Fail(CreateError),
}

/// Where the bytes held went, which decides what can be done about them.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Held {
    /// Into a file of the download's own (the cache's partial file): they
    /// can be dropped and fetched again, and a body longer than the file
    /// is an error.
    OnDisk,
    /// Handed on to a stream (a tar bundle, written once front to back):
    /// they cannot be taken back, and bytes past the end belong to another
    /// piece or to no one.
    HandedOn,
}

/// What the decisions depend on besides the state: how often to try, where
/// the bytes go, and what to say.
#[derive(Debug, Clone, Copy)]
pub(crate) struct Rules<'a> {
    pub retry: RetryPolicy,
    pub held: Held,
    /// The download, for messages.
    pub label: &'a str,
    /// What to tell the operator when the server refuses access.
    pub denied_hint: Option<&'a str>,
}

/// The next step of a download in state `s` after `event`.
pub(crate) fn next_step(s: State, event: Event, rules: &Rules<'_>) -> Step {
    match event {
        Event::Ready if s.offset >= s.end => Step::Done,
        Event::Ready => Step::Ask,
        Event::RequestFailed(e) | Event::BodyFailed(e) => retry_or_fail(s, e, rules),
        Event::Answered {
            status,
            range_start,
            error_code,
            url,
            via_stored,
        } => answered(s, status, range_start, error_code, url, via_stored, rules),
        Event::Chunk(n) => chunk(s, n, rules),
        Event::BodyEnded { .. } if s.offset >= s.end => Step::Done,
        // Cut off without an error: resumed like any drop.
        Event::BodyEnded { url } => retry_or_fail(
            s,
            HttpError::Cut {
                url,
                how: CutShort::EndedEarly {
                    got: s.offset,
                    size: s.size,
                },
            },
            rules,
        ),
    }
}

fn answered(
    s: State,
    status: StatusCode,
    range_start: Option<u64>,
    error_code: Option<String>,
    url: String,
    via_stored: bool,
    rules: &Rules<'_>,
) -> Step {
    let held = s.offset > 0;
    // A 206 to a request without a Range is not an answer to it: it falls
    // through to the failures below.
    if status == StatusCode::PARTIAL_CONTENT && s.range().is_some() {
        if range_start == Some(s.offset) {
            return Step::Read;
        }
        return Step::Fail(CreateError::Http(HttpError::Protocol {
            url,
            detail: format!(
                "asked for bytes from {} on, the server sent a range starting at {}",
                s.offset,
                range_start.map_or("an unreadable place".to_string(), |s| s.to_string())
            ),
        }));
    }
    if status == StatusCode::OK {
        return match (held, rules.held) {
            (false, _) => Step::Read,
            (true, Held::OnDisk) => Step::RestartAndRead,
            (true, Held::HandedOn) => Step::SkipAndRead { skip: s.offset },
        };
    }
    if via_stored && status.is_client_error() && !s.asked_again {
        return Step::AskOriginal;
    }
    if status == StatusCode::RANGE_NOT_SATISFIABLE {
        match rules.held {
            Held::OnDisk if held => return Step::RestartAndAsk,
            Held::OnDisk => {}
            Held::HandedOn => return Step::Fail(shorter_than_listed(s, url, rules)),
        }
    }
    if let (Some(hint), 401 | 403) = (rules.denied_hint, status.as_u16()) {
        return Step::Fail(CreateError::Hub(format!(
            "{}: {url} answered {status}; {hint}",
            rules.label
        )));
    }
    let e = HttpError::Status {
        url,
        status: status.as_u16(),
        error_code,
        message: None,
    };
    retry_or_fail(s, e, rules)
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

/// `n` bytes of the body arrived.
fn chunk(s: State, n: u64, rules: &Rules<'_>) -> Step {
    let skip = s.skip.min(n);
    let rest = n - skip;
    match rules.held {
        Held::OnDisk if s.offset.saturating_add(rest) > s.size => {
            Step::Fail(CreateError::WrongSize {
                what: rules.label.to_string(),
                expected: s.size,
                actual: s.offset.saturating_add(rest),
            })
        }
        // Read to the body's end, so that a body longer than the file is
        // seen (the step above).
        Held::OnDisk => Step::Take {
            skip,
            keep: rest,
            last: false,
        },
        // Stop at the end: a whole body sent for a piece carries the bytes
        // of the pieces after it. (The bundle checks the blob's hash.)
        Held::HandedOn => {
            let keep = rest.min(s.end.saturating_sub(s.offset));
            Step::Take {
                skip,
                keep,
                last: s.offset + keep >= s.end,
            }
        }
    }
}

/// Another attempt when the failure is worth one and attempts are left.
fn retry_or_fail(s: State, e: HttpError, rules: &Rules<'_>) -> Step {
    if e.is_retryable() && s.attempt < rules.retry.attempts {
        Step::Retry {
            wait: rules.retry.backoff(s.attempt),
            error: e,
        }
    } else {
        Step::Fail(CreateError::Http(e.tried(s.attempt)))
    }
}
