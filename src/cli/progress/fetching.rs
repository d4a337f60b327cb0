//! What the operator sees while a bundle is made: one progress line —
//! files and bytes done of the total, the download rate, the time left —
//! redrawn in place on a terminal and printed every [`LINE_EVERY`]
//! otherwise (a log keeps it readably), with a line per file only when
//! asked (`-v`). Messages (resolving, resumes, retries) are lines of their
//! own above it.
//!
//! Invariant: the counts only grow, and a file is counted done once (the
//! bundler sends `file_done` once per file: when it is found in the cache
//! or planned as stored, or when its download is verified); the rate is of
//! the bytes that came over the network only.

use std::io::Write;
use std::sync::Mutex;
use std::time::{Duration, Instant};

use llmgw_shared::progress::{Progress, human_bytes};

/// How often the progress line is printed when stderr is not a terminal.
pub const LINE_EVERY: Duration = Duration::from_secs(5);
/// How often it is redrawn on a terminal at most.
const REDRAW_EVERY: Duration = Duration::from_millis(200);

/// The progress line of `bundle create`, on stderr.
pub struct Fetching {
    /// stderr is a terminal: the line is redrawn in place.
    redraw: bool,
    /// A line per file (`-v`).
    verbose: bool,
    state: Mutex<State>,
}

#[derive(Default)]
struct State {
    files_total: u64,
    bytes_total: u64,
    files_done: u64,
    bytes_done: u64,
    /// Bytes that came over the network: what the rate is of.
    bytes_fetched: u64,
    started: Option<Instant>,
    last_shown: Option<Instant>,
}

impl Fetching {
    /// Redrawn when stderr is a terminal, plain lines otherwise; `verbose`
    /// adds a line per file.
    pub fn new(verbose: bool) -> Self {
        Self {
            redraw: super::stderr_is_terminal(),
            verbose,
            state: Mutex::new(State::default()),
        }
    }

    fn state(&self) -> std::sync::MutexGuard<'_, State> {
        // A panic elsewhere while holding it leaves counts, not invariants.
        self.state
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
    }

    /// Prints the progress line if it is due (or `now`), redrawn or as a
    /// line of its own.
    fn show(&self, s: &mut State, now: bool) {
        let Some(started) = s.started else {
            return;
        };
        let every = if self.redraw {
            REDRAW_EVERY
        } else {
            LINE_EVERY
        };
        let due = now || s.last_shown.is_none_or(|t| t.elapsed() >= every);
        if !due || (!self.redraw && now) {
            return;
        }
        s.last_shown = Some(Instant::now());
        let text = status(s, started.elapsed());
        if self.redraw {
            super::redraw_line(&text);
        } else {
            let _ = writeln!(std::io::stderr().lock(), "{text}");
        }
    }
}

impl Progress for Fetching {
    fn begin(&self, files: Option<u64>, bytes: u64) {
        let mut s = self.state();
        s.files_total = files.unwrap_or(0);
        s.bytes_total = bytes;
        s.started = Some(Instant::now());
    }

    fn advanced(&self, bytes: u64) {
        let mut s = self.state();
        s.bytes_done += bytes;
        s.bytes_fetched += bytes;
        self.show(&mut s, false);
    }

    fn credited(&self, bytes: u64) {
        self.state().bytes_done += bytes;
    }

    fn file_done(&self) {
        let mut s = self.state();
        s.files_done += 1;
        self.show(&mut s, false);
    }

    fn message(&self, line: &str) {
        if !self.redraw {
            eprintln!("{line}");
            return;
        }
        let mut s = self.state();
        let _ = writeln!(super::stderr_clean(), "{line}");
        self.show(&mut s, true);
    }

    fn file_message(&self, line: &str) {
        if self.verbose {
            self.message(line);
        }
    }

    /// The last progress line, then the terminal left clean for the result.
    fn finish(&self) {
        let s = self.state();
        let Some(started) = s.started else {
            return;
        };
        let text = status(&s, started.elapsed());
        if self.redraw {
            let _ = writeln!(super::stderr_clean(), "\r\x1b[K{text}");
        } else {
            eprintln!("{text}");
        }
    }
}

/// `fetched 12/430 files, 1.20 GiB of 4.40 GiB (27%), 85.30 MiB/s, 38s left`.
fn status(s: &State, elapsed: Duration) -> String {
    let pct = if s.bytes_total == 0 {
        100
    } else {
        (s.bytes_done.min(s.bytes_total) as u128 * 100 / s.bytes_total as u128) as u64
    };
    let secs = elapsed.as_secs_f64();
    let rate = if secs > 0.0 {
        s.bytes_fetched as f64 / secs
    } else {
        0.0
    };
    let left = s.bytes_total.saturating_sub(s.bytes_done);
    let eta = if left == 0 {
        "done".to_string()
    } else if rate >= 1.0 {
        format!("{} left", duration(left as f64 / rate))
    } else {
        "time left unknown".to_string()
    };
    format!(
        "fetched {}/{} files, {} of {} ({pct}%), {}/s, {eta}",
        s.files_done,
        s.files_total,
        human_bytes(s.bytes_done),
        human_bytes(s.bytes_total),
        human_bytes(rate as u64)
    )
}

/// Seconds as `1h02m`, `3m05s`, `42s`.
fn duration(secs: f64) -> String {
    let s = secs.round() as u64;
    match (s / 3600, s % 3600 / 60, s % 60) {
        (0, 0, sec) => format!("{sec}s"),
        (0, m, sec) => format!("{m}m{sec:02}s"),
        (h, m, _) => format!("{h}h{m:02}m"),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_line_says_files_bytes_rate_and_time_left() {
        let s = State {
            files_total: 430,
            bytes_total: 4 << 30,
            files_done: 12,
            bytes_done: 1 << 30,
            bytes_fetched: 1 << 30,
            ..State::default()
        };
        assert_eq!(
            status(&s, Duration::from_secs(10)),
            "fetched 12/430 files, 1.00 GiB of 4.00 GiB (25%), 102.40 MiB/s, 30s left"
        );
        let fresh = State {
            files_total: 2,
            bytes_total: 100,
            ..State::default()
        };
        assert_eq!(
            status(&fresh, Duration::ZERO),
            "fetched 0/2 files, 0 B of 100 B (0%), 0 B/s, time left unknown"
        );
        assert_eq!(duration(3725.0), "1h02m");
        assert_eq!(duration(185.0), "3m05s");
    }
}
