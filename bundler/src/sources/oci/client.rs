//! Asking a registry for a manifest, as a registry client must: the full
//! `Accept` list (OCI and Docker schema 2, manifests and indexes), the
//! token dance on a 401 ([`super::auth`]), a 429 retried when the wait it
//! asks is short and otherwise reported with its `Retry-After`, server
//! failures retried with the run's backoff (but a failed TLS handshake
//! with a host that answers plain HTTP, refused at once naming
//! `--insecure-registry`), the body read bounded
//! ([`MAX_OCI_MANIFEST_BYTES`]) and `Docker-Content-Digest` checked
//! against the bytes' own digest. Blobs are not fetched here: they go
//! through the verified fetcher, with this registry's session attached by
//! the `Http`'s authorizer.
//!
//! Invariant: a [`ManifestAnswer`] is bytes whose sha256 is computed here,
//! with a manifest media type, and agreeing with any digest the registry
//! claimed for them.

use std::time::Duration;

use llmgw_shared::Sha256;
use llmgw_shared::manifest::{MAX_OCI_MANIFEST_BYTES, is_manifest};
use reqwest::Url;
use reqwest::header::HeaderMap;

use super::auth::RegistryAuth;
use super::error::OciError;
use crate::http::{Http, HttpError, redact};
use crate::spec::oci::reference::Reference;
use crate::spec::oci::registries::Registries;

/// Every manifest media type a registry may answer with, as one `Accept`.
pub const MANIFEST_ACCEPT: &str = "application/vnd.oci.image.index.v1+json, \
     application/vnd.oci.image.manifest.v1+json, \
     application/vnd.docker.distribution.manifest.list.v2+json, \
     application/vnd.docker.distribution.manifest.v2+json";

/// The longest `Retry-After` waited out on a 429 before giving up and
/// saying when to run again.
const MAX_RATE_WAIT: Duration = Duration::from_secs(30);

/// One repository on one registry, as requests address it.
#[derive(Debug, Clone)]
pub struct Repo {
    /// The image as shown in messages (`docker.io/library/ubuntu:24.04`).
    pub shown: String,
    /// The registry asked, as references name it (`docker.io`); for one
    /// `--registry` sends elsewhere, the address's `host[:port]`, whose
    /// credentials apply.
    pub registry: String,
    /// The API's base URL (`https://registry-1.docker.io/`).
    pub base: Url,
    /// The repository path.
    pub repository: String,
    /// Asked at an address `--registry` gave, whose scheme the operator
    /// chose: a failed handshake there is not answered with
    /// `--insecure-registry` advice.
    pub redirected: bool,
}

impl Repo {
    /// The repository of `r`, asked where `registries` says: at the
    /// address `--registry` gives its registry, over plain HTTP when it is
    /// an `--insecure-registry`, else over https at its API host. `shown`
    /// and the record keep the reference's own registry; `registry` is the
    /// host asked, whose credentials and token realm apply.
    pub fn of(r: &Reference, registries: &Registries) -> Result<Self, OciError> {
        let bad = || crate::spec::oci::reference::ReferenceError::Host {
            given: r.to_string(),
            host: r.registry.clone(),
        };
        let base = registries
            .base_for(&r.registry, r.api_host())
            .ok_or_else(bad)?;
        let redirected = registries.redirected(&r.registry);
        let registry = if redirected {
            match (base.host_str(), base.port()) {
                (Some(h), Some(p)) => format!("{h}:{p}"),
                (Some(h), None) => h.to_string(),
                (None, _) => return Err(bad().into()),
            }
        } else {
            r.registry.clone()
        };
        Ok(Self {
            shown: r.to_string(),
            registry,
            base,
            repository: r.repository.clone(),
            redirected,
        })
    }

    /// The URL of a manifest by tag or `sha256:…`.
    pub fn manifest_url(&self, reference: &str) -> String {
        format!("{}v2/{}/manifests/{reference}", self.base, self.repository)
    }

    /// The URL of a blob.
    pub fn blob_url(&self, sha256: &Sha256) -> String {
        format!("{}v2/{}/blobs/sha256:{sha256}", self.base, self.repository)
    }
}

/// A manifest or index as the registry served it.
#[derive(Debug, Clone)]
pub struct ManifestAnswer {
    /// Its exact bytes.
    pub bytes: Vec<u8>,
    /// Their sha256.
    pub sha256: Sha256,
    /// Its media type (the answer's `Content-Type`, or the document's own
    /// `mediaType` when the registry sent a generic type).
    pub media_type: String,
}

