//! The access log: one line a request, in the shape every other log line
//! has (`tracing_subscriber::fmt`'s, which tests and operators read):
//!
//! `2026-12-06T09:27:58.302718Z  INFO llmgw::access: request method=GET
//! route=hub_revision status=200 bytes=706 ms=0.4 path="/api/models/…"`
//!
//! written by a thread of its own, not by the request's worker: at tens of
//! thousands of cached answers a second, formatting the line through
//! `tracing` took 30 % of a request's instructions and one `write` to
//! stderr each (#35 item 6).
//!
//! Invariant: a request only hands its fields over (a bounded queue, never
//! waiting); the writer formats each line into one reused buffer and writes
//! whole lines, as many as are queued, in one `write_all`. When the queue is
//! full (stderr blocked) a line is dropped and counted, and the count is
//! written as a `WARN` line once the writer catches up: memory stays
//! bounded and no loss is silent. Whether to log at all is `RUST_LOG`'s
//! call for the target `llmgw::access`, as before.

use std::io::Write;
use std::sync::OnceLock;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::mpsc::{Receiver, SyncSender, TrySendError, sync_channel};
use std::time::{SystemTime, UNIX_EPOCH};

use http::{Method, Uri};

use super::route::Route;

/// Lines queued at most (a few hundred bytes each, as fields).
const QUEUE: usize = 16 * 1024;

/// Bytes formatted before they are written, at most.
const BATCH: usize = 64 * 1024;

/// One request's line, as its fields.
pub struct Line {
    pub at: SystemTime,
    pub method: Method,
    pub route: Route,
    pub status: u16,
    pub bytes: u64,
    /// Milliseconds from arrival to the body's end.
    pub ms: f64,
    pub uri: Uri,
    /// The first bytes of the path kept (cut at a character).
    pub path_len: usize,
}

struct Writer {
    queue: SyncSender<Line>,
    dropped: &'static AtomicU64,
}

static WRITER: OnceLock<Option<Writer>> = OnceLock::new();
static DROPPED: AtomicU64 = AtomicU64::new(0);
/// Lines queued, and lines written (or lost to a failed write): a stop
/// waits until the second reaches the first ([`flush`]).
static QUEUED: AtomicU64 = AtomicU64::new(0);
static WRITTEN: AtomicU64 = AtomicU64::new(0);

/// Whether access lines are wanted (`RUST_LOG`, through the subscriber).
pub fn enabled() -> bool {
    tracing::enabled!(target: "llmgw::access", tracing::Level::INFO)
}

/// Queues `line` for the writer thread (started on the first line).
pub fn log(line: Line) {
    let writer = WRITER.get_or_init(|| {
        let (queue, rx) = sync_channel(QUEUE);
        let started = std::thread::Builder::new()
            .name("llmgw-access".into())
            .spawn(move || run(&rx, &DROPPED, &WRITTEN, &mut std::io::stderr()));
        match started {
            Ok(_) => Some(Writer {
                queue,
                dropped: &DROPPED,
            }),
            Err(e) => {
                tracing::error!(error = %e, "cannot start the access log's thread: requests are not logged");
                None
            }
        }
    });
    let Some(w) = writer else { return };
    match w.queue.try_send(line) {
        Ok(()) => {
            QUEUED.fetch_add(1, Ordering::Relaxed);
        }
        Err(TrySendError::Disconnected(_)) => {}
        Err(TrySendError::Full(_)) => {
            w.dropped.fetch_add(1, Ordering::Relaxed);
        }
    }
}

/// Waits until every line queued so far is written, for at most `limit`:
/// a server stopping loses no line of the requests it finished.
pub async fn flush(limit: std::time::Duration) {
    let until = std::time::Instant::now() + limit;
    let queued = QUEUED.load(Ordering::Relaxed);
    while WRITTEN.load(Ordering::Relaxed) < queued && std::time::Instant::now() < until {
        tokio::time::sleep(std::time::Duration::from_millis(2)).await;
    }
}

