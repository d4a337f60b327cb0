//! The rehearsal's HTTP client: what a node's clients send to the mirror,
//! over the loopback only.
//!
//! Invariant: the client never goes through a proxy (a node's `HTTP_PROXY`
//! must not carry a loopback request elsewhere), follows no redirect (a
//! node's clients would; the rehearsal wants to see them), and reads at
//! most [`MAX_BODY`] bytes of any answer.

use std::time::Duration;

use reqwest::{Client, Method, StatusCode, header::HeaderMap};

use crate::error::RehearseError;

/// The most bytes of one answer read: a revision listing or a lock is far
/// smaller; a blob or a file is only HEADed.
pub const MAX_BODY: usize = 64 << 20;

/// One answer: status, headers, the body (empty for HEAD).
#[derive(Debug)]
pub struct Answer {
    pub status: StatusCode,
    pub headers: HeaderMap,
    pub body: Vec<u8>,
}

impl Answer {
    /// A header as text; empty when absent or not text.
    pub fn header(&self, name: &str) -> &str {
        self.headers
            .get(name)
            .and_then(|v| v.to_str().ok())
            .unwrap_or_default()
    }

    /// What went wrong, in a line: the status and the start of the body.
    pub fn describe(&self) -> String {
        let body = String::from_utf8_lossy(&self.body[..self.body.len().min(300)]).to_string();
        format!("{} {}", self.status, body.trim())
    }
}

/// The mirror at `base`, asked as a node asks.
pub struct Mirror {
    client: Client,
    pub base: String,
}

impl Mirror {
    pub fn new(base: &str) -> Result<Self, RehearseError> {
        let client = Client::builder()
            .no_proxy()
            .redirect(reqwest::redirect::Policy::none())
            .timeout(Duration::from_secs(120))
            .build()
            .map_err(|source| RehearseError::Client { source })?;
        Ok(Self {
            client,
            base: base.trim_end_matches('/').to_string(),
        })
    }

    /// `method path` with these headers; a transport failure is an `Err`
    /// with its words.
    pub async fn ask(
        &self,
        method: Method,
        path: &str,
        headers: &[(&str, &str)],
    ) -> Result<Answer, String> {
        let mut req = self
            .client
            .request(method.clone(), format!("{}{path}", self.base));
        for (k, v) in headers {
            req = req.header(*k, *v);
        }
        let mut resp = req.send().await.map_err(|e| llmgw_shared::chain(&e))?;
        let status = resp.status();
        let headers = resp.headers().clone();
        let mut body = Vec::new();
        if method != Method::HEAD {
            while let Some(chunk) = resp.chunk().await.map_err(|e| llmgw_shared::chain(&e))? {
                if body.len() + chunk.len() > MAX_BODY {
                    return Err(format!("{path}: the answer is over {MAX_BODY} bytes"));
                }
                body.extend_from_slice(&chunk);
            }
        }
        Ok(Answer {
            status,
            headers,
            body,
        })
    }

    /// GET, expecting 200; the answer, or what went wrong in a line.
    pub async fn get_ok(&self, path: &str, headers: &[(&str, &str)]) -> Result<Answer, String> {
        let a = self.ask(Method::GET, path, headers).await?;
        if a.status != StatusCode::OK {
            return Err(format!("GET {path}: {}", a.describe()));
        }
        Ok(a)
    }

    /// HEAD, expecting 200.
    pub async fn head_ok(&self, path: &str, headers: &[(&str, &str)]) -> Result<Answer, String> {
        let a = self.ask(Method::HEAD, path, headers).await?;
        if a.status != StatusCode::OK {
            return Err(format!("HEAD {path}: {}", a.status));
        }
        Ok(a)
    }
}

/// A path segment, percent-encoded as the clients encode it.
pub fn seg(s: &str) -> String {
    percent_encoding::utf8_percent_encode(s, llmgw_shared::url::SEGMENT).to_string()
}

/// A repository path (`models/x.gguf`), each segment encoded.
pub fn path(p: &str) -> String {
    p.split('/').map(seg).collect::<Vec<_>>().join("/")
}
