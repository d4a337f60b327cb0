//! What a long run reports as it goes — a bundle being made, a bundle
//! imported or verified, a store checked — as events, and nothing about
//! how they are shown. The libraries send the events (and the words of
//! their messages); the binary renders them (a line redrawn on a terminal,
//! plain lines every few seconds in a log); a library caller or a test
//! passes [`Quiet`].
//!
//! Invariant: a sender's counts only grow, and a file is counted done once:
//! [`Progress::file_done`] once per file, when it is found in the cache or
//! planned as stored, or when its download or read is verified; each byte
//! is sent once, as [`Progress::advanced`] when it is moved in this run or
//! as [`Progress::credited`] when it is not.

/// The events of a long run. Every method has an empty default, so a sink
/// implements only what it shows; all take `&self` (a run reports from
/// several tasks at once).
pub trait Progress: Send + Sync {
    /// The whole is known: `files` files or blobs when they are counted
    /// ahead (a bundle's plan), and `bytes` bytes to move.
    fn begin(&self, _files: Option<u64>, _bytes: u64) {}

    /// A file or blob starts being fetched or read: its name and size.
    fn started(&self, _name: &str, _size: u64) {}

    /// `bytes` more were fetched or read in this run.
    fn advanced(&self, _bytes: u64) {}

    /// `bytes` count as done without being moved in this run: a file found
    /// in the cache or planned as stored, the part an earlier run fetched.
    fn credited(&self, _bytes: u64) {}

    /// One file is done: found, or fetched (or read) and verified.
    fn file_done(&self) {}

    /// A line of its own: what the run does (resolving, writing, a resume,
    /// a retry), already in words.
    fn message(&self, _line: &str) {}

    /// A line about one file, shown only when a line per file is asked for
    /// (`-v`).
    fn file_message(&self, _line: &str) {}

    /// The run ended, successfully or not: the last state is shown and the
    /// terminal left clean for the result.
    fn finish(&self) {}
}

/// Shows nothing: the sink of tests and of library callers that print
/// their own report.
#[derive(Debug, Clone, Copy, Default)]
pub struct Quiet;

impl Progress for Quiet {}

/// `1.50 GiB`: a byte count with a binary prefix and two decimals (`15 B`
/// below 1 KiB), the way every size is printed to an operator — the same
/// text as `indicatif::HumanBytes`, so the progress lines and the messages
/// agree (the binary's tests hold the two equal).
pub fn human_bytes(n: u64) -> String {
    const PREFIXES: [&str; 8] = ["Ki", "Mi", "Gi", "Ti", "Pi", "Ei", "Zi", "Yi"];
    let mut amount = n as f64;
    let mut prefix = 0;
    while amount >= 1024.0 && prefix < PREFIXES.len() {
        amount /= 1024.0;
        prefix += 1;
    }
    match prefix {
        0 => format!("{amount:.0} B"),
        p => format!("{amount:.2} {}B", PREFIXES[p - 1]),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn bytes_read_with_a_binary_prefix() {
        assert_eq!(human_bytes(0), "0 B");
        assert_eq!(human_bytes(1023), "1023 B");
        assert_eq!(human_bytes(1024), "1.00 KiB");
        assert_eq!(human_bytes(1_500), "1.46 KiB");
        assert_eq!(human_bytes(1_500_000_000), "1.40 GiB");
        assert_eq!(human_bytes(u64::MAX), "16.00 EiB");
    }
}
