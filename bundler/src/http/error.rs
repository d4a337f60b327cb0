//! Why a request failed, and which failures are worth another try.

use reqwest::Url;
use thiserror::Error;

use super::redact;

/// Why a URL does not parse: `url::ParseError`, named through reqwest's
/// `Url` so that the crate needs no dependency of its own on `url`.
pub type UrlError = <Url as std::str::FromStr>::Err;

/// How an answer stopped short of what was asked.
#[derive(Debug, Clone, Copy, PartialEq, Error)]
pub enum CutShort {
    /// Not even the headers came within the deadline.
    #[error("no answer within {seconds} s")]
    NoAnswerWithin { seconds: f64 },
    /// A small document's body did not arrive whole within the deadline.
    #[error("the answer did not arrive whole within {seconds} s")]
    NotWholeWithin { seconds: f64 },
    /// The body ended without an error, before the bytes listed.
    #[error("the body ended after {got} of {size} bytes")]
    EndedEarly { got: u64, size: u64 },
}

/// Why a request failed.
#[derive(Debug, Error)]
pub enum HttpError {
    /// The exchange failed in the HTTP client; reqwest's error (its URL
    /// taken out, since `url` is the redacted one) and its causes are
    /// printed by the chain.
    #[error("{url}")]
    Transport {
        url: String,
        retryable: bool,
        #[source]
        source: reqwest::Error,
    },
    /// The answer stopped short or came too late, as this client saw it
    /// with no library error behind it; worth another try.
    #[error("{url}: {how}")]
    Cut { url: String, how: CutShort },
    #[error("{url}: the server answered {status}{}", message.as_deref().map(|m| format!(" ({m})")).unwrap_or_default())]
    Status {
        url: String,
        status: u16,
        /// The Hub's `X-Error-Code`, when it sent one.
        error_code: Option<String>,
        /// The Hub's `X-Error-Message`, or a short body.
        message: Option<String>,
    },
    #[error("{url}: {detail}")]
    Protocol { url: String, detail: String },
    /// A URL, given or sent by the server (a redirect's Location), does
    /// not parse; `what` says which.
    #[error("{url}: {what}")]
    BadUrl {
        url: String,
        what: &'static str,
        #[source]
        source: UrlError,
    },
    /// The HTTP client itself could not be made (its TLS backend).
    #[error("{url}: cannot build an HTTP client")]
    Client {
        url: String,
        #[source]
        source: reqwest::Error,
    },
    /// An answer is not the JSON document the protocol promises;
    /// `expected` names the document ("a GitHub-style release object").
    #[error("{url}: not {expected}")]
    Json {
        url: String,
        expected: &'static str,
        #[source]
        source: serde_json::Error,
    },
    /// No connection could be made: the one failure the operator fixes
    /// on this side (the URL, DNS, a proxy), so it says so in plain words.
    #[error(
        "{url}: cannot connect ({reason}){}; check the URL, DNS, and any proxy \
         (HTTPS_PROXY, HTTP_PROXY, NO_PROXY)",
        if *tries > 1 { format!("; tried {tries} times") } else { String::new() }
    )]
    Unreachable {
        url: String,
        reason: String,
        tries: u32,
        /// Whether a connection was made and its TLS handshake is what
        /// failed (the peer's bytes were not TLS, or it hung up): what a
        /// plain-HTTP server answers an `https://` URL with.
        handshake: bool,
        /// Whether another try may connect: a timeout or a reset may pass;
        /// a name that does not resolve or a refused connection does not
        /// (#53: eight tries of those cost half a minute before the hint).
        recoverable: bool,
    },
}

impl HttpError {
    /// Whether trying again may help: a dropped connection, a timeout, a
    /// 5xx but 501 (Not Implemented: the server lacks the method, and will
    /// still lack it), a 429 or a 408.
    pub fn is_retryable(&self) -> bool {
        match self {
            HttpError::Transport { retryable, .. } => *retryable,
            HttpError::Cut { .. } => true,
            HttpError::Unreachable { recoverable, .. } => *recoverable,
            HttpError::Status { status, .. } => {
                (*status >= 500 && *status != 501) || *status == 429 || *status == 408
            }
            HttpError::Protocol { .. }
            | HttpError::BadUrl { .. }
            | HttpError::Client { .. }
            | HttpError::Json { .. } => false,
        }
    }

    /// Whether it is a connection whose TLS handshake failed (see
    /// [`HttpError::Unreachable`]'s `handshake`).
    pub fn failed_handshake(&self) -> bool {
        matches!(
            self,
            HttpError::Unreachable {
                handshake: true,
                ..
            }
        )
    }

    pub fn status(&self) -> Option<u16> {
        match self {
            HttpError::Status { status, .. } => Some(*status),
            _ => None,
        }
    }

    /// The same error, saying how many tries were made when it is about
    /// a connection that could not be made.
    pub fn tried(self, attempts: u32) -> Self {
        match self {
            HttpError::Unreachable {
                url,
                reason,
                handshake,
                recoverable,
                ..
            } => HttpError::Unreachable {
                url,
                reason,
                tries: attempts,
                handshake,
                recoverable,
            },
            other => other,
        }
    }

