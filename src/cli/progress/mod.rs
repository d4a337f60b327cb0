//! How the binary shows the progress events the libraries send
//! ([`llmgw_shared::progress::Progress`]), on stderr, which is not the
//! result's (stdout holds the manifest sha256, or `--json`): [`Fetching`]
//! for `bundle create` (one line of files, bytes, rate and time left) and
//! [`Blobs`] for an import, a verify and a store check (a bar of bytes
//! read). Each draws in place on a terminal and prints plain lines, with no
//! control sequence, to a log.
//!
//! Invariant: the libraries decide what is reported and in which words;
//! this module decides only how and how often it is shown. Every other
//! line on stderr (a log line, the final error) is written through
//! [`stderr_clean`], which clears a redrawn progress line first, so no
//! message is ever glued to it (#53 item 3).

mod blobs;
mod fetching;

pub use blobs::Blobs;
pub use fetching::Fetching;

use std::io::Write;
use std::sync::atomic::{AtomicBool, Ordering};

/// Whether a redrawn progress line is on the terminal now, with no
/// newline after it: the next line written must clear it first.
static LINE_ON_SCREEN: AtomicBool = AtomicBool::new(false);

/// stderr, locked, with a progress line on the terminal cleared first:
/// what a message, a log line and the final error are written through.
pub fn stderr_clean() -> std::io::StderrLock<'static> {
    let mut err = std::io::stderr().lock();
    if LINE_ON_SCREEN.swap(false, Ordering::SeqCst) {
        let _ = write!(err, "\r\x1b[K");
    }
    err
}

/// Draws `text` over the progress line on the terminal (no newline), and
/// remembers that it is there.
fn redraw_line(text: &str) {
    let mut err = stderr_clean();
    let _ = write!(err, "\r\x1b[K{text}");
    let _ = err.flush();
    LINE_ON_SCREEN.store(true, Ordering::SeqCst);
}

/// Whether stderr is a terminal: the drawing is redrawn in place there,
/// and printed as plain lines anywhere else.
fn stderr_is_terminal() -> bool {
    std::io::IsTerminal::is_terminal(&std::io::stderr())
}
