//! The connections open and their clocks: the cap, eviction of the quiet
//! ones, and the reaper that closes a stalled one (see the invariant in
//! [`super`]).

use std::collections::HashMap;
use std::net::SocketAddr;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Arc, Mutex, Weak};
use std::time::{Duration, Instant};

use futures_util::task::AtomicWaker;
use tokio::sync::{OwnedSemaphorePermit, Semaphore};

/// The limits; `Default` gives the ones `mirror serve` runs with.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct ConnLimits {
    /// Connections open at most (each may also hold one blob file open).
    pub max_connections: usize,
    /// A request must arrive whole within this long of its first byte.
    pub header_timeout: Duration,
    /// A kept-alive connection with no new request is closed after this.
    pub idle_timeout: Duration,
    /// A client that takes no byte of its answer for this long is dropped.
    pub send_timeout: Duration,
}

impl Default for ConnLimits {
    fn default() -> Self {
        Self {
            max_connections: default_max_connections(),
            header_timeout: Duration::from_secs(10),
            idle_timeout: Duration::from_secs(30),
            send_timeout: Duration::from_secs(60),
        }
    }
}

/// File descriptors kept for everything but connections: the runtime, the
/// listener, the store's folders and manifests.
const FD_RESERVE: u64 = 64;

/// Half of what the process may open beyond `FD_RESERVE` (64; a connection
/// and the blob it sends), between 16 and 10 000.
pub fn default_max_connections() -> usize {
    // No soft limit (`None`) is as good as the most we would use.
    let fds = rustix::process::getrlimit(rustix::process::Resource::Nofile)
        .current
        .unwrap_or(u64::MAX);
    (fds.saturating_sub(FD_RESERVE) / 2).clamp(16, 10_000) as usize
}

/// A connection quiet for less than this is never closed to make room:
/// it may be a client about to send its request.
const MIN_QUIET_TO_EVICT: Duration = Duration::from_millis(50);

/// Summaries of closed connections are logged at most this often.
pub(super) const LOG_EVERY: Duration = Duration::from_secs(10);

pub(super) const NONE: u64 = u64::MAX;

/// What one connection has done, in milliseconds since [`Conns::epoch`].
pub(super) struct Activity {
    pub(super) peer: SocketAddr,
    pub(super) last_io: AtomicU64,
    /// The first byte read since the last byte written (accept time for a
    /// new connection): a request is coming in and is not answered yet.
    pub(super) unanswered_since: AtomicU64,
    /// When a write found the client's window full and had to wait.
    pub(super) write_blocked_since: AtomicU64,
    pub(super) closed: AtomicBool,
    pub(super) read_waker: AtomicWaker,
    pub(super) write_waker: AtomicWaker,
}

/// Why a connection was closed.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Stall {
    Request,
    Idle,
    Send,
    Evicted,
}

enum Event {
    Closed(Stall),
    /// At the cap with no quiet connection to close.
    Waited,
}

#[derive(Default)]
struct Tally {
    request: u64,
    idle: u64,
    send: u64,
    evicted: u64,
    waited: u64,
}

/// Every open connection, shared by the listener, the streams and the reaper.
pub struct Conns {
    limits: ConnLimits,
    epoch: Instant,
    permits: Arc<Semaphore>,
    open: Mutex<HashMap<u64, Arc<Activity>>>,
    next_id: AtomicU64,
    /// When a summary was last logged, and what happened since.
    tally: Mutex<(Option<Instant>, Tally)>,
}

impl Conns {
    pub fn new(limits: ConnLimits) -> Arc<Self> {
        let limits = ConnLimits {
            max_connections: limits.max_connections.max(1),
            ..limits
        };
        Arc::new(Self {
            limits,
            epoch: Instant::now(),
            permits: Arc::new(Semaphore::new(limits.max_connections)),
            open: Mutex::default(),
            next_id: AtomicU64::new(0),
            tally: Mutex::default(),
        })
    }

    pub fn limits(&self) -> ConnLimits {
        self.limits
    }

