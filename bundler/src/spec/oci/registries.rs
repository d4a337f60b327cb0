//! Where each registry is asked: `--insecure-registry HOST` (plain HTTP)
//! and `--registry HOST=URL` (another address for a registry a reference
//! names: a site's pull-through cache, a test's registry), read here
//! before any network.
//!
//! Invariant: an address only changes where requests go. The image is
//! still recorded and served under the registry its reference names, and
//! every manifest and blob fetched from the address is checked against the
//! same digests as from the registry itself (the tag's answer against its
//! `Docker-Content-Digest` and any pin, each child against its parent's
//! descriptor), as `--index` does for Python indexes.

use llmgw_shared::manifest::is_registry_host;
use reqwest::Url;

use crate::error::{CreateError, FlagError};

/// The registries of a run and how each is reached.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Registries {
    /// `--insecure-registry`: asked over plain HTTP at their own name.
    pub insecure: Vec<String>,
    /// `--registry HOST=URL`: asked at URL instead (its scheme decides
    /// TLS), each HOST once.
    pub addresses: Vec<(String, Url)>,
}

impl Registries {
    /// Reads `--insecure-registry` and `--registry` values.
    pub fn parse(insecure: &[String], addresses: &[String]) -> Result<Self, CreateError> {
        let insecure = insecure
            .iter()
            .map(|h| super::parse_insecure(h))
            .collect::<Result<Vec<_>, _>>()?;
        let mut out: Vec<(String, Url)> = Vec::new();
        for text in addresses {
            let (host, url) = parse_address(text)?;
            if out.iter().any(|(h, _)| *h == host) {
                return Err(bad(
                    text,
                    &format!("{host} is given twice; give one address each"),
                ));
            }
            out.push((host, url));
        }
        Ok(Self {
            insecure,
            addresses: out,
        })
    }

    /// The API base (`scheme://host[:port]/path/`) `registry` is asked at,
    /// given the host its API answers on by default (`api_host`:
    /// `registry-1.docker.io` for `docker.io`).
    pub fn base_for(&self, registry: &str, api_host: &str) -> Option<Url> {
        if let Some((_, url)) = self.addresses.iter().find(|(h, _)| h == registry) {
            return Some(url.clone());
        }
        let scheme = if self.insecure.iter().any(|h| h == registry) {
            "http"
        } else {
            "https"
        };
        Url::parse(&format!("{scheme}://{api_host}/")).ok()
    }

    /// Whether `registry` is asked somewhere other than its own name.
    pub fn redirected(&self, registry: &str) -> bool {
        self.addresses.iter().any(|(h, _)| h == registry)
    }
}

fn bad(text: &str, why: &str) -> CreateError {
    FlagError::Registry {
        text: text.to_string(),
        why: why.to_string(),
    }
    .into()
}

/// `HOST=URL`: HOST a registry as references name it (`docker.io`,
/// `ghcr.io`, `127.0.0.1:5000`), URL http(s) with a host and no query or
/// fragment; kept ending in `/` so `v2/…` joins under any path.
fn parse_address(text: &str) -> Result<(String, Url), CreateError> {
    let (host, url) = text.split_once('=').ok_or_else(|| bad(text, "no '='"))?;
    let host = match host.trim() {
        "index.docker.io" | "registry-1.docker.io" => "docker.io",
        h => h,
    };
    if !is_registry_host(host) {
        return Err(bad(text, "HOST is not a registry host name"));
    }
    let mut u = Url::parse(url.trim()).map_err(|_| bad(text, "URL does not parse"))?;
    if !matches!(u.scheme(), "http" | "https") || u.host().is_none() {
        return Err(bad(text, "URL is not http:// or https:// with a host"));
    }
    if u.query().is_some() || u.fragment().is_some() || !u.username().is_empty() {
        return Err(bad(
            text,
            "URL has a query, fragment or user; give credentials in the auth file",
        ));
    }
    if !u.path().ends_with('/') {
        let path = format!("{}/", u.path());
        u.set_path(&path);
    }
    Ok((host.to_string(), u))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn an_address_replaces_where_a_registry_is_asked() {
        let r = Registries::parse(
            &["reg.site:5000".into()],
            &[
                "docker.io=http://127.0.0.1:5000".into(),
                "ghcr.io=https://cache.site/ghcr".into(),
            ],
        )
        .unwrap();
        let base = |reg: &str, api: &str| r.base_for(reg, api).unwrap().to_string();
        assert_eq!(
            base("docker.io", "registry-1.docker.io"),
            "http://127.0.0.1:5000/"
        );
        assert_eq!(base("ghcr.io", "ghcr.io"), "https://cache.site/ghcr/");
        assert_eq!(
            base("reg.site:5000", "reg.site:5000"),
            "http://reg.site:5000/"
        );
        assert_eq!(base("quay.io", "quay.io"), "https://quay.io/");
        assert!(r.redirected("docker.io") && !r.redirected("quay.io"));
        let r = Registries::parse(&[], &["index.docker.io=http://h:1".into()]).unwrap();
        assert!(r.redirected("docker.io"));
    }

    #[test]
    fn a_bad_address_names_the_flag_and_what_is_wrong() {
        for (text, why) in [
            ("docker.io", "no '='"),
            ("docker.io/x=http://h", "not a registry host"),
            ("docker.io=ftp://h", "not http:// or https://"),
            ("docker.io=http://u:p@h", "credentials in the auth file"),
            ("docker.io=http://h?x=1", "query"),
            ("docker.io=not a url", "does not parse"),
        ] {
            let e = Registries::parse(&[], &[text.into()]).unwrap_err();
            let said = e.to_string();
            assert!(said.starts_with("--registry "), "{text}: {said}");
            assert!(said.contains(why), "{text}: {said}");
            assert!(e.is_usage(), "{text}");
        }
        let e = Registries::parse(
            &[],
            &["docker.io=http://a".into(), "docker.io=http://b".into()],
        )
        .unwrap_err();
        assert!(e.to_string().contains("given twice"), "{e}");
    }
}
