//! The registry's write API, one request each (distribution-spec v1.1,
//! push): HEAD a blob or manifest, POST an upload (with a cross-repo
//! mount when a blob is in another repository of the push), PUT its bytes
//! monolithically, PUT a manifest; a 401 answered with the token dance
//! (`pull,push`), server failures retried with the run's backoff.
//!
//! Invariant: an answer is believed only when it agrees with what was
//! sent: a `Docker-Content-Digest` other than the digest pushed, a 202
//! without a `Location`, a redirect on a write, a `Location` that is no
//! URL — each refuses the registry by name ([`PushError::Lied`]). A
//! `Location` on another host is asked with no credential (the session
//! answers only for its own origin and repository).

use llmgw_shared::Sha256;
use llmgw_shared::push::PushBlob;
use reqwest::header::{self, HeaderMap, HeaderValue};
use reqwest::{Method, Response, Url};

use super::body;
use crate::error::push::PushError;
use crate::http::{Http, HttpError, redact};
use crate::sources::oci::auth::RegistryAuth;
use crate::sources::oci::client::Repo;

/// The largest error body read, for its codes.
const MAX_ERROR_BODY: usize = 16 * 1024;

/// One repository on the registry pushed to.
pub struct Dest<'a> {
    pub http: &'a Http,
    pub auth: &'a RegistryAuth,
    pub repo: Repo,
}

/// What a blob upload's first request answered.
pub enum Started {
    /// The registry mounted it from the other repository.
    Mounted,
    /// Upload the bytes here.
    At(Url),
}