    /// A failure of the HTTP client for `url`: a connection that could
    /// not be made is [`HttpError::Unreachable`], in plain words; any other
    /// keeps reqwest's error as its source, without the URL reqwest puts in
    /// its text (it may carry a token; `url` is redacted).
    pub fn transport(url: &Url, e: reqwest::Error) -> Self {
        if e.is_connect() {
            return HttpError::Unreachable {
                url: redact(url),
                reason: connect_reason(&e),
                tries: 1,
                handshake: failed_handshake(&e),
                recoverable: !refused_or_unresolved(&e),
            };
        }
        HttpError::Transport {
            url: redact(url),
            retryable: e.is_timeout()
                || e.is_connect()
                || e.is_request()
                || e.is_body()
                || e.is_decode(),
            source: e.without_url(),
        }
    }
}

/// Whether a connection failed in its TLS handshake: the TLS layer
/// (tokio-rustls) reports a peer whose bytes are not TLS as an
/// `InvalidData` I/O error, and one that hangs up mid-handshake as an
/// `UnexpectedEof`; a refused or timed-out connection or a name that does
/// not resolve is neither.
fn failed_handshake(e: &reqwest::Error) -> bool {
    let mut src = std::error::Error::source(e);
    while let Some(s) = src {
        // An I/O error may wrap another (hyper-util's `Other` around the
        // TLS layer's `InvalidData`), whose `source` skips the inner one.
        let mut io = s.downcast_ref::<std::io::Error>();
        while let Some(e) = io {
            use std::io::ErrorKind::{InvalidData, UnexpectedEof};
            if matches!(e.kind(), InvalidData | UnexpectedEof) {
                return true;
            }
            io = e.get_ref().and_then(|i| i.downcast_ref::<std::io::Error>());
        }
        src = s.source();
    }
    false
}

/// Whether a connection failed for good: the host name does not resolve,
/// or the host refused the connection (nothing listens there). Neither
/// passes by trying again within seconds.
fn refused_or_unresolved(e: &reqwest::Error) -> bool {
    let mut src = std::error::Error::source(e);
    while let Some(s) = src {
        if s.to_string().starts_with("dns error") {
            return true;
        }
        let mut io = s.downcast_ref::<std::io::Error>();
        while let Some(e) = io {
            if e.kind() == std::io::ErrorKind::ConnectionRefused {
                return true;
            }
            io = e.get_ref().and_then(|i| i.downcast_ref::<std::io::Error>());
        }
        src = s.source();
    }
    false
}

/// Why a connection failed, in a few words: the innermost cause (the
/// system's "Connection refused", the resolver's answer), not the client's
/// chain of wrappers, which repeats the URL.
fn connect_reason(e: &reqwest::Error) -> String {
    let mut chain = Vec::new();
    let mut src = std::error::Error::source(e);
    while let Some(s) = src {
        chain.push(s.to_string());
        src = s.source();
    }
    let last = chain
        .last()
        .cloned()
        .unwrap_or_else(|| "no connection".into());
    let last = match last.find(" (os error ") {
        Some(i) if last.ends_with(')') => last[..i].to_string(),
        _ => last,
    };
    let mut reason = String::new();
    let mut chars = last.chars();
    if let Some(c) = chars.next() {
        reason.extend(c.to_lowercase());
        reason.push_str(chars.as_str());
    }
    if chain.iter().any(|m| m.starts_with("dns error")) {
        format!("the host name does not resolve: {reason}")
    } else if e.is_timeout() || chain.iter().any(|m| m.contains("timed out")) {
        format!("timed out: {reason}")
    } else {
        reason
    }
}

#[cfg(test)]
mod tests {
    use super::HttpError;
    use crate::http::{Http, RetryPolicy};

    /// `https://` to a loopback server that answers in plain HTTP is a
    /// failed handshake; to a port nobody listens on is not.
    #[tokio::test]
    async fn a_plain_http_answer_to_a_tls_hello_is_a_failed_handshake() {
        let l = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
        let plain = l.local_addr().unwrap().port();
        std::thread::spawn(move || {
            use std::io::{Read, Write};
            if let Some(Ok(mut s)) = l.incoming().next() {
                let _ = s.read(&mut [0u8; 512]);
                let _ = s.write_all(b"HTTP/1.1 400 Bad Request\r\nContent-Length: 0\r\n\r\n");
            }
        });
        let closed = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
        let nobody = closed.local_addr().unwrap().port();
        drop(closed);
        let client = reqwest::Client::new();
        for (port, handshake) in [(plain, true), (nobody, false)] {
            let url = reqwest::Url::parse(&format!("https://127.0.0.1:{port}/v2/")).unwrap();
            let e = client.get(url.clone()).send().await.unwrap_err();
            let e = HttpError::transport(&url, e);
            assert_eq!(e.failed_handshake(), handshake, "{port}: {e:?}");
            // A refused connection is not tried again (#53 item 2).
            assert_eq!(e.is_retryable(), handshake, "{port}: {e:?}");
        }
    }

    /// A name that does not resolve is not tried again either (#53 item 2).
    #[tokio::test]
    async fn a_name_that_does_not_resolve_is_not_retried() {
        let url = reqwest::Url::parse("http://no-such-host.invalid/x").unwrap();
        let e = reqwest::Client::new()
            .get(url.clone())
            .send()
            .await
            .unwrap_err();
        let e = HttpError::transport(&url, e);
        assert!(e.to_string().contains("does not resolve"), "{e}");
        assert!(!e.is_retryable(), "{e:?}");
    }

    #[test]
    fn a_parsers_words_are_the_cause_not_the_message() {
        let Err(err) = Http::new("no url", None, RetryPolicy::default()) else {
            panic!("\"no url\" was taken as a URL");
        };
        assert_eq!(err.to_string(), "no url: not a URL");
        assert_eq!(
            llmgw_shared::chain(&err),
            "no url: not a URL: relative URL without a base"
        );
    }
}
