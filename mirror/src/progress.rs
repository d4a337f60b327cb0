//! Progress of a long check or import: a bar on a terminal, plain lines
//! otherwise (logs, CI), nothing in tests.

use std::io::IsTerminal;
use std::sync::Mutex;

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

/// Reports nothing.
pub struct Silent;

impl Progress for Silent {}

/// A bar on stderr when it is a terminal, else one line per blob.
pub struct Terminal {
    bar: Mutex<Option<ProgressBar>>,
    tty: bool,
    verb: &'static str,
}

impl Terminal {
    /// `verb` starts each plain line: "importing", "verifying".
    pub fn new(verb: &'static str) -> Self {
        Self {
            bar: Mutex::new(None),
            tty: std::io::stderr().is_terminal(),
            verb,
        }
    }
}

impl Progress for Terminal {
    fn begin(&self, total_bytes: u64) {
        if !self.tty {
            eprintln!("{}: {} bytes of blobs to read", self.verb, total_bytes);
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

    fn blob(&self, entry: &str, size: u64) {
        if !self.tty {
            eprintln!("{}: {entry} ({size} bytes)", self.verb);
        }
    }

    fn advance(&self, bytes: u64) {
        if let Ok(b) = self.bar.lock()
            && let Some(bar) = b.as_ref()
        {
            bar.inc(bytes);
        }
    }

    fn finish(&self) {
        if let Ok(mut b) = self.bar.lock()
            && let Some(bar) = b.take()
        {
            bar.finish_and_clear();
        }
    }
}