impl Dest<'_> {
    fn at(&self) -> String {
        self.repo.shown.clone()
    }

    fn url(&self, path: &str) -> Result<Url, PushError> {
        let text = format!("{}v2/{}/{path}", self.repo.base, self.repo.repository);
        Url::parse(&text).map_err(|_| PushError::Target {
            given: text,
            why: "not a URL",
        })
    }

    /// Sends one request, logging in on a 401 and retrying what is worth
    /// it; `body` makes the body again for each try.
    async fn request(
        &self,
        method: Method,
        url: &Url,
        headers: &HeaderMap,
        doing: &str,
        body: &dyn Fn() -> Option<reqwest::Body>,
    ) -> Result<Response, PushError> {
        let http_err = |source: HttpError| PushError::Http {
            at: self.at(),
            doing: doing.to_string(),
            source: Box::new(source),
        };
        let mut logged_in = self
            .auth
            .has_session(&self.repo.base, &self.repo.repository);
        let mut attempt = 1u32;
        loop {
            let resp = self
                .http
                .send(method.clone(), url, headers.clone(), body())
                .await;
            let resp = match resp {
                Ok(r) => r,
                Err(e) if e.is_retryable() && attempt < self.http.retry.attempts => {
                    tokio::time::sleep(self.http.retry.backoff(attempt)).await;
                    attempt += 1;
                    continue;
                }
                Err(e) => return Err(http_err(e.tried(attempt))),
            };
            let status = resp.status().as_u16();
            if status == 401 && !logged_in {
                let challenge = header(resp.headers(), "www-authenticate").unwrap_or_default();
                self.auth
                    .login(
                        &self.repo.registry,
                        &self.repo.base,
                        &self.repo.repository,
                        &challenge,
                    )
                    .await?;
                logged_in = true;
                continue;
            }
            if (status >= 500 || status == 408 || status == 429)
                && attempt < self.http.retry.attempts
            {
                tokio::time::sleep(self.http.retry.backoff(attempt)).await;
                attempt += 1;
                continue;
            }
            // A blob's HEAD may redirect to its storage: the caller reads it.
            if resp.status().is_redirection() && method != Method::HEAD {
                return Err(self.lied(
                    doing,
                    format!(
                        "it answered {status} redirecting to {}; a push follows no redirect, and \
                         no credential goes to another host",
                        header(resp.headers(), "location")
                            .map(|l| llmgw_shared::shown(&l).to_string())
                            .unwrap_or_else(|| "nowhere".into())
                    ),
                ));
            }
            return Ok(resp);
        }
    }

    fn lied(&self, doing: &str, detail: String) -> PushError {
        PushError::Lied {
            at: self.at(),
            doing: doing.to_string(),
            detail,
        }
    }

    /// The refusal of a non-2xx answer, with the registry's error codes.
    async fn refused(&self, resp: Response, doing: &str) -> PushError {
        let status = resp.status().as_u16();
        let code = match small_body(resp).await {
            Some(b) => error_codes(&b),
            None => String::new(),
        };
        let hint = match status {
            401 => {
                "it wants a credential: log in (`docker login`, or a $REGISTRY_AUTH_FILE entry for this host)"
            }
            403 => {
                "the credential may not push here: grant push on the project, or push under --to HOST/PREFIX where it may"
            }
            404 => {
                "the repository or project does not exist: create it (Harbor and Artifactory make projects by hand), or name another --to prefix"
            }
            405 => "the registry takes no pushes here (a read-only mirror or proxy cache)",
            413 => {
                "the registry takes no body this large: raise its upload limit (a proxy's client_max_body_size)"
            }
            _ if doing.starts_with("tag") => {
                "the tag may be immutable: push under another prefix, or let the registry's tag rule allow it"
            }
            _ => "see its log",
        };
        PushError::Refused {
            at: self.at(),
            doing: doing.to_string(),
            status,
            code,
            hint,
        }
    }

    /// Whether the registry holds the blob (a redirect to its storage
    /// counts: the bytes are there).
    pub async fn has_blob(&self, sha: &Sha256, size: u64) -> Result<bool, PushError> {
        let url = self.url(&format!("blobs/sha256:{sha}"))?;
        let doing = format!("asking for blob sha256:{sha}");
        let resp = self
            .request(Method::HEAD, &url, &HeaderMap::new(), &doing, &|| None)
            .await?;
        match resp.status().as_u16() {
            // Sent to its storage (distribution over S3 answers 307): held.
            301 | 302 | 303 | 307 | 308 => Ok(true),
            // Held at another size is not held: the blob is pushed. (The
            // header, not the body's length: a HEAD answer has no body.)
            200 => Ok(header(resp.headers(), "content-length")
                .and_then(|n| n.trim().parse::<u64>().ok())
                .is_none_or(|n| n == size)),
            404 => Ok(false),
            _ => Err(self.refused(resp, &doing).await),
        }
    }

    /// Starts an upload, mounting from `from` (a repository of the same
    /// registry holding it) when given.
    pub async fn start(&self, sha: &Sha256, from: Option<&str>) -> Result<Started, PushError> {
        let mut url = self.url("blobs/uploads/")?;
        if let Some(from) = from {
            url.query_pairs_mut()
                .append_pair("mount", &format!("sha256:{sha}"))
                .append_pair("from", from);
        }
        let doing = format!("starting the upload of sha256:{sha}");
        let mut h = HeaderMap::new();
        h.insert(header::CONTENT_LENGTH, HeaderValue::from_static("0"));
        let resp = self
            .request(Method::POST, &url, &h, &doing, &|| {
                Some(reqwest::Body::from(Vec::new()))
            })
            .await?;
        match resp.status().as_u16() {
            201 if from.is_some() => {
                self.check_digest(resp.headers(), sha, &doing)?;
                Ok(Started::Mounted)
            }
            202 => Ok(Started::At(self.location(&resp, &url, &doing)?)),
            _ => Err(self.refused(resp, &doing).await),
        }
    }

    /// The answer's `Location`, resolved against `url`.
    fn location(&self, resp: &Response, url: &Url, doing: &str) -> Result<Url, PushError> {
        let loc = header(resp.headers(), "location").ok_or_else(|| {
            self.lied(
                doing,
                format!("it answered {} without a Location", resp.status().as_u16()),
            )
        })?;
        let next = url.join(&loc).map_err(|_| {
            self.lied(
                doing,
                format!("its Location {} is not a URL", llmgw_shared::shown(&loc)),
            )
        })?;
        if !matches!(next.scheme(), "http" | "https") {
            return Err(self.lied(doing, format!("its Location is a {} URL", next.scheme())));
        }
        if next.scheme() == "http" && self.repo.base.scheme() == "https" {
            return Err(self.lied(
                doing,
                format!("its Location {} is plain HTTP", redact(&next)),
            ));
        }
        Ok(next)
    }

    /// PUTs the blob's bytes at the upload `at`, completing it.
    pub async fn put_blob(&self, at: Url, blob: &PushBlob) -> Result<(), PushError> {
        let mut url = at;
        url.query_pairs_mut()
            .append_pair("digest", &format!("sha256:{}", blob.sha256));
        let doing = format!(
            "uploading blob sha256:{} ({} bytes)",
            blob.sha256, blob.size
        );
        let mut h = HeaderMap::new();
        h.insert(
            header::CONTENT_TYPE,
            HeaderValue::from_static("application/octet-stream"),
        );
        h.insert(header::CONTENT_LENGTH, HeaderValue::from(blob.size));
        let sent = body::Sent::default();
        let resp = self
            .request(Method::PUT, &url, &h, &doing, &|| {
                Some(body::of(blob, sent.clone()))
            })
            .await;
        if let Some(fault) = sent.fault() {
            return Err(fault);
        }
        let resp = resp?;
        match resp.status().as_u16() {
            201 | 204 => self.check_digest(resp.headers(), &blob.sha256, &doing),
            _ => Err(self.refused(resp, &doing).await),
        }
    }

    /// A `Docker-Content-Digest` other than `sha` is a lie.
    fn check_digest(&self, h: &HeaderMap, sha: &Sha256, doing: &str) -> Result<(), PushError> {
        match header(h, "docker-content-digest") {
            Some(d) if d.trim() != format!("sha256:{sha}") => Err(self.lied(
                doing,
                format!(
                    "it says the content is {} where sha256:{sha} was sent",
                    llmgw_shared::shown(d.trim())
                ),
            )),
            _ => Ok(()),
        }
    }

    /// Whether the registry holds the manifest of that digest.
    pub async fn has_manifest(&self, sha: &Sha256, media_type: &str) -> Result<bool, PushError> {
        let url = self.url(&format!("manifests/sha256:{sha}"))?;
        let doing = format!("asking for manifest sha256:{sha}");
        let mut h = HeaderMap::new();
        if let Ok(v) = HeaderValue::from_str(media_type) {
            h.insert(header::ACCEPT, v);
        }
        let resp = self
            .request(Method::HEAD, &url, &h, &doing, &|| None)
            .await?;
        match resp.status().as_u16() {
            200 => {
                self.check_digest(resp.headers(), sha, &doing)?;
                Ok(true)
            }
            404 => Ok(false),
            _ => Err(self.refused(resp, &doing).await),
        }
    }

    /// PUTs a manifest under `reference` (its digest, or a tag).
    pub async fn put_manifest(
        &self,
        reference: &str,
        media_type: &str,
        bytes: &[u8],
    ) -> Result<(), PushError> {
        let url = self.url(&format!("manifests/{reference}"))?;
        let sha = Sha256::of(bytes);
        let doing = if reference.starts_with("sha256:") {
            format!("manifest sha256:{sha}")
        } else {
            format!("tag {reference} (sha256:{sha})")
        };
        let mut h = HeaderMap::new();
        if let Ok(v) = HeaderValue::from_str(media_type) {
            h.insert(header::CONTENT_TYPE, v);
        }
        let body = bytes::Bytes::copy_from_slice(bytes);
        let resp = self
            .request(Method::PUT, &url, &h, &doing, &|| {
                Some(reqwest::Body::from(body.clone()))
            })
            .await?;
        match resp.status().as_u16() {
            201 | 200 | 204 => self.check_digest(resp.headers(), &sha, &doing),
            _ => Err(self.refused(resp, &doing).await),
        }
    }
}

