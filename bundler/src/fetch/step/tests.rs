//! Every decision of the download steps, as tables: one for a file fetched
//! into the cache (what is held can be dropped), one for a piece of a tar
//! bundle (what is held was handed on). [`next_step`] sends each event of
//! a row to the function its driver calls for it (`tables.rs`).

use super::*;

const URL: &str = "http://h/f";

use super::tables::*;

fn rules(denied_hint: Option<&str>) -> TestRules<'_> {
    rules_for(Held::OnDisk, denied_hint)
}

fn rules_for(held: Held, denied_hint: Option<&str>) -> TestRules<'_> {
    TestRules {
        held,
        rules: Rules {
            retry: RetryPolicy {
                attempts: 3,
                first_backoff: Duration::from_millis(100),
                max_backoff: Duration::from_secs(1),
            },
            label: "o/r t a",
            denied_hint,
        },
    }
}

fn at(offset: u64, attempt: u32) -> State {
    State {
        offset,
        end: 10,
        size: 10,
        skip: 0,
        attempt,
        asked_again: false,
    }
}

fn answer(status: u16, range_start: Option<u64>) -> Event {
    Event::Answered {
        status: StatusCode::from_u16(status).unwrap(),
        range_start,
        error_code: None,
        url: URL.into(),
        via_stored: false,
    }
}

/// A failure worth another try (a cut answer), or one that is not (an
/// answer that breaks the protocol).
fn transport(retryable: bool) -> HttpError {
    if retryable {
        HttpError::Cut {
            url: URL.into(),
            how: CutShort::EndedEarly { got: 1, size: 2 },
        }
    } else {
        HttpError::Protocol {
            url: URL.into(),
            detail: "not an answer".into(),
        }
    }
}

fn chunk_len(event: &Event) -> Option<u64> {
    match event {
        Event::Chunk(n) => Some(*n),
        _ => None,
    }
}

/// Bytes `offset..end` of a 10-byte file, some of them to skip, for a
/// piece of a tar bundle.
fn piece(offset: u64, end: u64, skip: u64, attempt: u32, asked_again: bool) -> State {
    State {
        offset,
        end,
        size: 10,
        skip,
        attempt,
        asked_again,
    }
}

/// An answer from the redirect target kept from an earlier answer.
fn stored_answer(status: u16) -> Event {
    Event::Answered {
        status: StatusCode::from_u16(status).unwrap(),
        range_start: None,
        error_code: None,
        url: "http://storage/f?sig=[redacted]".into(),
        via_stored: true,
    }
}

/// The step's name, and for a failure the error's message. `n`: the
/// bytes of the chunk decided on, so that taking all of them reads "take".
fn shape(step: &Step, n: Option<u64>) -> String {
    match step {
        Step::Done => "done".into(),
        Step::Ask => "ask".into(),
        Step::AskOriginal => "ask the file's own URL again".into(),
        Step::Read => "read".into(),
        Step::RestartAndRead => "restart, read".into(),
        Step::SkipAndRead { skip } => format!("skip {skip}, read"),
        Step::RestartAndAsk => "restart, ask".into(),
        Step::Take {
            skip: 0,
            keep,
            last: false,
        } if Some(*keep) == n => "take".into(),
        Step::Take { skip, keep, last } => format!(
            "skip {skip}, take {keep}{}",
            if *last { ", last" } else { "" }
        ),
        Step::Retry { wait, error } => format!("retry after {} ms: {error}", wait.as_millis()),
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
        // Nothing held to drop: a 416 is the server's last word.
        (
            at(0, 1),
            answer(416, None),
            None,
            "fail: http://h/f: the server answered 416",
        ),
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
            "retry after 100 ms: http://h/f: the body ended after 1 of 2 bytes",
        ),
        (
            at(0, 1),
            Event::RequestFailed(transport(false)),
            None,
            "fail: http://h/f: not an answer",
        ),
        (
            at(5, 2),
            Event::BodyFailed(transport(true)),
            None,
            "retry after 200 ms: http://h/f: the body ended after 1 of 2 bytes",
        ),
        (
            at(5, 3),
            Event::BodyFailed(transport(true)),
            None,
            "fail: http://h/f: the body ended after 1 of 2 bytes",
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
        let n = chunk_len(&event);
        let got = shape(&next_step(state, event, &rules(hint)), n);
        assert_eq!(got, want, "{what}");
    }
}

#[test]
fn a_connection_never_made_says_how_often_it_was_tried() {
    let e = HttpError::Unreachable {
        url: URL.into(),
        reason: "timed out".into(),
        tries: 1,
        handshake: false,
        recoverable: true,
    };
    let step = next_step(at(0, 3), Event::RequestFailed(e), &rules(None));
    let Step::Fail(e) = step else {
        panic!("{step:?}")
    };
    assert!(e.to_string().contains("tried 3 times"), "{e}");
}

#[test]
fn ranges_asked_for() {
    let range = |at, end, size| {
        State {
            offset: at,
            end,
            size,
            skip: 0,
            attempt: 1,
            asked_again: false,
        }
        .range()
    };
    assert_eq!(range(0, 10, 10), None);
    assert_eq!(range(4, 10, 10), Some((4, None)));
    assert_eq!(range(0, 4, 10), Some((0, Some(3))));
    assert_eq!(range(4, 8, 10), Some((4, Some(7))));
}

