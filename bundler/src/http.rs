//! HTTP to the upstreams: one client, redirects followed by hand so that a
//! credential is only ever sent to the origin it belongs to, and the rules
//! for which failures are worth another try.
//!
//! `HF_TOKEN` goes to the Hub's own origin (scheme, host and port of
//! `--hf-endpoint`) and nowhere else: not to GitHub, and not to a CDN a Hub
//! download redirects to. It never appears in a log line, an error or a
//! file: [`Token`] prints as `***`.
//!
//! Every request is bounded by [`HttpLimits`] (see [`crate::limits`]), and
//! bytes must arrive as stored: a compressed body is refused.

use std::time::Duration;

use crate::limits::{Guarded, HttpLimits};

use reqwest::header::{self, HeaderMap, HeaderValue};
use reqwest::{Method, StatusCode, Url};
use thiserror::Error;

/// How many redirects a download may take; GitHub uses one.
const MAX_REDIRECTS: usize = 10;

/// The `User-Agent` sent everywhere.
const USER_AGENT: &str = concat!("llmgw-bundler/", env!("CARGO_PKG_VERSION"));

/// A bearer token that never shows itself.
#[derive(Clone)]
pub struct Token(String);

impl Token {
    pub fn new(value: String) -> Option<Self> {
        let v = value.trim().to_string();
        (!v.is_empty()).then_some(Self(v))
    }
}

impl std::fmt::Debug for Token {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("***")
    }
}

/// Why a request failed.
#[derive(Debug, Error)]
pub enum HttpError {
    #[error("{url}: {detail}")]
    Transport {
        url: String,
        detail: String,
        retryable: bool,
    },
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
    },
}

impl HttpError {
    /// Whether trying again may help: a dropped connection, a timeout, a
    /// 5xx, a 429 or a 408.
    pub fn is_retryable(&self) -> bool {
        match self {
            HttpError::Transport { retryable, .. } => *retryable,
            HttpError::Unreachable { .. } => true,
            HttpError::Status { status, .. } => *status >= 500 || *status == 429 || *status == 408,
            HttpError::Protocol { .. } => false,
        }
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
            HttpError::Unreachable { url, reason, .. } => HttpError::Unreachable {
                url,
                reason,
                tries: attempts,
            },
            other => other,
        }
    }

    pub fn transport(url: &Url, e: &reqwest::Error) -> Self {
        if e.is_connect() {
            return HttpError::Unreachable {
                url: redact(url),
                reason: connect_reason(e),
                tries: 1,
            };
        }
        // reqwest's Display hides the source chain; a dropped body says
        // "error decoding response body" without why, so add the chain.
        let mut detail = e.to_string();
        let mut src = std::error::Error::source(e);
        while let Some(s) = src {
            detail.push_str(": ");
            detail.push_str(&s.to_string());
            src = s.source();
        }
        HttpError::Transport {
            url: redact(url),
            detail,
            retryable: e.is_timeout()
                || e.is_connect()
                || e.is_request()
                || e.is_body()
                || e.is_decode(),
        }
    }
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

/// A URL as shown in messages: without userinfo or query, which is where
/// a signed storage URL keeps its credentials.
pub fn redact(url: &Url) -> String {
    let mut u = url.clone();
    let _ = u.set_username("");
    let _ = u.set_password(None);
    let had_query = u.query().is_some();
    u.set_query(None);
    if had_query {
        format!("{u}?…")
    } else {
        u.to_string()
    }
}

/// The origin a credential is scoped to.
#[derive(Debug, Clone, PartialEq, Eq)]
struct Origin {
    scheme: String,
    host: String,
    port: Option<u16>,
}

impl Origin {
    fn of(url: &Url) -> Self {
        Self {
            scheme: url.scheme().to_string(),
            host: url.host_str().unwrap_or("").to_ascii_lowercase(),
            port: url.port_or_known_default(),
        }
    }
}

