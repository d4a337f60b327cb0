//! Where `llmgw mirror push` sends: `--to HOST[:PORT][/PREFIX]`, over
//! https, or plain HTTP only when `--insecure-registry` says so.
//!
//! Invariant: the host is a `host[:port]` as references name registries
//! and the prefix a path of the OCI grammar, checked before any request,
//! so every repository pushed is `PREFIX/NAME` on that one origin.

use llmgw_shared::manifest::{is_registry_host, is_repository};
use reqwest::Url;

use crate::error::push::PushError;
use crate::sources::oci::client::Repo;

/// The registry pushed to.
#[derive(Debug, Clone)]
pub struct Target {
    /// `host[:port]`, whose credentials apply.
    pub registry: String,
    /// The API's base URL.
    pub base: Url,
    /// The path every repository is pushed under, if any.
    pub prefix: Option<String>,
}

impl Target {
    /// Reads `--to`; `insecure` allows plain HTTP.
    pub fn parse(given: &str, insecure: bool) -> Result<Self, PushError> {
        let bad = |why| PushError::Target {
            given: llmgw_shared::shown(given).to_string(),
            why,
        };
        if given.contains("://") {
            return Err(bad(
                "give the registry without a scheme (plain HTTP is --insecure-registry)",
            ));
        }
        let (host, prefix) = match given.split_once('/') {
            Some((h, p)) => (h, Some(p.trim_end_matches('/'))),
            None => (given, None),
        };
        if !is_registry_host(host) {
            return Err(bad("the host is not HOST[:PORT]"));
        }
        let registry = host.to_ascii_lowercase();
        let prefix = match prefix {
            Some("") | None => None,
            Some(p) if is_repository(p) => Some(p.to_string()),
            Some(_) => return Err(bad("the prefix is not a lower-case OCI repository path")),
        };
        let scheme = if insecure { "http" } else { "https" };
        let base = Url::parse(&format!("{scheme}://{host}/"))
            .map_err(|_| bad("the host is not a URL's host"))?;
        Ok(Self {
            registry,
            base,
            prefix,
        })
    }

    /// The repository `name` is pushed to.
    pub fn repo(&self, name: &str) -> Repo {
        let repository = match &self.prefix {
            Some(p) => format!("{p}/{name}"),
            None => name.to_string(),
        };
        Repo {
            shown: format!("{}/{repository}", self.registry),
            registry: self.registry.clone(),
            base: self.base.clone(),
            repository,
            redirected: false,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn hosts_prefixes_and_schemes() {
        let t = Target::parse("127.0.0.1:5000/site/llmgw", true).unwrap();
        assert_eq!(t.base.as_str(), "http://127.0.0.1:5000/");
        assert_eq!(t.repo("acme/app").repository, "site/llmgw/acme/app");
        let t = Target::parse("harbor.site", false).unwrap();
        assert_eq!(t.base.as_str(), "https://harbor.site/");
        assert_eq!(t.repo("acme/app").shown, "harbor.site/acme/app");
        for bad in ["http://x:5000", "x:5000/Upper", "x:notaport", ""] {
            assert!(Target::parse(bad, false).is_err(), "{bad}");
        }
    }
}
