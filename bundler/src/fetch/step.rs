//! The decisions of one download, apart from its I/O: given where the
//! download stands and what just happened, what to do next.
//!
//! [`super::fetch_one`] makes the requests, waits and hands bytes to the
//! disk; every choice it makes (resume or start over, read, retry, give up
//! and with which error) is [`next_step`]'s, a pure function tested by a
//! table below.

use std::time::Duration;

use reqwest::StatusCode;

use crate::error::CreateError;
use crate::http::{HttpError, RetryPolicy};

/// Where a download stands.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct State {
    /// Bytes held: on disk, or on their way to it.
    pub offset: u64,
    /// The size its publisher listed.
    pub size: u64,
    /// The attempt under way, from 1.
    pub attempt: u32,
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
    /// Ask for the bytes from the offset on.
    Ask,
    /// Read the answer's body; the bytes continue those held.
    Read,
    /// The answer is the whole file again (the server ignored the
    /// Range): drop what is held, then read it.
    RestartAndRead,
    /// What is held is longer than what the server has (the file changed
    /// upstream): drop it and ask again at once.
    RestartAndAsk,
    /// Take the bytes that arrived, and read on.
    Take,
    /// Wait `wait`, then ask again as the next attempt; `why` is for the
    /// progress line.
    Retry { wait: Duration, why: String },
    /// Stop with this error.
    Fail(CreateError),
}

/// What the decisions depend on besides the state: how often to try, and
/// what to say.
#[derive(Debug, Clone, Copy)]
pub(crate) struct Rules<'a> {
    pub retry: RetryPolicy,
    /// The download, for messages.
    pub label: &'a str,
    /// What to tell the operator when the server refuses access.
    pub denied_hint: Option<&'a str>,
}

