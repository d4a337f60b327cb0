//! Progress of a long check or import: a bar on a terminal, plain lines
//! otherwise (logs, CI), nothing in tests. Plain lines come one per
//! [`LINE_EVERY`] blobs and one at the end, so a bundle of thousands of
//! small files does not bury the result under a line each.

use std::io::IsTerminal;
use std::sync::Mutex;
use std::sync::atomic::{AtomicU64, Ordering};

use crate::store::inspect::human_bytes;

/// Blobs per plain progress line.
pub const LINE_EVERY: u64 = 10;

use indicatif::{ProgressBar, ProgressStyle};

/// What a long-running check reports as it goes.
pub trait Progress {
    /// The check will read about this many bytes of blobs.
    fn begin(&self, _total_bytes: u64) {}
    /// A blob starts.
    fn blob(&self, _entry: &str, _size: u64) {}
    /// More bytes were read.
    fn advance(&self, _bytes: u64) {}
    /// The check ended (successfully or not).
    fn finish(&self) {}
}

/// Reports nothing (the tests' progress).
#[cfg(test)]
pub struct Silent;

#[cfg(test)]
impl Progress for Silent {}

/// A bar on stderr when it is a terminal, else a line every
/// `LINE_EVERY` (10) blobs, so a log shows progress without a line per blob.
pub struct Terminal {
    bar: Mutex<Option<ProgressBar>>,
    tty: bool,
    verb: &'static str,
    total: AtomicU64,
    blobs: AtomicU64,
    bytes: AtomicU64,
}

impl Terminal {
    /// `verb` starts each plain line: "importing", "verifying".
    pub fn new(verb: &'static str) -> Self {
        Self {
            bar: Mutex::new(None),
            tty: std::io::stderr().is_terminal(),
            verb,
            total: AtomicU64::new(0),
            blobs: AtomicU64::new(0),
            bytes: AtomicU64::new(0),
        }
    }

    /// The plain line: blobs started so far and bytes read of the total.
    fn line(&self, blobs: u64) -> String {
        format!(
            "{}: {blobs} blobs, {} of {} read",
            self.verb,
            human_bytes(self.bytes.load(Ordering::Relaxed)),
            human_bytes(self.total.load(Ordering::Relaxed))
        )
    }
}

impl Progress for Terminal {
    fn begin(&self, total_bytes: u64) {
        self.total.store(total_bytes, Ordering::Relaxed);
        if !self.tty {
            eprintln!(
                "{}: {} of blobs to read",
                self.verb,
                human_bytes(total_bytes)
            );
            return;
        }
        let bar = ProgressBar::new(total_bytes);
        if let Ok(style) = ProgressStyle::with_template(
            "{msg:20!} [{bar:30}] {bytes}/{total_bytes} {bytes_per_sec} eta {eta}",
        ) {
            bar.set_style(style.progress_chars("=> "));
        }
        bar.set_message(self.verb);
        if let Ok(mut b) = self.bar.lock() {
            *b = Some(bar);
        }
    }

    fn blob(&self, _entry: &str, _size: u64) {
        // A line when a tenth blob starts: it reports the nine before it
        // as read, and the last line (at finish) the rest.
        let started = self.blobs.fetch_add(1, Ordering::Relaxed) + 1;
        if !self.tty && started > 1 && (started - 1).is_multiple_of(LINE_EVERY) {
            eprintln!("{}", self.line(started - 1));
        }
    }

    fn advance(&self, bytes: u64) {
        self.bytes.fetch_add(bytes, Ordering::Relaxed);
        if let Ok(b) = self.bar.lock()
            && let Some(bar) = b.as_ref()
        {
            bar.inc(bytes);
        }
    }

    fn finish(&self) {
        if !self.tty {
            eprintln!("{}", self.line(self.blobs.load(Ordering::Relaxed)));
        }
        if let Ok(mut b) = self.bar.lock()
            && let Some(bar) = b.take()
        {
            bar.finish_and_clear();
        }
    }
}