#[test]
fn every_decision_of_a_piece() {
    let hint = Some("set HF_TOKEN");
    let table: Vec<(State, Event, Option<&str>, &str)> = vec![
        // Starting, and carrying on.
        (piece(0, 4, 0, 1, false), Event::Ready, None, "ask"),
        (piece(4, 8, 0, 1, false), Event::Ready, None, "ask"),
        (piece(8, 8, 0, 1, false), Event::Ready, None, "done"),
        // A range read: a piece asks with a Range even from byte 0, so a
        // 206 from 0 is the answer to it.
        (piece(0, 4, 0, 1, false), answer(206, Some(0)), None, "read"),
        (piece(4, 8, 0, 1, false), answer(206, Some(4)), None, "read"),
        (
            piece(4, 8, 0, 1, false),
            answer(206, Some(0)),
            None,
            "fail: http://h/f: asked for bytes from 4 on, the server sent a range starting at 0",
        ),
        // The whole file is a plain GET, to which a 206 is no answer.
        (
            piece(0, 10, 0, 3, false),
            answer(206, Some(0)),
            None,
            "fail: http://h/f: the server answered 206",
        ),
        // The server ignored the Range: what was handed on is skipped.
        (piece(0, 4, 0, 1, false), answer(200, None), None, "read"),
        (
            piece(4, 8, 0, 1, false),
            answer(200, None),
            None,
            "skip 4, read",
        ),
        // Fewer bytes than listed: nothing handed on can be taken back.
        (
            piece(4, 8, 0, 1, false),
            answer(416, None),
            None,
            "fail: http://h/f: o/r t a: asked for bytes 4-7 of the 10 its publisher listed; \
             the server has fewer (416): the file changed upstream after it was listed, so \
             run create again to list it afresh",
        ),
        (
            piece(4, 10, 0, 1, false),
            answer(416, None),
            None,
            "fail: http://h/f: o/r t a: asked for bytes from 4 on of the 10 its publisher \
             listed; the server has fewer (416): the file changed upstream after it was \
             listed, so run create again to list it afresh",
        ),
        // A stored redirect target that refuses (a signed URL expired):
        // the file's own URL once, then the usual rules.
        (
            piece(4, 8, 0, 1, false),
            stored_answer(403),
            hint,
            "ask the file's own URL again",
        ),
        (
            piece(4, 8, 0, 2, false),
            stored_answer(416),
            None,
            "ask the file's own URL again",
        ),
        (
            piece(4, 8, 0, 1, true),
            stored_answer(403),
            hint,
            "fail: o/r t a: http://storage/f?sig=[redacted] answered 403 Forbidden; set HF_TOKEN",
        ),
        (
            piece(4, 8, 0, 1, true),
            stored_answer(404),
            None,
            "fail: http://storage/f?sig=[redacted]: the server answered 404",
        ),
        (
            piece(4, 8, 0, 1, true),
            stored_answer(429),
            None,
            "retry after 100 ms: http://storage/f?sig=[redacted]: the server answered 429",
        ),
        (
            piece(4, 8, 0, 1, false),
            stored_answer(503),
            None,
            "retry after 100 ms: http://storage/f?sig=[redacted]: the server answered 503",
        ),
        // The file's own URL refusing is not an expired target.
        (
            piece(4, 8, 0, 1, false),
            answer(403, None),
            hint,
            "fail: o/r t a: http://h/f answered 403 Forbidden; set HF_TOKEN",
        ),
        // The body: bytes held are skipped, bytes past the end cut off.
        (piece(4, 8, 0, 1, false), Event::Chunk(3), None, "take"),
        (
            piece(4, 8, 0, 1, false),
            Event::Chunk(4),
            None,
            "skip 0, take 4, last",
        ),
        (
            piece(4, 8, 0, 1, false),
            Event::Chunk(6),
            None,
            "skip 0, take 4, last",
        ),
        (
            piece(4, 10, 0, 1, false),
            Event::Chunk(7),
            None,
            "skip 0, take 6, last",
        ),
        (
            piece(4, 8, 4, 1, false),
            Event::Chunk(3),
            None,
            "skip 3, take 0",
        ),
        (
            piece(4, 8, 1, 1, false),
            Event::Chunk(3),
            None,
            "skip 1, take 2",
        ),
        (
            piece(4, 8, 1, 1, false),
            Event::Chunk(10),
            None,
            "skip 1, take 4, last",
        ),
        (
            piece(6, 8, 0, 1, false),
            Event::BodyEnded { url: URL.into() },
            None,
            "retry after 100 ms: http://h/f: the body ended after 6 of 10 bytes",
        ),
        (
            piece(6, 8, 0, 3, false),
            Event::BodyFailed(transport(true)),
            None,
            "fail: http://h/f: the body ended after 1 of 2 bytes",
        ),
    ];
    for (state, event, hint, want) in table {
        let what = format!("{state:?} {event:?}");
        let n = chunk_len(&event);
        let got = shape(
            &next_step(state, event, &rules_for(Held::HandedOn, hint)),
            n,
        );
        assert_eq!(got, want, "{what}");
    }
}