/// The next step of a download in state `s` after `event`.
pub(crate) fn next_step(s: State, event: Event, rules: &Rules<'_>) -> Step {
    match event {
        Event::Ready if s.offset == s.size => Step::Done,
        Event::Ready => Step::Ask,
        Event::RequestFailed(e) | Event::BodyFailed(e) => retry_or_fail(s, e, rules),
        Event::Answered {
            status,
            range_start,
            error_code,
            url,
        } => answered(s, status, range_start, error_code, url, rules),
        Event::Chunk(n) if s.offset.saturating_add(n) > s.size => {
            Step::Fail(CreateError::WrongSize {
                what: rules.label.to_string(),
                expected: s.size,
                actual: s.offset.saturating_add(n),
            })
        }
        Event::Chunk(_) => Step::Take,
        Event::BodyEnded { .. } if s.offset == s.size => Step::Done,
        // Cut off without an error: resumed like any drop.
        Event::BodyEnded { url } => retry_or_fail(
            s,
            HttpError::Transport {
                url,
                detail: format!("the body ended after {} of {} bytes", s.offset, s.size),
                retryable: true,
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
    rules: &Rules<'_>,
) -> Step {
    let resuming = s.offset > 0;
    if status == StatusCode::PARTIAL_CONTENT && resuming {
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
        return if resuming {
            Step::RestartAndRead
        } else {
            Step::Read
        };
    }
    if status == StatusCode::RANGE_NOT_SATISFIABLE && resuming {
        return Step::RestartAndAsk;
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

/// Another attempt when the failure is worth one and attempts are left.
fn retry_or_fail(s: State, e: HttpError, rules: &Rules<'_>) -> Step {
    if e.is_retryable() && s.attempt < rules.retry.attempts {
        Step::Retry {
            wait: rules.retry.backoff(s.attempt),
            why: e.to_string(),
        }
    } else {
        Step::Fail(CreateError::Http(e.tried(s.attempt)))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const URL: &str = "http://h/f";

    fn rules(denied_hint: Option<&str>) -> Rules<'_> {
        Rules {
            retry: RetryPolicy {
                attempts: 3,
                first_backoff: Duration::from_millis(100),
                max_backoff: Duration::from_secs(1),
            },
            label: "o/r t a",
            denied_hint,
        }
    }

    fn at(offset: u64, attempt: u32) -> State {
        State {
            offset,
            size: 10,
            attempt,
        }
    }

    fn answer(status: u16, range_start: Option<u64>) -> Event {
        Event::Answered {
            status: StatusCode::from_u16(status).unwrap(),
            range_start,
            error_code: None,
            url: URL.into(),
        }
    }

    fn transport(retryable: bool) -> HttpError {
        HttpError::Transport {
            url: URL.into(),
            detail: "reset".into(),
            retryable,
        }
    }

    /// The step's name, and for a failure the error's message.
    fn shape(step: &Step) -> String {
        match step {
            Step::Done => "done".into(),
            Step::Ask => "ask".into(),
            Step::Read => "read".into(),
            Step::RestartAndRead => "restart, read".into(),
            Step::RestartAndAsk => "restart, ask".into(),
            Step::Take => "take".into(),
            Step::Retry { wait, why } => format!("retry after {} ms: {why}", wait.as_millis()),
            Step::Fail(e) => format!("fail: {e}"),
        }
    }

    #[test]
    fn every_decision() {
        let hint = Some("set HF_TOKEN");
        let table: Vec<(State, Event, Option<&str>, &str)> = vec![
            // Starting, and carrying on.
            (at(0, 1), Event::Ready, None, "ask"),
            (at(4, 1), Event::Ready, None, "ask"),
            (at(10, 1), Event::Ready, None, "done"),
            // Answers.
            (at(0, 1), answer(200, None), None, "read"),
            (at(4, 1), answer(206, Some(4)), None, "read"),
            (at(4, 1), answer(200, None), None, "restart, read"),
            (at(4, 1), answer(416, None), None, "restart, ask"),
            (
                at(4, 1),
                answer(206, Some(0)),
                None,
                "fail: http://h/f: asked for bytes from 4 on, the server sent a range starting at 0",
            ),
            (
                at(4, 1),
                answer(206, None),
                None,
                "fail: http://h/f: asked for bytes from 4 on, the server sent a range starting at an unreadable place",
            ),
            // A 206 to a request without a Range is not an answer to it.
            (
                at(0, 3),
                answer(206, Some(0)),
                None,
                "fail: http://h/f: the server answered 206",
            ),
            (
                at(0, 1),
                answer(403, None),
                hint,
                "fail: o/r t a: http://h/f answered 403 Forbidden; set HF_TOKEN",
            ),
            (
                at(0, 1),
                answer(403, None),
                None,
                "fail: http://h/f: the server answered 403",
            ),
            (
                at(0, 1),
                answer(503, None),
                None,
                "retry after 100 ms: http://h/f: the server answered 503",
            ),
            (
                at(0, 2),
                answer(503, None),
                None,
                "retry after 200 ms: http://h/f: the server answered 503",
            ),
            (
                at(0, 3),
                answer(503, None),
                None,
                "fail: http://h/f: the server answered 503",
            ),
            (
                at(0, 1),
                answer(404, None),
                None,
                "fail: http://h/f: the server answered 404",
            ),
            // Failures before an answer, and of the body.
            (
                at(0, 1),
                Event::RequestFailed(transport(true)),
                None,
                "retry after 100 ms: http://h/f: reset",
            ),
            (
                at(0, 1),
                Event::RequestFailed(transport(false)),
                None,
                "fail: http://h/f: reset",
            ),
            (
                at(5, 2),
                Event::BodyFailed(transport(true)),
                None,
                "retry after 200 ms: http://h/f: reset",
            ),
            (
                at(5, 3),
                Event::BodyFailed(transport(true)),
                None,
                "fail: http://h/f: reset",
            ),
            // The body.
            (at(0, 1), Event::Chunk(10), None, "take"),
            (at(4, 1), Event::Chunk(6), None, "take"),
            (
                at(4, 1),
                Event::Chunk(7),
                None,
                "fail: o/r t a: expected 10 bytes, the server sent 11; the file was discarded",
            ),
            (
                at(10, 1),
                Event::BodyEnded { url: URL.into() },
                None,
                "done",
            ),
            (
                at(7, 1),
                Event::BodyEnded { url: URL.into() },
                None,
                "retry after 100 ms: http://h/f: the body ended after 7 of 10 bytes",
            ),
            (
                at(7, 3),
                Event::BodyEnded { url: URL.into() },
                None,
                "fail: http://h/f: the body ended after 7 of 10 bytes",
            ),
        ];
        for (state, event, hint, want) in table {
            let what = format!("{state:?} {event:?}");
            let got = shape(&next_step(state, event, &rules(hint)));
            assert_eq!(got, want, "{what}");
        }
    }

    #[test]
    fn a_connection_never_made_says_how_often_it_was_tried() {
        let e = HttpError::Unreachable {
            url: URL.into(),
            reason: "connection refused".into(),
            tries: 1,
        };
        let step = next_step(at(0, 3), Event::RequestFailed(e), &rules(None));
        let Step::Fail(e) = step else {
            panic!("{step:?}")
        };
        assert!(e.to_string().contains("tried 3 times"), "{e}");
    }
}
