//! The registry token dance, as Docker does it: a request answered 401
//! with `WWW-Authenticate: Bearer realm="…",service="…",scope="…"` is
//! followed by a GET of the realm (`service`, `scope=repository:REPO:pull`,
//! `pull,push` for a push;
//! with the registry's credential as Basic auth when one is filed, or a
//! POST of its identity token as an OAuth2 refresh token), whose `token`
//! (or `access_token`) is then sent as `Bearer` to that registry for that
//! repository. Without a credential the realm gives an anonymous token,
//! as Docker Hub, ghcr.io and nvcr.io do for public images. `Basic`
//! challenges get the credential itself.
//!
//! Invariant: a credential goes only to the registry it is filed under and
//! to the token realm that registry named (over https unless the registry
//! itself is plain HTTP); a token goes only to its registry's origin, for
//! URLs under its repository (`/v2/REPO/`), so a blob's redirect to a CDN
//! carries nothing. Tokens are renewed before they expire, so a download
//! of hours keeps its session. Nothing is written anywhere.

use std::future::Future;
use std::io;
use std::pin::Pin;
use std::sync::Mutex;
use std::time::{Duration, Instant};

use base64::Engine;
use reqwest::Url;
use reqwest::header::HeaderValue;
use serde::Deserialize;

use super::credentials::{Credential, Credentials};
use super::error::OciError;
use crate::http::{Authorizer, redact};

/// The largest token answer read.
const MAX_TOKEN_ANSWER: usize = 64 * 1024;
/// A token is renewed this long before it expires.
const RENEW_EARLY: Duration = Duration::from_secs(30);
/// What a token lives when the realm does not say (the spec's default).
const DEFAULT_EXPIRY: u64 = 60;
/// How long a token request may take.
const TOKEN_DEADLINE: Duration = Duration::from_secs(60);

/// A `WWW-Authenticate` challenge.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Challenge {
    /// `bearer` or `basic`, lower-cased.
    pub scheme: String,
    /// Where tokens come from.
    pub realm: Option<String>,
    /// The `service` to ask the realm for.
    pub service: Option<String>,
}

/// Reads a challenge: `SCHEME k="v",k=v,…` (quoted values may hold commas
/// and `\"`).
pub fn parse_challenge(header: &str) -> Option<Challenge> {
    let header = header.trim();
    let (scheme, rest) = header.split_once(' ').unwrap_or((header, ""));
    let mut c = Challenge {
        scheme: scheme.to_ascii_lowercase(),
        realm: None,
        service: None,
    };
    let mut chars = rest.chars().peekable();
    loop {
        while chars
            .peek()
            .is_some_and(|ch| *ch == ',' || ch.is_whitespace())
        {
            chars.next();
        }
        let key: String = chars.by_ref().take_while(|ch| *ch != '=').collect();
        if key.is_empty() {
            break;
        }
        let mut value = String::new();
        if chars.peek() == Some(&'"') {
            chars.next();
            while let Some(ch) = chars.next() {
                match ch {
                    '\\' => value.extend(chars.next()),
                    '"' => break,
                    other => value.push(other),
                }
            }
        } else {
            value = chars.by_ref().take_while(|ch| *ch != ',').collect();
        }
        match key.trim().to_ascii_lowercase().as_str() {
            "realm" => c.realm = Some(value),
            "service" => c.service = Some(value),
            _ => {}
        }
    }
    matches!(c.scheme.as_str(), "bearer" | "basic").then_some(c)
}

/// One repository's session with its registry.
struct Session {
    /// `scheme://host:port` of the registry.
    origin: String,
    /// `/v2/REPO/`: the URLs the header is for.
    prefix: String,
    registry: String,
    repository: String,
    challenge: Challenge,
    header: HeaderValue,
    /// When a bearer token must be renewed; none for Basic.
    renew_at: Option<Instant>,
}

/// Every registry session of a run; the [`Authorizer`] of its `Http`.
pub struct RegistryAuth {
    client: reqwest::Client,
    credentials: Credentials,
    /// The actions a token is asked for: `pull`, or `pull,push` for a push.
    actions: &'static str,
    sessions: Mutex<Vec<Session>>,
}

#[derive(Deserialize)]
struct TokenAnswer {
    #[serde(default)]
    token: Option<String>,
    #[serde(default)]
    access_token: Option<String>,
    #[serde(default)]
    expires_in: Option<u64>,
}

fn origin_of(url: &Url) -> String {
    format!(
        "{}://{}:{}",
        url.scheme(),
        url.host_str().unwrap_or(""),
        url.port_or_known_default().unwrap_or(0)
    )
}

