//! What the operator sees while a bundle is made: one progress line —
//! files and bytes done of the total, the download rate, the time left —
//! redrawn in place on a terminal and printed every few seconds otherwise
//! (a log keeps it readably), with a line per file only when asked
//! (`-v`). Messages (resolving, resumes, retries) are lines of their own
//! above it. Nothing here goes to stdout, which belongs to the result (the
//! manifest sha256, or `--json`).
//!
//! Invariant: the counts only grow, and a file is counted done once: when
//! it is found in the cache or planned as stored, or when its download is
//! verified.

use std::io::Write;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

/// How progress is shown.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Mode {
    /// stderr is a terminal: the progress line is redrawn in place.
    Bars,
    /// The progress line every [`LINE_EVERY`] on stderr, one line each.
    Lines,
    /// Nothing (library callers, tests).
    Quiet,
}

/// How often the progress line is printed when stderr is not a terminal.
pub const LINE_EVERY: Duration = Duration::from_secs(5);
/// How often it is redrawn on a terminal at most.
const REDRAW_EVERY: Duration = Duration::from_millis(200);

/// What a run shows while it fetches and writes, in the [`Mode`] chosen;
/// clones share one display.
#[derive(Clone)]
pub struct Progress {
    inner: Arc<Inner>,
}

struct Inner {
    mode: Mode,
    /// A line per file (`-v`).
    verbose: bool,
    state: Mutex<State>,
}

#[derive(Default)]
struct State {
    files_total: usize,
    bytes_total: u64,
    files_done: usize,
    bytes_done: u64,
    /// Bytes that came over the network: what the rate is of.
    bytes_fetched: u64,
    started: Option<Instant>,
    last_shown: Option<Instant>,
    /// A redrawn line is on the terminal (a message must clear it first).
    on_screen: bool,
}

impl Progress {
    /// A display in `mode`, without a line per file.
    pub fn new(mode: Mode) -> Self {
        Self::with_files(mode, false)
    }

    /// A display in `mode`; `verbose` adds a line per file.
    pub fn with_files(mode: Mode, verbose: bool) -> Self {
        Self {
            inner: Arc::new(Inner {
                mode,
                verbose,
                state: Mutex::new(State::default()),
            }),
        }
    }

    /// The mode it was made with.
    pub fn mode(&self) -> Mode {
        self.inner.mode
    }

    fn state(&self) -> std::sync::MutexGuard<'_, State> {
        // A panic elsewhere while holding it leaves counts, not invariants.
        self.inner
            .state
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
    }

    /// Sets the whole, once it is known: files and bytes.
    pub fn set_total(&self, files: usize, bytes: u64) {
        let mut s = self.state();
        s.files_total = files;
        s.bytes_total = bytes;
        s.started = Some(Instant::now());
    }

    /// Counts a whole file that needed no download (in the cache, or
    /// planned as stored).
    pub fn add_done(&self, bytes: u64) {
        let mut s = self.state();
        s.files_done += 1;
        s.bytes_done += bytes;
        self.show(&mut s, false);
    }

    /// A message line.
    pub fn line(&self, msg: &str) {
        match self.inner.mode {
            Mode::Quiet => {}
            Mode::Lines => eprintln!("{msg}"),
            Mode::Bars => {
                let mut s = self.state();
                let mut err = std::io::stderr().lock();
                let clear = if s.on_screen { "\r\x1b[K" } else { "" };
                let _ = writeln!(err, "{clear}{msg}");
                s.on_screen = false;
                drop(err);
                self.show(&mut s, true);
            }
        }
    }

    /// A line about one file, shown under `-v` only.
    pub fn file_line(&self, msg: &str) {
        if self.inner.verbose {
            self.line(msg);
        }
    }

    /// Starts showing one download.
    pub fn item(&self, label: &str, size: u64) -> Item {
        self.file_line(&format!("{label}: downloading {size} bytes"));
        Item {
            label: label.to_string(),
            progress: self.clone(),
        }
    }

    /// Prints the progress line if it is due (or `now`), in the mode's way.
    fn show(&self, s: &mut State, now: bool) {
        let Some(started) = s.started else {
            return;
        };
        let every = match self.inner.mode {
            Mode::Quiet => return,
            Mode::Bars => REDRAW_EVERY,
            Mode::Lines => LINE_EVERY,
        };
        let due = now || s.last_shown.is_none_or(|t| t.elapsed() >= every);
        if !due || (self.inner.mode == Mode::Lines && now) {
            return;
        }
        s.last_shown = Some(Instant::now());
        let text = status(s, started.elapsed());
        let mut err = std::io::stderr().lock();
        if self.inner.mode == Mode::Bars {
            let _ = write!(err, "\r\x1b[K{text}");
            let _ = err.flush();
            s.on_screen = true;
        } else {
            let _ = writeln!(err, "{text}");
        }
    }

    /// The last progress line, then the terminal left clean for the
    /// result.
    pub fn finish(&self) {
        let mut s = self.state();
        if s.started.is_none() {
            return;
        }
        let text = status(&s, s.started.map_or(Duration::ZERO, |t| t.elapsed()));
        match self.inner.mode {
            Mode::Quiet => {}
            Mode::Lines => eprintln!("{text}"),
            Mode::Bars => {
                eprintln!("\r\x1b[K{text}");
                s.on_screen = false;
            }
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
        bytes(s.bytes_done as f64),
        bytes(s.bytes_total as f64),
        bytes(rate)
    )
}

/// Bytes as the rest of llmgw prints them (indicatif's `1.50 GiB`).
fn bytes(n: f64) -> String {
    indicatif::HumanBytes(n as u64).to_string()
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

/// One download's progress.
pub struct Item {
    label: String,
    progress: Progress,
}

impl Item {
    /// Bytes that arrived.
    pub fn inc(&self, n: u64) {
        let mut s = self.progress.state();
        s.bytes_done += n;
        s.bytes_fetched += n;
        self.progress.show(&mut s, false);
    }

    /// Bytes an earlier run left, which this one continues after.
    pub fn resumed(&self, offset: u64) {
        self.progress.state().bytes_done += offset;
        self.progress.line(&format!(
            "{}: resuming after {offset} bytes an earlier run fetched",
            self.label
        ));
    }

    /// The server sent the whole file again instead of the range asked for.
    pub fn restarted(&self) {
        self.progress.line(&format!(
            "{}: the server ignored the range asked for; starting over",
            self.label
        ));
    }

    pub fn retry(&self, attempt: u32, why: &str) {
        self.progress.line(&format!(
            "{}: attempt {attempt} failed ({why}); retrying",
            self.label
        ));
    }

    /// The file arrived whole and verified.
    pub fn done(&self) {
        self.progress.state().files_done += 1;
        self.progress
            .file_line(&format!("{}: downloaded and verified", self.label));
    }

    pub fn failed(&self) {}
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