    /// Connections open now.
    pub fn open(&self) -> usize {
        self.lock().len()
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, HashMap<u64, Arc<Activity>>> {
        self.open.lock().unwrap_or_else(|p| p.into_inner())
    }

    pub(super) fn now(&self) -> u64 {
        self.epoch.elapsed().as_millis() as u64
    }

    /// A place for one more connection: at once below the cap; at the cap,
    /// after closing the connection quiet longest, or when one closes.
    pub(super) async fn permit(&self) -> OwnedSemaphorePermit {
        let mut waited = false;
        loop {
            if let Ok(p) = self.permits.clone().try_acquire_owned() {
                return p;
            }
            let evicted = self.evict_quietest();
            if !evicted && !waited {
                waited = true;
                self.count(Event::Waited);
            }
            tokio::select! {
                p = self.permits.clone().acquire_owned() => {
                    if let Ok(p) = p {
                        return p;
                    }
                }
                _ = tokio::time::sleep(MIN_QUIET_TO_EVICT / 4) => {}
            }
        }
    }

    /// Closes the connection quiet longest that is not being answered.
    fn evict_quietest(&self) -> bool {
        let now = self.now();
        let min_quiet = MIN_QUIET_TO_EVICT.as_millis() as u64;
        let victim = self
            .lock()
            .values()
            .filter(|a| !a.closed.load(Ordering::Relaxed))
            .filter(|a| a.write_blocked_since.load(Ordering::Relaxed) == NONE)
            .map(|a| (now.saturating_sub(a.last_io.load(Ordering::Relaxed)), a))
            .filter(|(quiet, _)| *quiet >= min_quiet)
            .max_by_key(|(quiet, _)| *quiet)
            .map(|(_, a)| a.clone());
        match victim {
            Some(a) => {
                self.close(&a, Stall::Evicted);
                true
            }
            None => false,
        }
    }

    fn close(&self, a: &Activity, why: Stall) {
        if a.closed.swap(true, Ordering::AcqRel) {
            return;
        }
        tracing::debug!(target: "llmgw::conn", peer = %a.peer, reason = ?why, "closing connection");
        a.read_waker.wake();
        a.write_waker.wake();
        self.count(Event::Closed(why));
    }

    /// Counts an event and logs a summary at once if none was logged in the
    /// last [`LOG_EVERY`] (else the reaper does later), so an attack gives
    /// a few clear lines, not one per connection.
    fn count(&self, e: Event) {
        let mut g = self.tally.lock().unwrap_or_else(|p| p.into_inner());
        let t = &mut g.1;
        match e {
            Event::Closed(Stall::Request) => t.request += 1,
            Event::Closed(Stall::Idle) => t.idle += 1,
            Event::Closed(Stall::Send) => t.send += 1,
            Event::Closed(Stall::Evicted) => t.evicted += 1,
            Event::Waited => t.waited += 1,
        }
        drop(g);
        self.flush_log();
    }

    /// Logs what was counted, if the last summary is old enough.
    fn flush_log(&self) {
        let mut g = self.tally.lock().unwrap_or_else(|p| p.into_inner());
        if g.0.is_some_and(|t| t.elapsed() < LOG_EVERY) {
            return;
        }
        let t = std::mem::take(&mut g.1);
        if t.request + t.idle + t.send + t.evicted + t.waited == 0 {
            return;
        }
        g.0 = Some(Instant::now());
        drop(g);
        self.log(&t);
    }

    fn log(&self, t: &Tally) {
        let l = &self.limits;
        if t.evicted > 0 || t.waited > 0 {
            tracing::warn!(
                target: "llmgw::conn",
                "connection cap {} reached: closed {} quiet (idle or half-sent) connections to \
                 make room; {} times every connection was busy and new ones waited in the listen \
                 backlog (raise --max-connections and the fd limit if real clients wait)",
                l.max_connections,
                t.evicted,
                t.waited
            );
        }
        if t.request + t.idle + t.send > 0 {
            tracing::info!(
                target: "llmgw::conn",
                "closed stalled connections: {} did not send a whole request within {} s, {} \
                 were idle for {} s, {} took no byte of their answer for {} s",
                t.request,
                l.header_timeout.as_secs_f64(),
                t.idle,
                l.idle_timeout.as_secs_f64(),
                t.send,
                l.send_timeout.as_secs_f64()
            );
        }
    }

    /// One pass of the reaper: closes every connection over a limit.
    fn reap(&self) {
        let now = self.now();
        let ms = |d: Duration| d.as_millis() as u64;
        let l = self.limits;
        let stalled: Vec<(Arc<Activity>, Stall)> = self
            .lock()
            .values()
            .filter(|a| !a.closed.load(Ordering::Relaxed))
            .filter_map(|a| {
                let since = |x: &AtomicU64| match x.load(Ordering::Relaxed) {
                    NONE => None,
                    t => Some(now.saturating_sub(t)),
                };
                let why = if let Some(w) = since(&a.write_blocked_since) {
                    (w > ms(l.send_timeout)).then_some(Stall::Send)
                } else if let Some(r) = since(&a.unanswered_since) {
                    (r > ms(l.header_timeout)).then_some(Stall::Request)
                } else {
                    let quiet = now.saturating_sub(a.last_io.load(Ordering::Relaxed));
                    (quiet > ms(l.idle_timeout)).then_some(Stall::Idle)
                };
                why.map(|w| (a.clone(), w))
            })
            .collect();
        for (a, why) in stalled {
            self.close(&a, why);
        }
        self.flush_log();
    }

    /// Counts a new connection's activity as open, under a fresh id.
    pub(super) fn register(&self, act: Arc<Activity>) -> u64 {
        let id = self.next_id.fetch_add(1, Ordering::Relaxed);
        self.lock().insert(id, act);
        id
    }

    /// Forgets a connection that closed.
    pub(super) fn unregister(&self, id: u64) {
        self.lock().remove(&id);
    }
}

/// Checks the clocks until the server is gone.
pub fn spawn_reaper(conns: &Arc<Conns>) -> tokio::task::JoinHandle<()> {
    let l = conns.limits;
    let tick = (l.header_timeout.min(l.idle_timeout).min(l.send_timeout) / 4)
        .clamp(Duration::from_millis(10), Duration::from_secs(1));
    let weak: Weak<Conns> = Arc::downgrade(conns);
    tokio::spawn(async move {
        let mut every = tokio::time::interval(tick);
        every.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
        loop {
            every.tick().await;
            match weak.upgrade() {
                Some(c) => c.reap(),
                None => return,
            }
        }
    })
}