/// Asks for a manifest by tag or digest; see the module docs.
pub async fn get_manifest(
    http: &Http,
    auth: &RegistryAuth,
    repo: &Repo,
    reference: &str,
) -> Result<ManifestAnswer, OciError> {
    let url = repo.manifest_url(reference);
    let mut attempt = 1u32;
    let mut logged_in = auth.has_session(&repo.base, &repo.repository);
    let http_err = |source: HttpError| OciError::Http {
        image: repo.shown.clone(),
        source,
    };
    loop {
        let asked = match http.get(&url, Some(MANIFEST_ACCEPT), None).await {
            Err(e) if attempt == 1 && e.failed_handshake() && !repo.redirected => {
                Err(plain_http(http, repo, e).await?)
            }
            asked => asked,
        };
        let (mut resp, final_url) = match asked {
            Ok(r) => r,
            Err(e) if e.is_retryable() && attempt < http.retry.attempts => {
                tokio::time::sleep(http.retry.backoff(attempt)).await;
                attempt += 1;
                continue;
            }
            Err(e) => return Err(http_err(e.tried(attempt))),
        };
        let status = resp.status().as_u16();
        let headers = resp.headers().clone();
        match status {
            200..=299 => {}
            401 if !logged_in => {
                let challenge = header(&headers, "www-authenticate").unwrap_or_default();
                auth.login(&repo.registry, &repo.base, &repo.repository, &challenge)
                    .await?;
                logged_in = true;
                continue;
            }
            401 | 403 => {
                return Err(OciError::Denied {
                    image: repo.shown.clone(),
                    status,
                });
            }
            404 => {
                return Err(OciError::NotFound {
                    image: repo.shown.clone(),
                    asked: reference.to_string(),
                });
            }
            429 => {
                let retry_after = header(&headers, "retry-after");
                let wait = retry_after
                    .as_deref()
                    .and_then(|v| v.trim().parse::<u64>().ok());
                match wait.map(Duration::from_secs) {
                    Some(w) if w <= MAX_RATE_WAIT && attempt < http.retry.attempts => {
                        tracing::info!(
                            "{}: 429 Too Many Requests; waiting {} s as it asks",
                            repo.registry,
                            w.as_secs()
                        );
                        tokio::time::sleep(w).await;
                        attempt += 1;
                        continue;
                    }
                    _ => {
                        return Err(OciError::RateLimited {
                            registry: repo.registry.clone(),
                            retry_after: retry_after.map(|r| match r.trim().parse::<u64>() {
                                Ok(s) => format!("{s} seconds"),
                                Err(_) => r.chars().filter(|c| !c.is_control()).take(64).collect(),
                            }),
                        });
                    }
                }
            }
            s if (s >= 500 || s == 408) && attempt < http.retry.attempts => {
                tokio::time::sleep(http.retry.backoff(attempt)).await;
                attempt += 1;
                continue;
            }
            _ => {
                return Err(http_err(HttpError::Status {
                    url: redact(&final_url),
                    status,
                    error_code: None,
                    message: None,
                }));
            }
        }
        let bytes = read_bounded(&mut resp, &final_url, &repo.shown).await?;
        return answer(repo, &headers, bytes);
    }
}

/// How long a plain-HTTP answer is waited for after a failed handshake.
const PLAIN_HTTP_WAIT: Duration = Duration::from_secs(5);

/// After the TLS handshake with `repo`'s registry failed (`failed`): when
/// the same host and port answer `GET /v2/` over plain HTTP (any status,
/// the body never read), the registry speaks plain HTTP and
/// [`OciError::PlainHttp`] says which flag to pass, with no retry; else
/// `failed` is handed back, to be retried as any connection failure.
async fn plain_http(http: &Http, repo: &Repo, failed: HttpError) -> Result<HttpError, OciError> {
    let mut url = repo.base.clone();
    let port = url.port_or_known_default();
    if url.scheme() != "https" || url.set_scheme("http").is_err() || url.set_port(port).is_err() {
        return Ok(failed);
    }
    url.set_path("/v2/");
    let ask = http.client().get(url).send();
    match tokio::time::timeout(PLAIN_HTTP_WAIT, ask).await {
        Ok(Ok(_)) => Err(OciError::PlainHttp {
            image: repo.shown.clone(),
            registry: repo.registry.clone(),
            source: Box::new(failed),
        }),
        _ => Ok(failed),
    }
}

fn header(h: &HeaderMap, name: &str) -> Option<String> {
    h.get(name)
        .and_then(|v| v.to_str().ok())
        .map(str::to_string)
}

async fn read_bounded(
    resp: &mut reqwest::Response,
    url: &Url,
    image: &str,
) -> Result<Vec<u8>, OciError> {
    let too_large = || OciError::ManifestTooLarge {
        image: image.to_string(),
        url: redact(url),
        max: MAX_OCI_MANIFEST_BYTES,
    };
    if resp
        .content_length()
        .is_some_and(|n| n > MAX_OCI_MANIFEST_BYTES)
    {
        return Err(too_large());
    }
    let mut body = Vec::new();
    while let Some(chunk) = resp.chunk().await.map_err(|e| OciError::Http {
        image: image.to_string(),
        source: HttpError::transport(url, e),
    })? {
        if (body.len() + chunk.len()) as u64 > MAX_OCI_MANIFEST_BYTES {
            return Err(too_large());
        }
        body.extend_from_slice(&chunk);
    }
    Ok(body)
}

/// The answer checked: a manifest media type, and the claimed digest the
/// bytes' own.
fn answer(repo: &Repo, headers: &HeaderMap, bytes: Vec<u8>) -> Result<ManifestAnswer, OciError> {
    let sha256 = Sha256::of(&bytes);
    if let Some(claimed) = header(headers, "docker-content-digest")
        && claimed.trim() != format!("sha256:{sha256}")
    {
        return Err(OciError::DigestHeader {
            image: repo.shown.clone(),
            header: claimed
                .chars()
                .filter(|c| !c.is_control())
                .take(100)
                .collect(),
            actual: sha256,
        });
    }
    let content_type = header(headers, "content-type").unwrap_or_default();
    let plain = content_type
        .split(';')
        .next()
        .unwrap_or("")
        .trim()
        .to_string();
    let media_type = if is_manifest(&plain) {
        plain
    } else {
        // Some registries answer `application/json`: the document's own
        // mediaType then says what it is.
        #[derive(serde::Deserialize)]
        struct Inner {
            #[serde(rename = "mediaType")]
            media_type: Option<String>,
        }
        match serde_json::from_slice::<Inner>(&bytes)
            .ok()
            .and_then(|i| i.media_type)
        {
            Some(inner) if is_manifest(&inner) => inner,
            _ => {
                return Err(OciError::MediaType {
                    image: repo.shown.clone(),
                    content_type: content_type.chars().take(100).collect(),
                });
            }
        }
    };
    Ok(ManifestAnswer {
        bytes,
        sha256,
        media_type,
    })
}
