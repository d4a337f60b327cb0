//! How long an upstream may take, so that no server — broken or hostile —
//! can hold a run forever.
//!
//! Invariant: every request ends. Connecting has a timeout; a small
//! document (API JSON, a checksum file, a signature) must arrive whole
//! within [`HttpLimits::deadline`], and a download's head too; every body
//! must bring at least [`HttpLimits::min_bytes`] in each
//! [`HttpLimits::window`] of time spent waiting for it (time spent writing
//! to disk does not count, so a slow disk is never blamed on the server);
//! and a listing has at most [`HttpLimits::max_pages`] pages. A large
//! download has no overall deadline: at the minimum rate it is always
//! moving, and a cut one resumes.

use std::pin::Pin;
use std::task::{Context, Poll};
use std::time::Duration;

use bytes::Bytes;
use futures_util::Stream;
use tokio::time::{Instant, Sleep};

/// The limits; `Default` gives the ones `bundle create` runs with. Tests
/// lower them.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct HttpLimits {
    pub connect_timeout: Duration,
    /// A small document whole, or a download's response head.
    pub deadline: Duration,
    /// A body brings at least `min_bytes` in every `window` of waiting.
    pub window: Duration,
    pub min_bytes: u64,
    /// Pages of one `Link: rel="next"` listing at most.
    pub max_pages: usize,
}

impl Default for HttpLimits {
    fn default() -> Self {
        Self {
            connect_timeout: Duration::from_secs(30),
            deadline: Duration::from_secs(300),
            window: Duration::from_secs(30),
            // 16 KiB in 30 s: far below any link a bundle can be made over.
            min_bytes: 16 << 10,
            // The Hub pages by 1000 entries: a million files.
            max_pages: 1000,
        }
    }
}

impl HttpLimits {
    /// Words for the minimum-progress rule, for messages.
    pub fn rule(&self) -> String {
        format!(
            "{} bytes every {} s",
            self.min_bytes,
            self.window.as_secs_f64()
        )
    }
}

/// The body stopped moving: fewer than the minimum bytes in a window.
#[derive(Debug, thiserror::Error)]
#[error(
    "the body stalled: {got} bytes in the last {waited:.1} s of waiting, below the minimum of \
     {rule}; the server is too slow or stuck"
)]
pub struct Stalled {
    got: u64,
    waited: f64,
    rule: String,
}

/// A body stream that fails with [`Stalled`] when it stops moving.
pub struct Guarded<S> {
    inner: S,
    limits: HttpLimits,
    /// Bytes and waiting time in the current window.
    got: u64,
    waited: Duration,
    /// Since when the inner stream has been pending, with the timer that
    /// ends the window.
    pending: Option<(Instant, Pin<Box<Sleep>>)>,
}

impl<S> Guarded<S> {
    pub fn new(inner: S, limits: HttpLimits) -> Self {
        Self {
            inner,
            limits,
            got: 0,
            waited: Duration::ZERO,
            pending: None,
        }
    }
}

impl<S, E> Stream for Guarded<S>
where
    S: Stream<Item = Result<Bytes, E>> + Unpin,
    E: Into<Box<dyn std::error::Error + Send + Sync>>,
{
    type Item = Result<Bytes, Box<dyn std::error::Error + Send + Sync>>;

    fn poll_next(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Option<Self::Item>> {
        let this = &mut *self;
        match Pin::new(&mut this.inner).poll_next(cx) {
            Poll::Ready(item) => {
                if let Some((since, _)) = this.pending.take() {
                    this.waited += since.elapsed();
                }
                if let Some(Ok(chunk)) = &item {
                    this.got += chunk.len() as u64;
                    if this.got >= this.limits.min_bytes {
                        this.got = 0;
                        this.waited = Duration::ZERO;
                    }
                }
                Poll::Ready(item.map(|r| r.map_err(Into::into)))
            }
            Poll::Pending => {
                let left = this.limits.window.saturating_sub(this.waited);
                let (since, timer) = this.pending.get_or_insert_with(|| {
                    let now = Instant::now();
                    (now, Box::pin(tokio::time::sleep_until(now + left)))
                });
                if timer.as_mut().poll(cx).is_ready() {
                    let waited = this.waited + since.elapsed();
                    this.pending = None;
                    return Poll::Ready(Some(Err(Box::new(Stalled {
                        got: this.got,
                        waited: waited.as_secs_f64(),
                        rule: this.limits.rule(),
                    }))));
                }
                Poll::Pending
            }
        }
    }
}

use std::future::Future as _;

/// A lock larger than this is refused unread: vLLM's is about 100 KiB.
pub const MAX_LOCK_BYTES: usize = 16 << 20;

#[cfg(test)]
mod tests {
    use super::*;
    use futures_util::StreamExt;

    fn limits(window_ms: u64, min_bytes: u64) -> HttpLimits {
        HttpLimits {
            window: Duration::from_millis(window_ms),
            min_bytes,
            ..HttpLimits::default()
        }
    }

    type Body = Pin<Box<dyn Stream<Item = Result<Bytes, std::io::Error>> + Send>>;

    /// `n` chunks of `size` bytes, one every `every`.
    fn paced(every: Duration, size: usize, n: usize) -> Body {
        Box::pin(futures_util::stream::iter(0..n).then(move |_| async move {
            tokio::time::sleep(every).await;
            Ok(Bytes::from(vec![b'x'; size]))
        }))
    }

    #[tokio::test]
    async fn a_drip_fails_within_a_window() {
        // A byte every 50 ms against 100 bytes per 300 ms.
        let mut g = Guarded::new(paced(Duration::from_millis(50), 1, 1000), limits(300, 100));
        let start = Instant::now();
        let mut got = 0;
        let err = loop {
            match g.next().await {
                Some(Ok(b)) => got += b.len(),
                Some(Err(e)) => break e,
                None => panic!("a drip ended"),
            }
        };
        assert!(got < 10, "{got}");
        assert!(start.elapsed() < Duration::from_secs(5));
        let msg = err.to_string();
        assert!(
            msg.contains("the body stalled") && msg.contains("100 bytes every 0.3 s"),
            "{msg}"
        );
    }

    #[tokio::test]
    async fn a_steady_body_read_slowly_passes() {
        // 1 KiB every 10 ms against 1 KiB per 200 ms.
        let mut g = Guarded::new(paced(Duration::from_millis(10), 1024, 6), limits(200, 1024));
        let mut n = 0;
        while let Some(r) = g.next().await {
            r.unwrap();
            n += 1;
            // The reader itself is slow (a busy disk): not the server's fault.
            tokio::time::sleep(Duration::from_millis(300)).await;
        }
        assert_eq!(n, 6);
    }
}
