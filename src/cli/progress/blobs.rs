//! The progress of reading blobs (an import, a verify, a store check): a
//! bar of bytes on a terminal, else a line every [`LINE_EVERY`] blobs and
//! one at the end, so a bundle of thousands of small files does not bury
//! the result under a line each.
//!
//! Invariant: the counts only grow; a plain line reports the blobs started
//! before it as read (the tenth blob's start prints the nine before it).

use std::sync::Mutex;
use std::sync::atomic::{AtomicU64, Ordering};

use indicatif::{ProgressBar, ProgressStyle};
use llmgw_shared::progress::{Progress, human_bytes};

/// Blobs per plain progress line.
pub const LINE_EVERY: u64 = 10;

/// A bar on stderr when it is a terminal, else a line every
/// [`LINE_EVERY`] blobs.
pub struct Blobs {
    bar: Mutex<Option<ProgressBar>>,
    tty: bool,
    verb: &'static str,
    total: AtomicU64,
    blobs: AtomicU64,
    bytes: AtomicU64,
}

impl Blobs {
    /// `verb` starts each plain line: "importing", "verifying".
    pub fn new(verb: &'static str) -> Self {
        Self {
            bar: Mutex::new(None),
            tty: super::stderr_is_terminal(),
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

impl Progress for Blobs {
    fn begin(&self, _files: Option<u64>, bytes: u64) {
        self.total.store(bytes, Ordering::Relaxed);
        if !self.tty {
            eprintln!("{}: {} of blobs to read", self.verb, human_bytes(bytes));
            return;
        }
        let bar = ProgressBar::new(bytes);
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

    fn started(&self, _name: &str, _size: u64) {
        // A line when a tenth blob starts: it reports the nine before it
        // as read, and the last line (at finish) the rest.
        let started = self.blobs.fetch_add(1, Ordering::Relaxed) + 1;
        if !self.tty && started > 1 && (started - 1).is_multiple_of(LINE_EVERY) {
            eprintln!("{}", self.line(started - 1));
        }
    }

    fn advanced(&self, bytes: u64) {
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

#[cfg(test)]
mod tests {
    use llmgw_shared::progress::human_bytes;

    /// The libraries print sizes with `human_bytes`, the bars with
    /// indicatif: the two must read the same.
    #[test]
    fn human_bytes_reads_as_indicatif_does() {
        let mut n = 1u64;
        for _ in 0..64 {
            for m in [n - 1, n, n + n / 3, n.saturating_mul(3) / 2] {
                assert_eq!(human_bytes(m), indicatif::HumanBytes(m).to_string(), "{m}");
            }
            n = n.saturating_mul(2);
        }
        for m in [1_500, 1_048_575, 1_048_576, 999_999_999_999, u64::MAX] {
            assert_eq!(human_bytes(m), indicatif::HumanBytes(m).to_string(), "{m}");
        }
    }
}