/// How often and how patiently to retry.
#[derive(Debug, Clone, Copy)]
pub struct RetryPolicy {
    /// Attempts in all, the first included.
    pub attempts: u32,
    /// The wait before the second attempt; it doubles each time.
    pub first_backoff: Duration,
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
}

/// The client every request of a run goes through.
#[derive(Clone)]
pub struct Http {
    client: reqwest::Client,
    hub: Origin,
    hf_token: Option<Token>,
    pub retry: RetryPolicy,
    pub limits: HttpLimits,
}

impl Http {
    /// `hf_endpoint` is the Hub base URL the token belongs to.
    pub fn new(
        hf_endpoint: &str,
        hf_token: Option<Token>,
        retry: RetryPolicy,
    ) -> Result<Self, HttpError> {
        Self::with_limits(hf_endpoint, hf_token, retry, HttpLimits::default())
    }

    /// [`Http::new`] with other limits (tests lower them).
    pub fn with_limits(
        hf_endpoint: &str,
        hf_token: Option<Token>,
        retry: RetryPolicy,
        limits: HttpLimits,
    ) -> Result<Self, HttpError> {
        let hub_url = Url::parse(hf_endpoint).map_err(|e| HttpError::Protocol {
            url: hf_endpoint.to_string(),
            detail: format!("not a URL: {e}"),
        })?;
        let client = reqwest::Client::builder()
            .redirect(reqwest::redirect::Policy::none())
            .user_agent(USER_AGENT)
            .connect_timeout(limits.connect_timeout)
            // A stalled body is a dropped connection: retry and resume.
            .read_timeout(Duration::from_secs(60))
            .build()
            .map_err(|e| HttpError::Protocol {
                url: hf_endpoint.to_string(),
                detail: format!("cannot build an HTTP client: {e}"),
            })?;
        Ok(Self {
            client,
            hub: Origin::of(&hub_url),
            hf_token,
            retry,
            limits,
        })
    }

    /// Sends a GET (optionally for bytes `from` to `to`, inclusive, or to
    /// the end), following redirects by hand; answers with the final
    /// response, whatever its status, and the URL it came from.
    pub async fn get(
        &self,
        url: &str,
        accept: Option<&str>,
        range: Option<(u64, Option<u64>)>,
    ) -> Result<(reqwest::Response, Url), HttpError> {
        let mut url = Url::parse(url).map_err(|e| HttpError::Protocol {
            url: url.to_string(),
            detail: format!("not a URL: {e}"),
        })?;
        for _ in 0..=MAX_REDIRECTS {
            let mut headers = HeaderMap::new();
            if let Some(a) = accept
                && let Ok(v) = HeaderValue::from_str(a)
            {
                headers.insert(header::ACCEPT, v);
            }
            // Bytes as stored: a compressed transfer would hash wrong.
            headers.insert(
                header::ACCEPT_ENCODING,
                HeaderValue::from_static("identity"),
            );
            if let Some((from, to)) = range
                && let Ok(v) = HeaderValue::from_str(&match to {
                    Some(to) => format!("bytes={from}-{to}"),
                    None => format!("bytes={from}-"),
                })
            {
                headers.insert(header::RANGE, v);
            }
            if let Some(t) = &self.hf_token
                && Origin::of(&url) == self.hub
                && let Ok(mut v) = HeaderValue::from_str(&format!("Bearer {}", t.0))
            {
                v.set_sensitive(true);
                headers.insert(header::AUTHORIZATION, v);
            }
            let send = self
                .client
                .request(Method::GET, url.clone())
                .headers(headers)
                .send();
            let resp = tokio::time::timeout(self.limits.deadline, send)
                .await
                .map_err(|_| HttpError::Transport {
                    url: redact(&url),
                    detail: format!("no answer within {} s", self.limits.deadline.as_secs_f64()),
                    retryable: true,
                })?
                .map_err(|e| HttpError::transport(&url, &e))?;
            if resp.status().is_redirection() && resp.status() != StatusCode::NOT_MODIFIED {
                let loc = resp
                    .headers()
                    .get(header::LOCATION)
                    .and_then(|v| v.to_str().ok())
                    .ok_or_else(|| HttpError::Protocol {
                        url: redact(&url),
                        detail: format!("redirect {} without a Location", resp.status()),
                    })?;
                let next = url.join(loc).map_err(|e| HttpError::Protocol {
                    url: redact(&url),
                    detail: format!("redirect to an unusable Location: {e}"),
                })?;
                if !matches!(next.scheme(), "http" | "https") {
                    return Err(HttpError::Protocol {
                        url: redact(&url),
                        detail: format!("redirect to a {} URL", next.scheme()),
                    });
                }
                url = next;
                continue;
            }
            if resp.status().is_success() {
                refuse_compressed(&resp, &url)?;
            }
            return Ok((self.guard(resp), url));
        }
        Err(HttpError::Protocol {
            url: redact(&url),
            detail: format!("more than {MAX_REDIRECTS} redirects"),
        })
    }

