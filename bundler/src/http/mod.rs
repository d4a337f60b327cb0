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

mod credential;
mod error;
#[cfg(test)]
mod hostile_tests;
mod link;
mod post;
mod retry;
mod send;

use std::future::Future;
use std::pin::Pin;
use std::sync::Arc;
use std::time::Duration;

use reqwest::header::{self, HeaderMap, HeaderValue};
use reqwest::{Method, StatusCode, Url};

pub use credential::{Token, redact};
pub use error::{CutShort, HttpError};
pub use link::link_next;
pub use retry::RetryPolicy;

use crate::limits::{Guarded, HttpLimits};
use credential::Origin;

/// How many redirects a download may take; GitHub uses one.
const MAX_REDIRECTS: usize = 10;

/// The `User-Agent` sent everywhere.
const USER_AGENT: &str = concat!("llmgw-bundler/", env!("CARGO_PKG_VERSION"));

/// What a request's `Authorization` is, other than `HF_TOKEN`: a
/// registry's token session (`sources::oci::auth`) answers for the URLs of
/// the repositories it logged in to, and for nothing else (a CDN a blob
/// redirects to gets nothing).
pub trait Authorizer: Send + Sync {
    /// The header to send with a request for `url`, if any.
    fn authorization<'a>(
        &'a self,
        url: &'a Url,
    ) -> Pin<Box<dyn Future<Output = Option<HeaderValue>> + Send + 'a>>;
}

/// The client every request of a run goes through.
#[derive(Clone)]
pub struct Http {
    client: reqwest::Client,
    hub: Origin,
    hf_token: Option<Token>,
    authorizer: Option<Arc<dyn Authorizer>>,
    pub retry: RetryPolicy,
    pub limits: HttpLimits,
    /// What this run learned of each origin: it answered, or it cannot be
    /// reached (a name that does not resolve, a refused connection) and is
    /// never asked again (#53 item 2: the first failure of a host stops
    /// every other request to it).
    origins: Arc<std::sync::Mutex<std::collections::BTreeMap<String, Reach>>>,
}