/// At most [`MAX_ERROR_BODY`] bytes of an answer's body (an error's), or
/// none when it is larger or cut.
async fn small_body(mut resp: Response) -> Option<Vec<u8>> {
    let mut body = Vec::new();
    while let Some(chunk) = resp.chunk().await.ok()? {
        if body.len() + chunk.len() > MAX_ERROR_BODY {
            return None;
        }
        body.extend_from_slice(&chunk);
    }
    Some(body)
}

fn header(h: &HeaderMap, name: &str) -> Option<String> {
    h.get(name)
        .and_then(|v| v.to_str().ok())
        .map(str::to_string)
}

/// The spec's error body's codes and messages (`DENIED: …`), escaped and
/// short; empty when it is not one.
fn error_codes(body: &[u8]) -> String {
    #[derive(serde::Deserialize)]
    struct Body {
        errors: Vec<Item>,
    }
    #[derive(serde::Deserialize)]
    struct Item {
        #[serde(default)]
        code: String,
        #[serde(default)]
        message: String,
    }
    let Ok(b) = serde_json::from_slice::<Body>(body) else {
        return String::new();
    };
    let said: Vec<String> = b
        .errors
        .iter()
        .take(3)
        .map(|e| {
            let text = format!("{}: {}", e.code, e.message);
            llmgw_shared::shown(&text.chars().take(200).collect::<String>()).to_string()
        })
        .collect();
    if said.is_empty() {
        String::new()
    } else {
        format!(" ({})", said.join("; "))
    }
}