    /// The same response, its body failing when it stops moving (see
    /// [`crate::limits`]).
    fn guard(&self, resp: reqwest::Response) -> reqwest::Response {
        use reqwest::ResponseBuilderExt;
        let mut b = http::Response::builder()
            .status(resp.status())
            .version(resp.version())
            .url(resp.url().clone());
        if let Some(h) = b.headers_mut() {
            *h = resp.headers().clone();
        }
        let body = Guarded::new(Box::pin(resp.bytes_stream()), self.limits);
        match b.body(reqwest::Body::wrap_stream(body)) {
            Ok(r) => reqwest::Response::from(r),
            // Cannot happen: the parts come from a valid response.
            Err(_) => unreachable!("rebuilding a valid response"),
        }
    }

    /// GETs a small document (JSON, a checksum file, a signature) whole,
    /// retrying what is worth retrying; refuses a body over `cap` bytes.
    /// A non-2xx answer is an [`HttpError::Status`].
    pub async fn get_small(
        &self,
        url: &str,
        accept: Option<&str>,
        cap: usize,
    ) -> Result<(Vec<u8>, HeaderMap), HttpError> {
        let mut attempt = 1;
        loop {
            match self.get_small_once(url, accept, cap).await {
                Ok(v) => return Ok(v),
                Err(e) if e.is_retryable() && attempt < self.retry.attempts => {
                    tracing::debug!("retrying {url}: {e}");
                    tokio::time::sleep(self.retry.backoff(attempt)).await;
                    attempt += 1;
                }
                Err(e) => return Err(e.tried(attempt)),
            }
        }
    }

    async fn get_small_once(
        &self,
        url: &str,
        accept: Option<&str>,
        cap: usize,
    ) -> Result<(Vec<u8>, HeaderMap), HttpError> {
        let whole = self.get_small_whole(url, accept, cap);
        match tokio::time::timeout(self.limits.deadline, whole).await {
            Ok(r) => r,
            Err(_) => Err(HttpError::Transport {
                url: Url::parse(url).map_or_else(|_| url.to_string(), |u| redact(&u)),
                detail: format!(
                    "the answer did not arrive whole within {} s",
                    self.limits.deadline.as_secs_f64()
                ),
                retryable: true,
            }),
        }
    }