/// What a run learned of an origin (`scheme://host:port`).
#[derive(Debug, Clone)]
enum Reach {
    /// It answered a request (whatever the status).
    Answered,
    /// It cannot be reached, and why.
    Unreachable(String),
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
        let hub_url = Url::parse(hf_endpoint).map_err(|source| HttpError::BadUrl {
            url: hf_endpoint.to_string(),
            what: "not a URL",
            source,
        })?;
        let client = reqwest::Client::builder()
            .redirect(reqwest::redirect::Policy::none())
            .user_agent(USER_AGENT)
            .connect_timeout(limits.connect_timeout)
            // A stalled body is a dropped connection: retry and resume.
            .read_timeout(Duration::from_secs(60))
            .build()
            .map_err(|source| HttpError::Client {
                url: hf_endpoint.to_string(),
                source,
            })?;
        Ok(Self {
            client,
            hub: Origin::of(&hub_url),
            hf_token,
            authorizer: None,
            retry,
            limits,
            origins: Arc::default(),
        })
    }

    /// The same client, asking `authorizer` for every request's
    /// `Authorization` (the registries' token sessions).
    #[must_use]
    pub fn with_authorizer(mut self, authorizer: Arc<dyn Authorizer>) -> Self {
        self.authorizer = Some(authorizer);
        self
    }

    /// The underlying client, for a token realm's request (which carries
    /// its own credential and follows no redirect).
    pub fn client(&self) -> &reqwest::Client {
        &self.client
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
        let mut url = Url::parse(url).map_err(|source| HttpError::BadUrl {
            url: url.to_string(),
            what: "not a URL",
            source,
        })?;
        for _ in 0..=MAX_REDIRECTS {
            self.refuse_dead(&url)?;
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
            if let Some(a) = &self.authorizer
                && let Some(v) = a.authorization(&url).await
            {
                headers.insert(header::AUTHORIZATION, v);
            }
            let send = self
                .client
                .request(Method::GET, url.clone())
                .headers(headers)
                .send();
            let resp = tokio::time::timeout(self.limits.deadline, send)
                .await
                .map_err(|_| HttpError::Cut {
                    url: redact(&url),
                    how: CutShort::NoAnswerWithin {
                        seconds: self.limits.deadline.as_secs_f64(),
                    },
                })?
                .map_err(|e| self.note_dead(HttpError::transport(&url, e), &url))?;
            self.origins_map()
                .entry(origin_key(&url))
                .or_insert(Reach::Answered);
            if resp.status().is_redirection() && resp.status() != StatusCode::NOT_MODIFIED {
                let loc = resp
                    .headers()
                    .get(header::LOCATION)
                    .and_then(|v| v.to_str().ok())
                    .ok_or_else(|| HttpError::Protocol {
                        url: redact(&url),
                        detail: format!("redirect {} without a Location", resp.status()),
                    })?;
                let next = url.join(loc).map_err(|source| HttpError::BadUrl {
                    url: redact(&url),
                    what: "redirect to an unusable Location",
                    source,
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

    /// Whether `url`'s origin was found unreachable this run, and why.
    pub fn unreachable_reason(&self, url: &Url) -> Option<String> {
        match self.origins_map().get(&origin_key(url)) {
            Some(Reach::Unreachable(why)) => Some(why.clone()),
            Some(Reach::Answered) | None => None,
        }
    }

    /// Whether `url`'s origin answered a request this run.
    pub fn answered(&self, url: &Url) -> bool {
        matches!(
            self.origins_map().get(&origin_key(url)),
            Some(Reach::Answered)
        )
    }

    /// Records `url`'s origin as unreachable (`reason`, the first one
    /// kept): no request goes to it again this run.
    pub fn mark_unreachable(&self, url: &Url, reason: String) {
        let mut origins = self.origins_map();
        let known = origins.entry(origin_key(url)).or_insert(Reach::Answered);
        if let Reach::Answered = known {
            *known = Reach::Unreachable(reason);
        }
    }

    fn origins_map(&self) -> std::sync::MutexGuard<'_, std::collections::BTreeMap<String, Reach>> {
        // A panic while holding it leaves a map, not a broken invariant.
        self.origins
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
    }

    /// A request to an origin found unreachable fails at once, saying so.
    fn refuse_dead(&self, url: &Url) -> Result<(), HttpError> {
        match self.unreachable_reason(url) {
            None => Ok(()),
            Some(reason) => Err(HttpError::Unreachable {
                url: redact(url),
                reason: format!("{reason}, found earlier in this run; not asked again"),
                tries: 1,
                handshake: false,
                recoverable: false,
            }),
        }
    }

    /// `e`, after recording its origin as unreachable when it says another
    /// try cannot connect (a name that does not resolve, a refusal).
    fn note_dead(&self, e: HttpError, url: &Url) -> HttpError {
        if let HttpError::Unreachable {
            reason,
            recoverable: false,
            handshake: false,
            ..
        } = &e
        {
            self.mark_unreachable(url, reason.clone());
        }
        e
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
        self.retry
            .run(url, || self.get_small_once(url, accept, cap))
            .await
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
            Err(_) => Err(HttpError::Cut {
                url: Url::parse(url).map_or_else(|_| url.to_string(), |u| redact(&u)),
                how: CutShort::NotWholeWithin {
                    seconds: self.limits.deadline.as_secs_f64(),
                },
            }),
        }
    }

    async fn get_small_whole(
        &self,
        url: &str,
        accept: Option<&str>,
        cap: usize,
    ) -> Result<(Vec<u8>, HeaderMap), HttpError> {
        let (resp, final_url) = self.get(url, accept, None).await?;
        read_small(resp, &final_url, cap).await
    }
}

/// `scheme://host:port` of `url`: what an unreachable host is known by.
pub fn origin_key(url: &Url) -> String {
    format!(
        "{}://{}:{}",
        url.scheme(),
        url.host_str().unwrap_or("").to_ascii_lowercase(),
        url.port_or_known_default().unwrap_or(0)
    )
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

/// Reads a small answer whole: at most `cap` bytes (more is a protocol
/// error naming the URL), and a status other than success as
/// [`HttpError::Status`] with the Hub's `X-Error-Code` and
/// `X-Error-Message`, else the body's first 200 printable characters.
async fn read_small(
    mut resp: reqwest::Response,
    url: &Url,
    cap: usize,
) -> Result<(Vec<u8>, HeaderMap), HttpError> {
    let status = resp.status();
    let headers = resp.headers().clone();
    let mut body = Vec::new();
    while let Some(chunk) = resp
        .chunk()
        .await
        .map_err(|e| HttpError::transport(url, e))?
    {
        if body.len() + chunk.len() > cap {
            return Err(HttpError::Protocol {
                url: redact(url),
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
            url: redact(url),
            status: status.as_u16(),
            error_code: hv("x-error-code"),
            message,
        });
    }
    Ok((body, headers))
}