impl RegistryAuth {
    /// Sessions asked for with `client`, credentials from `credentials`.
    pub fn new(client: reqwest::Client, credentials: Credentials) -> Self {
        Self {
            client,
            credentials,
            actions: "pull",
            sessions: Mutex::new(Vec::new()),
        }
    }

    /// The same, asking tokens that may push (`llmgw mirror push`).
    #[must_use]
    pub fn for_push(mut self) -> Self {
        self.actions = "pull,push";
        self
    }

    /// Whether a session for `repository` at `base`'s origin exists.
    pub fn has_session(&self, base: &Url, repository: &str) -> bool {
        let (origin, prefix) = (origin_of(base), format!("/v2/{repository}/"));
        self.lock()
            .iter()
            .any(|s| s.origin == origin && s.prefix == prefix)
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, Vec<Session>> {
        // A panic elsewhere while holding the lock leaves plain data.
        self.sessions
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
    }

    /// Answers a 401's challenge for `repository` at `registry` (`base` its
    /// API URL): gets a token, or takes the credential for Basic.
    pub async fn login(
        &self,
        registry: &str,
        base: &Url,
        repository: &str,
        www_authenticate: &str,
    ) -> Result<(), OciError> {
        let challenge = parse_challenge(www_authenticate).ok_or_else(|| OciError::Challenge {
            registry: registry.to_string(),
            header: www_authenticate.chars().take(300).collect(),
        })?;
        let (header, renew_at) = self
            .authorize(registry, base, repository, &challenge)
            .await?;
        let session = Session {
            origin: origin_of(base),
            prefix: format!("/v2/{repository}/"),
            registry: registry.to_string(),
            repository: repository.to_string(),
            challenge,
            header,
            renew_at,
        };
        let mut sessions = self.lock();
        sessions.retain(|s| !(s.origin == session.origin && s.prefix == session.prefix));
        sessions.push(session);
        Ok(())
    }

    async fn authorize(
        &self,
        registry: &str,
        base: &Url,
        repository: &str,
        challenge: &Challenge,
    ) -> Result<(HeaderValue, Option<Instant>), OciError> {
        let credential = self.credentials.for_registry(registry);
        if challenge.scheme == "basic" {
            let Some(Credential::Password { user, password }) = credential else {
                return Err(OciError::NeedsCredential {
                    registry: registry.to_string(),
                });
            };
            let b64 =
                base64::engine::general_purpose::STANDARD.encode(format!("{user}:{}", password.0));
            return Ok((sensitive(&format!("Basic {b64}"))?, None));
        }
        let realm_text = challenge.realm.clone().unwrap_or_default();
        let realm = Url::parse(&realm_text).map_err(|_| OciError::Challenge {
            registry: registry.to_string(),
            header: format!("realm {realm_text:?} is not a URL"),
        })?;
        let plain_ok = base.scheme() == "http";
        if !(realm.scheme() == "https" || (realm.scheme() == "http" && plain_ok)) {
            return Err(OciError::Challenge {
                registry: registry.to_string(),
                header: format!(
                    "realm {} is not https; no credential or token request is sent over plain HTTP \
                     to an https registry's realm",
                    redact(&realm)
                ),
            });
        }
        let scope = format!("repository:{repository}:{}", self.actions);
        let encode = |pairs: &[(&str, &str)]| {
            let mut ser = form_urlencoded::Serializer::new(String::new());
            for (k, v) in pairs {
                ser.append_pair(k, v);
            }
            ser.finish()
        };
        let mut pairs: Vec<(&str, &str)> = vec![("scope", &scope)];
        if let Some(s) = &challenge.service {
            pairs.push(("service", s));
        }
        let with_query = || {
            let mut url = realm.clone();
            url.set_query(Some(&encode(&pairs)));
            url
        };
        let req = match credential {
            Some(Credential::IdentityToken(t)) => {
                let mut form = pairs.clone();
                form.extend([
                    ("grant_type", "refresh_token"),
                    ("refresh_token", t.0.as_str()),
                    ("client_id", "llmgw"),
                ]);
                self.client
                    .post(realm.clone())
                    .header(
                        reqwest::header::CONTENT_TYPE,
                        "application/x-www-form-urlencoded",
                    )
                    .body(encode(&form))
            }
            Some(Credential::Password { user, password }) => self
                .client
                .get(with_query())
                .basic_auth(user, Some(&password.0)),
            None => self.client.get(with_query()),
        };
        let answer = fetch_token(req, &realm).await?;
        let token = answer
            .token
            .or(answer.access_token)
            .filter(|t| !t.is_empty())
            .ok_or_else(|| OciError::TokenAnswer {
                realm: redact(&realm),
                detail: "it holds no token".into(),
            })?;
        let life = Duration::from_secs(answer.expires_in.unwrap_or(DEFAULT_EXPIRY).max(1));
        let renew_at = Instant::now() + life.saturating_sub(RENEW_EARLY.min(life / 2));
        Ok((sensitive(&format!("Bearer {token}"))?, Some(renew_at)))
    }

    /// The header for `url`, the token renewed first when it is about to
    /// expire (a failed renewal keeps the old one: the request then fails
    /// in its own words).
    async fn header_for(&self, url: &Url) -> Option<HeaderValue> {
        let origin = origin_of(url);
        let (header, renew) = {
            let sessions = self.lock();
            let s = sessions
                .iter()
                .find(|s| s.origin == origin && url.path().starts_with(&s.prefix))?;
            let due = s.renew_at.is_some_and(|t| Instant::now() >= t);
            let renew = due.then(|| {
                (
                    s.registry.clone(),
                    s.repository.clone(),
                    s.challenge.clone(),
                )
            });
            (s.header.clone(), renew)
        };
        let Some((registry, repository, challenge)) = renew else {
            return Some(header);
        };
        match self
            .authorize(&registry, url, &repository, &challenge)
            .await
        {
            Ok((fresh, renew_at)) => {
                let mut sessions = self.lock();
                if let Some(s) = sessions
                    .iter_mut()
                    .find(|s| s.origin == origin && url.path().starts_with(&s.prefix))
                {
                    s.header = fresh.clone();
                    s.renew_at = renew_at;
                }
                Some(fresh)
            }
            Err(e) => {
                tracing::warn!(
                    "renewing the token for {registry}/{repository}: {}",
                    llmgw_shared::Chain(&e)
                );
                Some(header)
            }
        }
    }
}

impl Authorizer for RegistryAuth {
    fn authorization<'a>(
        &'a self,
        url: &'a Url,
    ) -> Pin<Box<dyn Future<Output = Option<HeaderValue>> + Send + 'a>> {
        Box::pin(self.header_for(url))
    }
}

