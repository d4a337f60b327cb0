//! The tables' vocabulary: any event and any step of either driver, and
//! [`next_step`], which sends an event to the function the driver whose
//! bytes are held as a row says calls for it — so one table row reads as
//! what happened and what the driver then does.

use super::*;

/// Where the bytes held went: which driver's decisions a table is of.
#[derive(Debug, Clone, Copy)]
pub(super) enum Held {
    OnDisk,
    HandedOn,
}

pub(super) struct TestRules<'a> {
    pub held: Held,
    pub rules: Rules<'a>,
}

/// What just happened, in a row.
#[derive(Debug)]
pub(super) enum Event {
    Ready,
    RequestFailed(HttpError),
    Answered {
        status: StatusCode,
        range_start: Option<u64>,
        error_code: Option<String>,
        url: String,
        via_stored: bool,
    },
    Chunk(u64),
    BodyEnded {
        url: String,
    },
    BodyFailed(HttpError),
}

/// Any step either driver takes, for the tables.
#[derive(Debug)]
pub(super) enum Step {
    Done,
    Ask,
    AskOriginal,
    Read,
    RestartAndRead,
    SkipAndRead { skip: u64 },
    RestartAndAsk,
    Take { skip: u64, keep: u64, last: bool },
    Retry { wait: Duration, error: HttpError },
    Fail(CreateError),
}

impl From<Trouble> for Step {
    fn from(t: Trouble) -> Self {
        match t {
            Trouble::Retry { wait, error } => Step::Retry { wait, error },
            Trouble::Fail(e) => Step::Fail(e),
        }
    }
}

/// The step the driver `r.held` names takes in state `s` after `event`.
pub(super) fn next_step(s: State, event: Event, r: &TestRules<'_>) -> Step {
    let rules = &r.rules;
    match event {
        Event::Ready if s.complete() => Step::Done,
        Event::Ready => Step::Ask,
        Event::RequestFailed(e) => retry_or_fail(s, e, rules).into(),
        Event::Answered {
            status,
            range_start,
            error_code,
            url,
            via_stored,
        } => {
            let a = Answer {
                status,
                range_start,
                error_code,
                url,
                via_stored,
            };
            match r.held {
                Held::OnDisk => match file_answer(s, a, rules) {
                    FileStep::Read => Step::Read,
                    FileStep::RestartAndRead => Step::RestartAndRead,
                    FileStep::RestartAndAsk => Step::RestartAndAsk,
                    FileStep::Trouble(t) => t.into(),
                },
                Held::HandedOn => match piece_answer(s, a, rules) {
                    PieceStep::Read => Step::Read,
                    PieceStep::SkipAndRead { skip } => Step::SkipAndRead { skip },
                    PieceStep::AskOriginal => Step::AskOriginal,
                    PieceStep::Trouble(t) => t.into(),
                },
            }
        }
        Event::Chunk(n) => match r.held {
            Held::OnDisk => match file_chunk(s, n, rules) {
                Ok(()) => Step::Take {
                    skip: 0,
                    keep: n,
                    last: false,
                },
                Err(e) => Step::Fail(e),
            },
            Held::HandedOn => {
                let Take { skip, keep, last } = piece_chunk(s, n);
                Step::Take { skip, keep, last }
            }
        },
        Event::BodyEnded { url } => ending(stopped(s, Stop::Ended { url }, rules)),
        Event::BodyFailed(e) => ending(stopped(s, Stop::Failed(e), rules)),
    }
}

fn ending(e: Ending) -> Step {
    match e {
        Ending::Done => Step::Done,
        Ending::Trouble(t) => t.into(),
    }
}
