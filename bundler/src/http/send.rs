//! One request of any method, as a registry push makes them (HEAD, POST,
//! PUT with a streamed body): the registry session's `Authorization` for
//! exactly the URL asked, and no redirect followed.
//!
//! Invariant: the header comes from the run's [`super::Authorizer`] for
//! the URL itself, so a `Location` on another host (an upload URL, a
//! redirect) is asked with no credential; a redirect is handed back to the
//! caller, never followed with a body or a session.

use reqwest::header::{self, HeaderMap, HeaderValue};
use reqwest::{Method, Url};

use super::{CutShort, Http, HttpError, redact};

impl Http {
    /// Sends `method` to `url` with `headers` and `body`, and answers the
    /// response whatever its status. Only the answer's head is waited for
    /// within the run's deadline when there is no body; a body's upload
    /// takes what it takes (the client's read timeout still ends a stall).
    pub async fn send(
        &self,
        method: Method,
        url: &Url,
        mut headers: HeaderMap,
        body: Option<reqwest::Body>,
    ) -> Result<reqwest::Response, HttpError> {
        self.refuse_dead(url)?;
        headers.insert(
            header::ACCEPT_ENCODING,
            HeaderValue::from_static("identity"),
        );
        if let Some(a) = &self.authorizer
            && let Some(v) = a.authorization(url).await
        {
            headers.insert(header::AUTHORIZATION, v);
        }
        let with_body = body.is_some();
        let mut req = self.client.request(method, url.clone()).headers(headers);
        if let Some(b) = body {
            req = req.body(b);
        }
        let sent = req.send();
        let resp = if with_body {
            sent.await
        } else {
            match tokio::time::timeout(self.limits.deadline, sent).await {
                Ok(r) => r,
                Err(_) => {
                    return Err(HttpError::Cut {
                        url: redact(url),
                        how: CutShort::NoAnswerWithin {
                            seconds: self.limits.deadline.as_secs_f64(),
                        },
                    });
                }
            }
        };
        let resp = resp.map_err(|e| self.note_dead(HttpError::transport(url, e), url))?;
        self.origins_map()
            .entry(super::origin_key(url))
            .or_insert(super::Reach::Answered);
        Ok(resp)
    }
}