fn sensitive(value: &str) -> Result<HeaderValue, OciError> {
    let mut v = HeaderValue::from_str(value).map_err(|_| OciError::TokenAnswer {
        realm: String::new(),
        detail: "the token is not a header value".into(),
    })?;
    v.set_sensitive(true);
    Ok(v)
}

async fn fetch_token(req: reqwest::RequestBuilder, realm: &Url) -> Result<TokenAnswer, OciError> {
    let shown = redact(realm);
    let transport = |e: reqwest::Error| OciError::TokenTransport {
        realm: shown.clone(),
        source: io::Error::other(e.without_url()),
    };
    let exchange = async {
        let mut resp = req.send().await.map_err(transport)?;
        let status = resp.status();
        let mut body = Vec::new();
        while let Some(chunk) = resp.chunk().await.map_err(transport)? {
            if body.len() + chunk.len() > MAX_TOKEN_ANSWER {
                return Err(OciError::TokenAnswer {
                    realm: shown.clone(),
                    detail: format!("the answer is larger than {MAX_TOKEN_ANSWER} bytes"),
                });
            }
            body.extend_from_slice(&chunk);
        }
        if !status.is_success() {
            return Err(OciError::TokenRefused {
                realm: shown.clone(),
                status: status.as_u16(),
            });
        }
        serde_json::from_slice::<TokenAnswer>(&body).map_err(|e| OciError::TokenAnswer {
            realm: shown.clone(),
            detail: format!("not the token JSON ({e})"),
        })
    };
    tokio::time::timeout(TOKEN_DEADLINE, exchange)
        .await
        .map_err(|_| OciError::TokenAnswer {
            realm: shown.clone(),
            detail: format!("no answer within {} s", TOKEN_DEADLINE.as_secs()),
        })?
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn challenges_as_registries_send_them() {
        let c = parse_challenge(
            r#"Bearer realm="https://auth.docker.io/token",service="registry.docker.io",scope="repository:library/ubuntu:pull,push""#,
        )
        .unwrap();
        assert_eq!(c.scheme, "bearer");
        assert_eq!(c.realm.as_deref(), Some("https://auth.docker.io/token"));
        assert_eq!(c.service.as_deref(), Some("registry.docker.io"));
        let c = parse_challenge(r#"Basic realm="Registry Realm""#).unwrap();
        assert_eq!(c.scheme, "basic");
        let c = parse_challenge(r#"Bearer realm="https://a/t\"x",service=plain"#).unwrap();
        assert_eq!(c.realm.as_deref(), Some("https://a/t\"x"));
        assert_eq!(c.service.as_deref(), Some("plain"));
        assert!(parse_challenge("Negotiate abc").is_none());
    }
}