/// The writer's loop: formats what is queued into one buffer, writes it,
/// and counts the lines in `written`.
fn run(rx: &Receiver<Line>, dropped: &AtomicU64, written: &AtomicU64, out: &mut dyn Write) {
    let mut buf = String::with_capacity(BATCH + 1024);
    let mut clock = Clock::default();
    while let Ok(first) = rx.recv() {
        format(&mut buf, &mut clock, &first);
        let mut lines = 1;
        while buf.len() < BATCH {
            match rx.try_recv() {
                Ok(line) => {
                    format(&mut buf, &mut clock, &line);
                    lines += 1;
                }
                Err(_) => break,
            }
        }
        let lost = dropped.swap(0, Ordering::Relaxed);
        if lost > 0 {
            use std::fmt::Write as _;
            let now = clock.stamp(SystemTime::now());
            let _ = writeln!(
                buf,
                "{now}  WARN llmgw::access: access lines dropped: stderr did not keep up dropped={lost}"
            );
        }
        // Nowhere to say that stderr failed: the line is lost, as
        // tracing's own writer loses it.
        let _ = out.write_all(buf.as_bytes());
        buf.clear();
        written.fetch_add(lines, Ordering::Relaxed);
    }
}

/// Writes one line as `tracing_subscriber::fmt` writes it (without colour).
fn format(buf: &mut String, clock: &mut Clock, l: &Line) {
    use std::fmt::Write as _;
    let path = &l.uri.path()[..l.path_len];
    let _ = writeln!(
        buf,
        "{}  INFO llmgw::access: request method={} route={} status={} bytes={} ms={:?} path={:?}",
        clock.stamp(l.at),
        l.method,
        l.route,
        l.status,
        l.bytes,
        l.ms,
        path
    );
}

/// `2026-12-06T09:27:58.302718Z`, the date and time of day made once a
/// second.
#[derive(Default)]
struct Clock {
    second: u64,
    /// `2026-12-06T09:27:58` of `second`.
    text: String,
    out: String,
}

impl Clock {
    fn stamp(&mut self, at: SystemTime) -> &str {
        use std::fmt::Write as _;
        let d = at.duration_since(UNIX_EPOCH).unwrap_or_default();
        if self.text.is_empty() || d.as_secs() != self.second {
            self.second = d.as_secs();
            let whole = llmgw_shared::rfc3339_utc(self.second);
            self.text = whole.trim_end_matches('Z').to_string();
        }
        self.out.clear();
        let _ = write!(self.out, "{}.{:06}Z", self.text, d.subsec_micros());
        &self.out
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn line(path: &str, ms: f64) -> Line {
        let uri: Uri = path.parse().unwrap();
        let path_len = uri.path().len();
        Line {
            at: UNIX_EPOCH + std::time::Duration::from_micros(1_796_549_278_302_718),
            method: Method::GET,
            route: Route::HubResolve,
            status: 200,
            bytes: 706,
            ms,
            uri,
            path_len,
        }
    }

    /// The line is the one `tracing_subscriber::fmt` wrote: the same
    /// fields, in order, each formatted the same (the path quoted and
    /// escaped, `ms` as a float).
    #[test]
    fn a_line_is_what_tracing_wrote() {
        let mut buf = String::new();
        let mut clock = Clock::default();
        format(&mut buf, &mut clock, &line("/a/b?x=1", 3.0));
        format(&mut buf, &mut clock, &line("/%22q%22", 0.1));
        assert_eq!(
            buf,
            "2026-12-06T09:27:58.302718Z  INFO llmgw::access: request method=GET \
             route=hub_resolve status=200 bytes=706 ms=3.0 path=\"/a/b\"\n\
             2026-12-06T09:27:58.302718Z  INFO llmgw::access: request method=GET \
             route=hub_resolve status=200 bytes=706 ms=0.1 path=\"/%22q%22\"\n"
        );
    }

    /// What is queued is written whole, in order, in one write; a count
    /// of dropped lines is said.
    #[test]
    fn queued_lines_are_written_whole_and_drops_are_said() {
        let (tx, rx) = sync_channel(8);
        tx.send(line("/one", 1.0)).unwrap();
        tx.send(line("/two", 2.0)).unwrap();
        drop(tx);
        let (dropped, written) = (AtomicU64::new(3), AtomicU64::new(0));
        let mut out = Vec::new();
        run(&rx, &dropped, &written, &mut out);
        assert_eq!(written.load(Ordering::Relaxed), 2);
        let text = String::from_utf8(out).unwrap();
        let lines: Vec<&str> = text.lines().collect();
        assert_eq!(lines.len(), 3, "{text}");
        assert!(lines[0].ends_with("path=\"/one\""), "{text}");
        assert!(lines[1].ends_with("path=\"/two\""), "{text}");
        assert!(lines[2].contains("WARN llmgw::access: access lines dropped"));
        assert!(lines[2].ends_with("dropped=3"), "{text}");
    }
}
