//! How often and how patiently a request is tried again.
//!
//! Invariant: only an error that says it is worth another try
//! ([`HttpError::is_retryable`]) is tried again, at most `attempts` times
//! in all, and the error given up on says how many attempts were made.

use std::future::Future;
use std::time::Duration;

use super::error::HttpError;

/// How often and how patiently to retry.
#[derive(Debug, Clone, Copy)]
pub struct RetryPolicy {
    /// Attempts in all, the first included.
    pub attempts: u32,
    /// The wait before the second attempt; it doubles each time.
    pub first_backoff: Duration,
    /// The longest wait between two attempts, however often it doubled.
    pub max_backoff: Duration,
}

impl Default for RetryPolicy {
    fn default() -> Self {
        Self {
            attempts: 8,
            first_backoff: Duration::from_millis(250),
            max_backoff: Duration::from_secs(10),
        }
    }
}

impl RetryPolicy {
    /// The wait after failed attempt number `n` (1-based).
    pub fn backoff(&self, n: u32) -> Duration {
        let f = self
            .first_backoff
            .saturating_mul(1u32 << (n.saturating_sub(1)).min(16));
        f.min(self.max_backoff)
    }

    /// Runs `once` (one request to `url`) until it answers, fails in a way
    /// not worth another try, or the attempts are spent.
    pub async fn run<T, Fut>(
        &self,
        url: &str,
        mut once: impl FnMut() -> Fut,
    ) -> Result<T, HttpError>
    where
        Fut: Future<Output = Result<T, HttpError>>,
    {
        let mut attempt = 1;
        loop {
            match once().await {
                Ok(v) => return Ok(v),
                Err(e) if e.is_retryable() && attempt < self.attempts => {
                    tracing::debug!("retrying {url}: {}", llmgw_shared::Chain(&e));
                    tokio::time::sleep(self.backoff(attempt)).await;
                    attempt += 1;
                }
                Err(e) => return Err(e.tried(attempt)),
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn backoff_doubles_and_caps() {
        let p = RetryPolicy {
            attempts: 5,
            first_backoff: Duration::from_millis(100),
            max_backoff: Duration::from_millis(350),
        };
        assert_eq!(p.backoff(1), Duration::from_millis(100));
        assert_eq!(p.backoff(2), Duration::from_millis(200));
        assert_eq!(p.backoff(3), Duration::from_millis(350));
        assert_eq!(p.backoff(40), Duration::from_millis(350));
    }
}
