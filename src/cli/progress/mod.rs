//! How the binary shows the progress events the libraries send
//! ([`llmgw_shared::progress::Progress`]), on stderr, which is not the
//! result's (stdout holds the manifest sha256, or `--json`): [`Fetching`]
//! for `bundle create` (one line of files, bytes, rate and time left) and
//! [`Blobs`] for an import, a verify and a store check (a bar of bytes
//! read). Each draws in place on a terminal and prints plain lines, with no
//! control sequence, to a log.
//!
//! Invariant: the libraries decide what is reported and in which words;
//! this module decides only how and how often it is shown.

mod blobs;
mod fetching;

pub use blobs::Blobs;
pub use fetching::Fetching;

/// Whether stderr is a terminal: the drawing is redrawn in place there,
/// and printed as plain lines anywhere else.
fn stderr_is_terminal() -> bool {
    std::io::IsTerminal::is_terminal(&std::io::stderr())
}
