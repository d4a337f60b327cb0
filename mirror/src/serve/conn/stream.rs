//! The listener and each connection's stream as `axum_server` drives them:
//! accepting waits for a place under the cap, and every byte read or
//! written is recorded, so the reaper sees progress and can fail a stalled
//! stream's next read or write.

use std::io;
use std::net::SocketAddr;
use std::pin::Pin;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::task::{Context, Poll};
use std::time::Instant;

use futures_util::task::AtomicWaker;
use tokio::io::{AsyncRead, AsyncWrite, ReadBuf};
use tokio::net::{TcpListener, TcpStream};
use tokio::sync::OwnedSemaphorePermit;

use super::conns::{Activity, Conns, LOG_EVERY, NONE};

/// The listen address as `axum_server` sees it: accepting goes through the
/// cap.
#[derive(Debug, Clone, Copy)]
pub struct ConnAddr(
    #[expect(
        dead_code,
        reason = "axum_server hands the peer over; only Debug shows it"
    )]
    SocketAddr,
);

impl axum_server::Address for ConnAddr {
    type Stream = Tracked;
    type Listener = Listener;
}

/// The listening socket, accepting only while below the cap.
pub struct Listener {
    inner: TcpListener,
    conns: Arc<Conns>,
    /// When an accept error was last logged (they repeat fast).
    last_error_log: Mutex<Option<Instant>>,
}

impl Listener {
    pub fn new(inner: TcpListener, conns: Arc<Conns>) -> Self {
        Self {
            inner,
            conns,
            last_error_log: Mutex::new(None),
        }
    }
}

impl axum_server::AddrListener<Tracked, ConnAddr> for Listener {
    async fn bind_to(_addr: ConnAddr) -> io::Result<Self> {
        Err(io::Error::other("the listener is bound before serving"))
    }

    async fn accept_stream(&self) -> io::Result<(Tracked, ConnAddr)> {
        let permit = self.conns.permit().await;
        match self.inner.accept().await {
            Ok((s, peer)) => Ok((Tracked::new(&self.conns, s, peer, permit), ConnAddr(peer))),
            Err(e) => {
                let mut last = self
                    .last_error_log
                    .lock()
                    .unwrap_or_else(|p| p.into_inner());
                if last.is_none_or(|t| t.elapsed() >= LOG_EVERY) {
                    *last = Some(Instant::now());
                    tracing::error!(
                        target: "llmgw::conn",
                        "cannot accept a connection: {e} ({} open, cap {}); if the process is \
                         out of file descriptors, raise its limit (ulimit -n) or lower \
                         --max-connections",
                        self.conns.open(),
                        self.conns.limits().max_connections
                    );
                }
                Err(e)
            }
        }
    }

    fn get_local_addr(&self) -> io::Result<ConnAddr> {
        self.inner.local_addr().map(ConnAddr)
    }
}

/// A connection's TCP stream, watched for progress.
pub struct Tracked {
    inner: TcpStream,
    act: Arc<Activity>,
    conns: Arc<Conns>,
    id: u64,
    _permit: OwnedSemaphorePermit,
}

impl Drop for Tracked {
    fn drop(&mut self) {
        self.conns.unregister(self.id);
    }
}

fn stalled() -> io::Error {
    io::Error::new(
        io::ErrorKind::TimedOut,
        "connection closed by the mirror's connection limits",
    )
}

impl Tracked {
    /// Watches a connection just accepted, holding its place under the cap.
    fn new(
        conns: &Arc<Conns>,
        inner: TcpStream,
        peer: SocketAddr,
        permit: OwnedSemaphorePermit,
    ) -> Self {
        let now = conns.now();
        let act = Arc::new(Activity {
            peer,
            last_io: AtomicU64::new(now),
            unanswered_since: AtomicU64::new(now),
            write_blocked_since: AtomicU64::new(NONE),
            closed: AtomicBool::new(false),
            read_waker: AtomicWaker::new(),
            write_waker: AtomicWaker::new(),
        });
        let id = conns.register(act.clone());
        Self {
            inner,
            act,
            conns: conns.clone(),
            id,
            _permit: permit,
        }
    }

    fn wrote(&self) {
        let now = self.conns.now();
        self.act.last_io.store(now, Ordering::Relaxed);
        self.act.unanswered_since.store(NONE, Ordering::Relaxed);
        self.act.write_blocked_since.store(NONE, Ordering::Relaxed);
    }

    fn write_waits(&self) {
        let _ = self.act.write_blocked_since.compare_exchange(
            NONE,
            self.conns.now(),
            Ordering::Relaxed,
            Ordering::Relaxed,
        );
    }
}

impl AsyncRead for Tracked {
    fn poll_read(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: &mut ReadBuf<'_>,
    ) -> Poll<io::Result<()>> {
        let this = &mut *self;
        this.act.read_waker.register(cx.waker());
        if this.act.closed.load(Ordering::Acquire) {
            return Poll::Ready(Err(stalled()));
        }
        let before = buf.filled().len();
        let r = Pin::new(&mut this.inner).poll_read(cx, buf);
        if let Poll::Ready(Ok(())) = r
            && buf.filled().len() > before
        {
            let now = this.conns.now();
            this.act.last_io.store(now, Ordering::Relaxed);
            let _ = this.act.unanswered_since.compare_exchange(
                NONE,
                now,
                Ordering::Relaxed,
                Ordering::Relaxed,
            );
        }
        r
    }
}

impl AsyncWrite for Tracked {
    fn poll_write(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: &[u8],
    ) -> Poll<io::Result<usize>> {
        let this = &mut *self;
        this.act.write_waker.register(cx.waker());
        if this.act.closed.load(Ordering::Acquire) {
            return Poll::Ready(Err(stalled()));
        }
        let r = Pin::new(&mut this.inner).poll_write(cx, buf);
        match &r {
            Poll::Ready(Ok(n)) if *n > 0 => this.wrote(),
            Poll::Pending => this.write_waits(),
            _ => {}
        }
        r
    }

    fn poll_write_vectored(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        bufs: &[io::IoSlice<'_>],
    ) -> Poll<io::Result<usize>> {
        let this = &mut *self;
        this.act.write_waker.register(cx.waker());
        if this.act.closed.load(Ordering::Acquire) {
            return Poll::Ready(Err(stalled()));
        }
        let r = Pin::new(&mut this.inner).poll_write_vectored(cx, bufs);
        match &r {
            Poll::Ready(Ok(n)) if *n > 0 => this.wrote(),
            Poll::Pending => this.write_waits(),
            _ => {}
        }
        r
    }

    fn is_write_vectored(&self) -> bool {
        self.inner.is_write_vectored()
    }

    fn poll_flush(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        Pin::new(&mut self.inner).poll_flush(cx)
    }

    fn poll_shutdown(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        Pin::new(&mut self.inner).poll_shutdown(cx)
    }
}
