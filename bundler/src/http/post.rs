//! A small form POST whose answer is JSON: the Hub's `paths-info`, the one
//! API `huggingface_hub` asks for files' scan verdicts with
//! (`get_paths_info(expand=True)`).
//!
//! Invariant: as for a GET, `HF_TOKEN` goes to the Hub's origin only, the
//! answer is read bounded, and a refusal is an [`HttpError::Status`] with
//! the Hub's `X-Error-Code` and message; no redirect is followed (the API
//! answers in place), and what is worth another try is tried again.

use percent_encoding::{NON_ALPHANUMERIC, utf8_percent_encode};
use reqwest::Url;
use reqwest::header::{self, HeaderValue};

use super::credential::Origin;
use super::{Http, HttpError, redact};

impl Http {
    /// POSTs `form` (`application/x-www-form-urlencoded`, keys repeated as
    /// given) to `url`; answers the body, at most `cap` bytes.
    pub async fn post_form_small(
        &self,
        url: &str,
        form: &[(&str, &str)],
        cap: usize,
    ) -> Result<Vec<u8>, HttpError> {
        let body = form
            .iter()
            .map(|(k, v)| {
                format!(
                    "{}={}",
                    utf8_percent_encode(k, NON_ALPHANUMERIC),
                    utf8_percent_encode(v, NON_ALPHANUMERIC)
                )
            })
            .collect::<Vec<_>>()
            .join("&");
        self.retry
            .run(url, || self.post_once(url, &body, cap))
            .await
    }

    async fn post_once(&self, url: &str, body: &str, cap: usize) -> Result<Vec<u8>, HttpError> {
        let parsed = Url::parse(url).map_err(|source| HttpError::BadUrl {
            url: url.to_string(),
            what: "not a URL",
            source,
        })?;
        let mut req = self
            .client
            .post(parsed.clone())
            .header(header::ACCEPT, "application/json")
            .header(header::ACCEPT_ENCODING, "identity")
            .header(header::CONTENT_TYPE, "application/x-www-form-urlencoded")
            .body(body.to_string());
        if let Some(t) = &self.hf_token
            && Origin::of(&parsed) == self.hub
            && let Ok(mut v) = HeaderValue::from_str(&format!("Bearer {}", t.0))
        {
            v.set_sensitive(true);
            req = req.header(header::AUTHORIZATION, v);
        }
        let whole = async {
            let resp = req
                .send()
                .await
                .map_err(|e| HttpError::transport(&parsed, e))?;
            super::read_small(resp, &parsed, cap)
                .await
                .map(|(body, _)| body)
        };
        match tokio::time::timeout(self.limits.deadline, whole).await {
            Ok(r) => r,
            Err(_) => Err(HttpError::Cut {
                url: redact(&parsed),
                how: super::CutShort::NotWholeWithin {
                    seconds: self.limits.deadline.as_secs_f64(),
                },
            }),
        }
    }
}
