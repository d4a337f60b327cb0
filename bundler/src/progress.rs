//! What the operator sees while a bundle is made: on a terminal, a bar per
//! download and one for the whole (indicatif); otherwise plain lines on
//! stderr that a log keeps readably. Nothing here goes to stdout, which
//! belongs to the result (the manifest sha256, or `--json`).

use std::sync::Arc;

use indicatif::{MultiProgress, ProgressBar, ProgressDrawTarget, ProgressStyle};

/// How progress is shown.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Mode {
    /// indicatif bars (stderr is a terminal).
    Bars,
    /// One line per event on stderr.
    Lines,
    /// Nothing (library callers, tests).
    Quiet,
}

/// What a run shows while it fetches and writes, in the [`Mode`] chosen;
/// clones share one display.
#[derive(Clone)]
pub struct Progress {
    inner: Arc<Inner>,
}

struct Inner {
    mode: Mode,
    multi: Option<MultiProgress>,
    total: Option<ProgressBar>,
}

impl Progress {
    /// A display in `mode`; bars draw on stderr, never stdout (which holds
    /// `--json` output).
    pub fn new(mode: Mode) -> Self {
        let (multi, total) = if mode == Mode::Bars {
            let m = MultiProgress::with_draw_target(ProgressDrawTarget::stderr());
            let t = m.add(ProgressBar::new(0));
            t.set_style(
                ProgressStyle::with_template(
                    "{prefix:>12} [{bar:40}] {bytes}/{total_bytes} {bytes_per_sec} eta {eta}",
                )
                .unwrap_or_else(|_| ProgressStyle::default_bar())
                .progress_chars("=> "),
            );
            t.set_prefix("total");
            (Some(m), Some(t))
        } else {
            (None, None)
        };
        Self {
            inner: Arc::new(Inner { mode, multi, total }),
        }
    }

    /// The mode it was made with.
    pub fn mode(&self) -> Mode {
        self.inner.mode
    }

    /// Sets the size of the whole, once it is known.
    pub fn set_total(&self, bytes: u64) {
        if let Some(t) = &self.inner.total {
            t.set_length(bytes);
        }
    }

    /// Counts bytes that needed no download (found in the cache).
    pub fn add_done(&self, bytes: u64) {
        if let Some(t) = &self.inner.total {
            t.inc(bytes);
        }
    }

    /// A message line.
    pub fn line(&self, msg: &str) {
        match (&self.inner.mode, &self.inner.multi) {
            (Mode::Bars, Some(m)) => {
                let _ = m.println(msg);
            }
            (Mode::Lines, _) => eprintln!("{msg}"),
            _ => {}
        }
    }

    /// Starts showing one download.
    pub fn item(&self, label: &str, size: u64) -> Item {
        let bar = self.inner.multi.as_ref().map(|m| {
            let b = m.insert_from_back(1, ProgressBar::new(size));
            b.set_style(
                ProgressStyle::with_template(
                    "{wide_msg} [{bar:30}] {bytes}/{total_bytes} {bytes_per_sec}",
                )
                .unwrap_or_else(|_| ProgressStyle::default_bar())
                .progress_chars("=> "),
            );
            b.set_message(label.to_string());
            b
        });
        if self.inner.mode == Mode::Lines {
            eprintln!("{label}: downloading {size} bytes");
        }
        Item {
            bar,
            label: label.to_string(),
            progress: self.clone(),
        }
    }

    /// Removes the bars, leaving the terminal clean for the result.
    pub fn finish(&self) {
        if let Some(t) = &self.inner.total {
            t.finish_and_clear();
        }
        if let Some(m) = &self.inner.multi {
            let _ = m.clear();
        }
    }
}

/// One download's progress.
pub struct Item {
    bar: Option<ProgressBar>,
    label: String,
    progress: Progress,
}

impl Item {
    pub fn inc(&self, n: u64) {
        if let Some(b) = &self.bar {
            b.inc(n);
        }
        self.progress.add_done(n);
    }

    /// Bytes an earlier run left, which this one continues after.
    pub fn resumed(&self, offset: u64) {
        if let Some(b) = &self.bar {
            b.set_position(offset);
        }
        self.progress.add_done(offset);
        self.progress.line(&format!(
            "{}: resuming after {offset} bytes an earlier run fetched",
            self.label
        ));
    }

    /// The server sent the whole file again instead of the range asked for.
    pub fn restarted(&self) {
        if let Some(b) = &self.bar {
            b.set_position(0);
        }
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

    pub fn done(&self) {
        if let Some(b) = &self.bar {
            b.finish_and_clear();
        }
        self.progress
            .line(&format!("{}: downloaded and verified", self.label));
    }

    pub fn failed(&self) {
        if let Some(b) = &self.bar {
            b.abandon();
        }
    }
}