    async fn get_small_whole(
        &self,
        url: &str,
        accept: Option<&str>,
        cap: usize,
    ) -> Result<(Vec<u8>, HeaderMap), HttpError> {
        let (mut resp, final_url) = self.get(url, accept, None).await?;
        let status = resp.status();
        let headers = resp.headers().clone();
        let mut body = Vec::new();
        while let Some(chunk) = resp
            .chunk()
            .await
            .map_err(|e| HttpError::transport(&final_url, &e))?
        {
            if body.len() + chunk.len() > cap {
                return Err(HttpError::Protocol {
                    url: redact(&final_url),
                    detail: format!("the answer is larger than {cap} bytes"),
                });
            }
            body.extend_from_slice(&chunk);
        }
        if !status.is_success() {
            let hv = |k: &str| {
                headers
                    .get(k)
                    .and_then(|v| v.to_str().ok())
                    .map(str::to_string)
            };
            let message = hv("x-error-message").or_else(|| {
                let t = String::from_utf8_lossy(&body);
                let t: String = t.chars().filter(|c| !c.is_control()).take(200).collect();
                (!t.trim().is_empty()).then_some(t)
            });
            return Err(HttpError::Status {
                url: redact(&final_url),
                status: status.as_u16(),
                error_code: hv("x-error-code"),
                message,
            });
        }
        Ok((body, headers))
    }
}

/// Refuses a body the server compressed: its bytes are not the published
/// ones, so they cannot be checked (and were asked for as `identity`).
fn refuse_compressed(resp: &reqwest::Response, url: &Url) -> Result<(), HttpError> {
    let Some(enc) = resp.headers().get(header::CONTENT_ENCODING) else {
        return Ok(());
    };
    let enc = String::from_utf8_lossy(enc.as_bytes());
    let enc = enc.trim();
    if enc.is_empty() || enc.eq_ignore_ascii_case("identity") {
        return Ok(());
    }
    let shown: String = enc.chars().filter(|c| !c.is_control()).take(40).collect();
    Err(HttpError::Protocol {
        url: redact(url),
        detail: format!(
            "the server compressed the body (Content-Encoding: {shown}) although it was asked \
             for the bytes as stored (Accept-Encoding: identity); compressed bytes cannot be \
             checked against the publisher's digest. If a proxy sits in between, have it pass \
             bodies through unchanged"
        ),
    })
}

/// The `rel="next"` target of a `Link` header, resolved against `base`.
pub fn link_next(headers: &HeaderMap, base: &Url) -> Option<Url> {
    for value in headers.get_all(header::LINK) {
        let Ok(text) = value.to_str() else { continue };
        for part in text.split(',') {
            let mut pieces = part.split(';');
            let target = pieces.next()?.trim();
            let is_next = pieces.any(|p| {
                let p = p.trim().replace(' ', "");
                p == "rel=\"next\"" || p == "rel=next"
            });
            if is_next {
                let t = target.trim_start_matches('<').trim_end_matches('>');
                return base.join(t).ok();
            }
        }
    }
    None
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn token_never_prints() {
        let t = Token::new("hf_secret".into()).unwrap();
        assert_eq!(format!("{t:?}"), "***");
        assert!(Token::new("  ".into()).is_none());
    }

    #[test]
    fn redaction() {
        let u = Url::parse("https://u:p@cdn.example/x?X-Amz-Signature=abc").unwrap();
        let r = redact(&u);
        assert!(!r.contains("abc") && !r.contains("u:p"), "{r}");
    }

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

    #[test]
    fn link_headers() {
        let base = Url::parse("http://h/api/models/a/b/tree/c?recursive=true").unwrap();
        let mut h = HeaderMap::new();
        h.insert(
            header::LINK,
            HeaderValue::from_static(
                "<http://h/x?cursor=2>; rel=\"next\", <http://h/x?cursor=0>; rel=\"prev\"",
            ),
        );
        assert_eq!(
            link_next(&h, &base).unwrap().as_str(),
            "http://h/x?cursor=2"
        );
        let mut h = HeaderMap::new();
        h.insert(
            header::LINK,
            HeaderValue::from_static("</p2>; rel=\"prev\""),
        );
        assert!(link_next(&h, &base).is_none());
        let mut h = HeaderMap::new();
        h.insert(header::LINK, HeaderValue::from_static("</p2>; rel=next"));
        assert_eq!(link_next(&h, &base).unwrap().as_str(), "http://h/p2");
    }
}
