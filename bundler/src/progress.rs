//! What a bundle create reports while it runs, as the events of
//! [`llmgw_shared::progress::Progress`] with the words of its messages:
//! the binary shows them (one line redrawn on a terminal, plain lines in a
//! log), a library caller or a test passes `Quiet`.
//!
//! Invariant: the counts only grow, and a file is counted done once: when
//! it is found in the cache or planned as stored ([`found`]), or when its
//! download is verified ([`Item::done`]); each byte is sent once, as
//! fetched ([`Item::inc`]) or as credited (found, or resumed after an
//! earlier run).

use std::sync::Arc;

use llmgw_shared::progress::Progress;

/// The run's progress sink, shared by the tasks that fetch.
pub type Events = Arc<dyn Progress>;

/// Counts a whole file that needed no download (in the cache, or planned
/// as stored).
pub fn found(progress: &dyn Progress, bytes: u64) {
    progress.credited(bytes);
    progress.file_done();
}

/// One download's progress: its events, its messages naming the file.
pub struct Item {
    label: String,
    progress: Events,
}

impl Item {
    /// Starts showing one download.
    pub fn start(progress: &Events, label: &str, size: u64) -> Self {
        progress.file_message(&format!("{label}: downloading {size} bytes"));
        progress.started(label, size);
        Self {
            label: label.to_string(),
            progress: progress.clone(),
        }
    }

    /// Bytes that arrived.
    pub fn inc(&self, n: u64) {
        self.progress.advanced(n);
    }

    /// Bytes an earlier run left, which this one continues after.
    pub fn resumed(&self, offset: u64) {
        self.progress.credited(offset);
        self.progress.message(&format!(
            "{}: resuming after {offset} bytes an earlier run fetched",
            self.label
        ));
    }

    /// The server sent the whole file again instead of the range asked for.
    pub fn restarted(&self) {
        self.progress.message(&format!(
            "{}: the server ignored the range asked for; starting over",
            self.label
        ));
    }

    /// An attempt failed and another follows.
    pub fn retry(&self, attempt: u32, why: &str) {
        self.progress.message(&format!(
            "{}: attempt {attempt} failed ({why}); retrying",
            self.label
        ));
    }

    /// The file arrived whole and verified.
    pub fn done(&self) {
        self.progress.file_done();
        self.progress
            .file_message(&format!("{}: downloaded and verified", self.label));
    }

    /// The download failed for good (the run's error says why).
    pub fn failed(&self) {}
}

#[cfg(test)]
mod tests {
    use std::sync::Mutex;

    use super::*;

    /// Keeps the counts a renderer would show.
    #[derive(Default)]
    struct Counts(Mutex<(u64, u64, u64, Vec<String>)>);

    impl Progress for Counts {
        fn advanced(&self, bytes: u64) {
            self.0.lock().unwrap().0 += bytes;
        }
        fn credited(&self, bytes: u64) {
            self.0.lock().unwrap().1 += bytes;
        }
        fn file_done(&self) {
            self.0.lock().unwrap().2 += 1;
        }
        fn message(&self, line: &str) {
            self.0.lock().unwrap().3.push(line.to_string());
        }
    }

    #[test]
    fn each_file_is_counted_done_once_and_each_byte_once() {
        let counts = Arc::new(Counts::default());
        let sink: Events = counts.clone();
        found(sink.as_ref(), 100);
        let item = Item::start(&sink, "blob a", 50);
        item.resumed(20);
        item.inc(30);
        item.done();
        let (fetched, credited, files, lines) = &*counts.0.lock().unwrap();
        assert_eq!((*fetched, *credited, *files), (30, 120, 2));
        assert_eq!(
            lines,
            &["blob a: resuming after 20 bytes an earlier run fetched"]
        );
    }
}
