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
//! waiting, and waking the writer only when it was idle); the writer
//! formats each line into one reused buffer and writes whole lines, as many
//! as are queued, in one `write_all`, then rests a millisecond so the next
//! ones gather. When the queue is
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

use crate::serve::route::Route;

/// Lines queued at most (a few hundred bytes each, as fields).
const QUEUE: usize = 16 * 1024;

/// Bytes formatted before they are written, at most.
const BATCH: usize = 64 * 1024;

/// How long the writer rests after a write before it looks for more lines:
/// at 100 000 requests a second, a batch of about 100 lines a write and no
/// wake-up a request; a line waits at most this long more to be written.
const GATHER: std::time::Duration = std::time::Duration::from_millis(1);

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
            clock.stamp(&mut buf, SystemTime::now());
            buf.push_str(
                "  WARN llmgw::access: access lines dropped: stderr did not keep up dropped=",
            );
            push_number(&mut buf, lost, 1);
            buf.push('\n');
        }
        // Nowhere to say that stderr failed: the line is lost, as
        // tracing's own writer loses it.
        let _ = out.write_all(buf.as_bytes());
        buf.clear();
        written.fetch_add(lines, Ordering::Relaxed);
        // Let the next lines gather instead of waiting in `recv`: a
        // request finds no writer to wake (a `futex` call each) while the
        // writer is busy or resting, only when it has been idle.
        std::thread::sleep(GATHER);
    }
}

/// Writes one line as `tracing_subscriber::fmt` writes it (without colour):
/// the numbers and a path of plain characters written by hand, anything
/// else through `Debug` as tracing formats it (`core::fmt` took most of the
/// writer's instructions, #35 item 6).
fn format(buf: &mut String, clock: &mut Clock, l: &Line) {
    clock.stamp(buf, l.at);
    buf.push_str("  INFO llmgw::access: request method=");
    buf.push_str(l.method.as_str());
    buf.push_str(" route=");
    buf.push_str(l.route.label());
    buf.push_str(" status=");
    push_number(buf, u64::from(l.status), 1);
    buf.push_str(" bytes=");
    push_number(buf, l.bytes, 1);
    buf.push_str(" ms=");
    push_ms(buf, l.ms);
    buf.push_str(" path=");
    push_path(buf, &l.uri.path()[..l.path_len]);
    buf.push('\n');
}

/// A path quoted and escaped as `{:?}` writes it.
fn push_path(buf: &mut String, path: &str) {
    use std::fmt::Write as _;
    if path
        .bytes()
        .all(|b| (b' '..=b'~').contains(&b) && b != b'"' && b != b'\\')
    {
        // What `Debug` leaves as it is: printable ASCII but the quote
        // and the backslash.
        buf.push('"');
        buf.push_str(path);
        buf.push('"');
    } else {
        let _ = write!(buf, "{path:?}");
    }
}

/// `n` in decimal, with at least `width` digits (zeros in front).
fn push_number(buf: &mut String, mut n: u64, width: usize) {
    let mut digits = [b'0'; 20];
    let mut at = digits.len();
    while n > 0 || digits.len() - at < width {
        at -= 1;
        digits[at] = b'0' + (n % 10) as u8;
        n /= 10;
    }
    // Every byte is an ASCII digit.
    buf.push_str(std::str::from_utf8(&digits[at..]).unwrap_or("?"));
}

/// Milliseconds rounded to a tenth, as `{:?}` writes such an `f64`
/// (`3.0`, `0.1`, `12.5`): whole tenths below 10^12 are written by hand,
/// which is what `Debug` writes for them (the shortest decimal that reads
/// back as the same `f64` has one decimal there); anything else through
/// `Debug`.
fn push_ms(buf: &mut String, ms: f64) {
    use std::fmt::Write as _;
    let tenths = (ms * 10.0).round();
    if (0.0..1e12).contains(&tenths) && tenths / 10.0 == ms {
        let tenths = tenths as u64;
        push_number(buf, tenths / 10, 1);
        buf.push('.');
        push_number(buf, tenths % 10, 1);
    } else {
        let _ = write!(buf, "{ms:?}");
    }
}

/// `2026-12-06T09:27:58.302718Z`, the date and time of day made once a
/// second.
#[derive(Default)]
struct Clock {
    second: u64,
    /// `2026-12-06T09:27:58` of `second`.
    text: String,
}

impl Clock {
    fn stamp(&mut self, buf: &mut String, at: SystemTime) {
        let d = at.duration_since(UNIX_EPOCH).unwrap_or_default();
        if self.text.is_empty() || d.as_secs() != self.second {
            self.second = d.as_secs();
            let whole = llmgw_shared::rfc3339_utc(self.second);
            self.text = whole.trim_end_matches('Z').to_string();
        }
        buf.push_str(&self.text);
        buf.push('.');
        push_number(buf, u64::from(d.subsec_micros()), 6);
        buf.push('Z');
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

    /// The line written by hand is the one `core::fmt` writes, for the
    /// numbers, times and paths each branch takes: whole and odd tenths of
    /// a millisecond, long requests, a path `Debug` escapes (a quote, a
    /// backslash, a control character, non-ASCII) and one it does not.
    #[test]
    fn a_line_by_hand_is_the_one_fmt_writes() {
        let paths = [
            "/a/b",
            "/%22q%22",
            "/\"q\"",
            "/a\\b",
            "/t\tab",
            "/caf\u{e9}",
            "/ok~ !#$",
        ];
        let times = [
            0.0,
            0.1,
            0.4,
            3.0,
            12.5,
            999.9,
            1234567.8,
            86_400_000.3,
            1e13,
            2.5e20,
        ];
        let mut clock = Clock::default();
        for (i, path) in paths.iter().enumerate() {
            for (j, ms) in times.iter().enumerate() {
                let at = UNIX_EPOCH
                    + std::time::Duration::from_micros(1_796_549_278_000_000 + (i * 7 + j) as u64);
                let uri = Uri::builder().path_and_query(*path).build();
                // A path `Uri` refuses is still written as `Debug` would.
                let Ok(uri) = uri else { continue };
                let l = Line {
                    at,
                    method: Method::HEAD,
                    route: Route::HubRevision,
                    status: 304,
                    bytes: (i * 1000 + j) as u64,
                    ms: *ms,
                    path_len: uri.path().len(),
                    uri,
                };
                let mut buf = String::new();
                format(&mut buf, &mut clock, &l);
                let micros = (i * 7 + j) as u64;
                let want = format!(
                    "2026-12-06T09:27:58.{micros:06}Z  INFO llmgw::access: request method={} \
                     route={} status={} bytes={} ms={:?} path={:?}\n",
                    l.method,
                    l.route,
                    l.status,
                    l.bytes,
                    l.ms,
                    l.uri.path()
                );
                assert_eq!(buf, want);
            }
        }
        let mut buf = String::new();
        push_ms(&mut buf, f64::NAN);
        assert_eq!(buf, "NaN");
        for path in paths {
            let mut buf = String::new();
            push_path(&mut buf, path);
            assert_eq!(buf, format!("{path:?}"));
        }
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
