//! Registry credentials as Docker, Podman and skopeo keep them: the
//! `auths` of `$REGISTRY_AUTH_FILE`, else `~/.docker/config.json` — per
//! registry, `auth` (base64 `user:password`) or `identitytoken` (an OAuth2
//! refresh token) — read bounded, kept in memory, never written anywhere
//! and never printed ([`Secret`] prints as `***`).
//!
//! Invariant: a credential is only ever handed out for the registry it is
//! filed under (Docker Hub's `https://index.docker.io/v1/` key is
//! `docker.io`); [`super::auth`] sends it only to that registry and the
//! token realm that registry names.

use std::collections::BTreeMap;
use std::io::Read;
use std::path::Path;

use base64::Engine;
use serde::Deserialize;

use super::error::OciError;
use crate::spec::oci::reference::DOCKER_HUB;

/// The longest auth file read: a real one is a few kilobytes.
const MAX_AUTH_FILE: u64 = 1 << 20;

/// A secret that never shows itself.
#[derive(Clone)]
pub struct Secret(pub(super) String);

impl std::fmt::Debug for Secret {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("***")
    }
}

/// One registry's credential.
#[derive(Debug, Clone)]
pub enum Credential {
    /// A user name and password (or personal access token).
    Password {
        /// The user name.
        user: String,
        /// The password.
        password: Secret,
    },
    /// An identity token: an OAuth2 refresh token for the token realm.
    IdentityToken(Secret),
}

/// Every registry's credential, by registry as references name it.
#[derive(Debug, Clone, Default)]
pub struct Credentials {
    by_registry: BTreeMap<String, Credential>,
}

#[derive(Deserialize)]
struct AuthFile {
    #[serde(default)]
    auths: BTreeMap<String, AuthEntry>,
}

#[derive(Deserialize)]
struct AuthEntry {
    #[serde(default)]
    auth: Option<String>,
    #[serde(default)]
    username: Option<String>,
    #[serde(default)]
    password: Option<String>,
    #[serde(default)]
    identitytoken: Option<String>,
}

impl Credentials {
    /// Reads `$REGISTRY_AUTH_FILE` when it is set, else
    /// `~/.docker/config.json` when it exists; none is no credentials.
    pub fn load(auth_file: Option<&Path>, home: Option<&Path>) -> Result<Self, OciError> {
        let path = match (auth_file, home) {
            (Some(p), _) => p.to_path_buf(),
            (None, Some(h)) => h.join(".docker/config.json"),
            (None, None) => return Ok(Self::default()),
        };
        if auth_file.is_none() && !path.exists() {
            return Ok(Self::default());
        }
        let unreadable = |source| OciError::AuthFile {
            path: path.clone(),
            source,
        };
        let file = std::fs::File::open(&path).map_err(unreadable)?;
        let mut text = Vec::new();
        file.take(MAX_AUTH_FILE + 1)
            .read_to_end(&mut text)
            .map_err(unreadable)?;
        if text.len() as u64 > MAX_AUTH_FILE {
            return Err(OciError::AuthFileEntry {
                path,
                registry: String::new(),
                detail: format!("it is larger than {MAX_AUTH_FILE} bytes"),
            });
        }
        let parsed: AuthFile =
            serde_json::from_slice(&text).map_err(|source| OciError::AuthFileJson {
                path: path.clone(),
                source,
            })?;
        let mut by_registry = BTreeMap::new();
        for (key, entry) in parsed.auths {
            let registry = registry_of_key(&key);
            if let Some(c) = credential_of(&path, &registry, entry)? {
                by_registry.insert(registry, c);
            }
        }
        Ok(Self { by_registry })
    }

    /// The credential filed for `registry` (as references name it).
    pub fn for_registry(&self, registry: &str) -> Option<&Credential> {
        self.by_registry.get(registry)
    }
}

/// The registry an `auths` key is for: `https://index.docker.io/v1/` and
/// `registry-1.docker.io` are Docker Hub, `docker.io`; a URL's scheme and
/// path are dropped.
fn registry_of_key(key: &str) -> String {
    let k = key
        .trim()
        .trim_start_matches("https://")
        .trim_start_matches("http://");
    let host = k.split('/').next().unwrap_or(k).to_ascii_lowercase();
    match host.as_str() {
        "index.docker.io" | "registry-1.docker.io" => DOCKER_HUB.to_string(),
        _ => host,
    }
}

fn credential_of(
    path: &Path,
    registry: &str,
    e: AuthEntry,
) -> Result<Option<Credential>, OciError> {
    let bad = |detail: &str| OciError::AuthFileEntry {
        path: path.to_path_buf(),
        registry: registry.to_string(),
        detail: detail.to_string(),
    };
    if let Some(t) = e.identitytoken.filter(|t| !t.is_empty()) {
        return Ok(Some(Credential::IdentityToken(Secret(t))));
    }
    if let (Some(user), Some(password)) = (e.username.clone(), e.password) {
        return Ok(Some(Credential::Password {
            user,
            password: Secret(password),
        }));
    }
    let Some(auth) = e.auth.filter(|a| !a.is_empty()) else {
        return Ok(None);
    };
    let decoded = base64::engine::general_purpose::STANDARD
        .decode(auth.trim())
        .map_err(|_| bad("its auth is not base64"))?;
    let text = String::from_utf8(decoded).map_err(|_| bad("its auth is not UTF-8"))?;
    let (user, password) = text
        .split_once(':')
        .ok_or_else(|| bad("its auth is not base64 of user:password"))?;
    Ok(Some(Credential::Password {
        user: user.to_string(),
        password: Secret(password.to_string()),
    }))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn auths_by_registry_never_printed() {
        let dir = tempfile::tempdir().unwrap();
        let p = dir.path().join("auth.json");
        let b64 = base64::engine::general_purpose::STANDARD.encode("alice:s3cret");
        std::fs::write(
            &p,
            format!(
                r#"{{"auths":{{"https://index.docker.io/v1/":{{"auth":"{b64}"}},
                "ghcr.io":{{"identitytoken":"tok-xyz"}},"empty.io":{{}}}}}}"#
            ),
        )
        .unwrap();
        let c = Credentials::load(Some(&p), None).unwrap();
        match c.for_registry("docker.io").unwrap() {
            Credential::Password { user, password } => {
                assert_eq!(user, "alice");
                assert_eq!(password.0, "s3cret");
            }
            other => panic!("{other:?}"),
        }
        assert!(matches!(
            c.for_registry("ghcr.io"),
            Some(Credential::IdentityToken(_))
        ));
        assert!(c.for_registry("empty.io").is_none());
        let shown = format!("{c:?}");
        assert!(
            !shown.contains("s3cret") && !shown.contains("tok-xyz"),
            "{shown}"
        );

        std::fs::write(&p, r#"{"auths":{"x.io":{"auth":"!!"}}}"#).unwrap();
        let e = Credentials::load(Some(&p), None).unwrap_err().to_string();
        assert!(e.contains("x.io") && e.contains("base64"), "{e}");
        // No file at the default place: no credentials, no error.
        let none = Credentials::load(None, Some(dir.path())).unwrap();
        assert!(none.for_registry("docker.io").is_none());
    }
}
