//! Image references, read and normalized exactly as Docker reads them
//! (distribution's `reference.ParseNormalizedNamed`): `ubuntu` is
//! `docker.io/library/ubuntu:latest`, `vllm/vllm-openai:v0.34.0` is
//! `docker.io/vllm/vllm-openai:v0.34.0`, a first component with a `.` or a
//! `:` (or `localhost`) is a registry host, `index.docker.io` is
//! `docker.io`, and `@sha256:…` pins the digest.
//!
//! Invariant: a [`Reference`] holds only names that passed the OCI grammar
//! (`llmgw_shared::manifest::is_*`), so nothing from the command line
//! reaches a URL or the manifest unchecked.

use std::fmt;

use llmgw_shared::Sha256;
use llmgw_shared::manifest::{is_registry_host, is_repository, is_tag, reserved_prefix};

pub use crate::error::oci::ReferenceError;

/// Docker Hub's name in references and in the manifest.
pub const DOCKER_HUB: &str = "docker.io";
/// The host Docker Hub's registry API answers on.
pub const DOCKER_HUB_API: &str = "registry-1.docker.io";

/// A reference, normalized.
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord)]
pub struct Reference {
    /// The registry as Docker names it (`docker.io`, `ghcr.io`,
    /// `127.0.0.1:5000`).
    pub registry: String,
    /// The repository path (`library/ubuntu`).
    pub repository: String,
    /// The tag; `latest` when neither a tag nor a digest was given.
    pub tag: Option<String>,
    /// The digest the reference is pinned to, if any.
    pub pin: Option<Sha256>,
}

impl Reference {
    /// Reads an image's Docker reference and normalizes it as Docker does;
    /// a name the mirror reserves ([`reserved_prefix`]) is refused.
    pub fn parse(given: &str) -> Result<Self, ReferenceError> {
        Self::parse_any(given)?.unreserved(given, false)
    }

    /// Refuses a repository path the mirror makes itself.
    fn unreserved(self, given: &str, chart: bool) -> Result<Self, ReferenceError> {
        match reserved_prefix(&self.repository, chart) {
            Some(prefix) => Err(ReferenceError::Reserved {
                given: given.to_string(),
                prefix,
            }),
            None => Ok(self),
        }
    }

    fn parse_any(given: &str) -> Result<Self, ReferenceError> {
        let shape = || ReferenceError::Shape {
            given: given.to_string(),
        };
        if given.is_empty() || given.len() > 512 || given.chars().any(|c| c.is_whitespace()) {
            return Err(shape());
        }
        let (named, pin) = match given.split_once('@') {
            Some((n, d)) => (n, Some(parse_digest(given, d)?)),
            None => (given, None),
        };
        // A tag is after the last ':' only when no '/' follows it (else it
        // is a host's port).
        let (name, tag) = match named.rfind(':') {
            Some(i) if !named[i..].contains('/') => (&named[..i], Some(&named[i + 1..])),
            _ => (named, None),
        };
        let (registry, mut repository) = split_domain(name);
        if registry == "index.docker.io" || registry == DOCKER_HUB {
            if !repository.contains('/') {
                repository = format!("library/{repository}");
            }
            return Self::checked(given, DOCKER_HUB.to_string(), repository, tag, pin);
        }
        Self::checked(given, registry, repository, tag, pin)
    }

    /// Reads a chart reference, `oci://REGISTRY/REPOSITORY:VERSION` (a
    /// registry always given, as Helm wants it); Helm's tag is the version
    /// with `+` written as `_`.
    pub fn parse_chart(given: &str) -> Result<Self, ReferenceError> {
        let chart = || ReferenceError::Chart {
            given: given.to_string(),
        };
        let rest = given.strip_prefix("oci://").ok_or_else(chart)?;
        let (host, _) = rest.split_once('/').ok_or_else(chart)?;
        if !(host.contains('.') || host.contains(':') || host == "localhost") {
            return Err(chart());
        }
        let r = Self::parse_any(&rest.replace('+', "_"))?.unreserved(given, true)?;
        if r.tag.as_deref() == Some("latest") && !rest.ends_with(":latest") {
            // Helm needs the version: no tag means none was given.
            return Err(chart());
        }
        Ok(r)
    }

    fn checked(
        given: &str,
        registry: String,
        repository: String,
        tag: Option<&str>,
        pin: Option<Sha256>,
    ) -> Result<Self, ReferenceError> {
        if !is_registry_host(&registry) {
            return Err(ReferenceError::Host {
                given: given.to_string(),
                host: registry,
            });
        }
        if !is_repository(&repository) {
            return Err(ReferenceError::Repository {
                given: given.to_string(),
                repository,
            });
        }
        let tag = match (tag, &pin) {
            (Some(t), _) if !is_tag(t) => {
                return Err(ReferenceError::Tag {
                    given: given.to_string(),
                    tag: t.to_string(),
                });
            }
            (Some(t), _) => Some(t.to_string()),
            // Docker's TagNameOnly: `latest` only when nothing pins it.
            (None, None) => Some("latest".to_string()),
            (None, Some(_)) => None,
        };
        Ok(Self {
            registry,
            repository,
            tag,
            pin,
        })
    }

    /// The host the registry API answers on: Docker Hub's API is not at
    /// `docker.io`.
    pub fn api_host(&self) -> &str {
        if self.registry == DOCKER_HUB {
            DOCKER_HUB_API
        } else {
            &self.registry
        }
    }

    /// What the manifest is asked for by: the tag when there is one (and
    /// then checked against the pin), else the digest.
    pub fn asked(&self) -> String {
        match (&self.tag, &self.pin) {
            (Some(t), _) => t.clone(),
            (None, Some(d)) => format!("sha256:{d}"),
            (None, None) => "latest".to_string(),
        }
    }
}

impl fmt::Display for Reference {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}/{}", self.registry, self.repository)?;
        if let Some(t) = &self.tag {
            write!(f, ":{t}")?;
        }
        if let Some(d) = &self.pin {
            write!(f, "@sha256:{d}")?;
        }
        Ok(())
    }
}

/// Docker's `splitDockerDomain`: the first component is a host when it has
/// a `.` or a `:`, or is `localhost`; else the name is on Docker Hub.
fn split_domain(name: &str) -> (String, String) {
    match name.split_once('/') {
        Some((first, rest))
            if first.contains('.') || first.contains(':') || first == "localhost" =>
        {
            (first.to_string(), rest.to_string())
        }
        _ => (DOCKER_HUB.to_string(), name.to_string()),
    }
}

fn parse_digest(given: &str, d: &str) -> Result<Sha256, ReferenceError> {
    d.strip_prefix("sha256:")
        .and_then(|hex| Sha256::parse_exact("digest", hex).ok())
        .ok_or_else(|| ReferenceError::Digest {
            given: given.to_string(),
            digest: d.to_string(),
        })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn norm(s: &str) -> String {
        Reference::parse(s).unwrap().to_string()
    }

    #[test]
    fn normalized_as_docker_does() {
        let pin = "a".repeat(64);
        for (given, expected) in [
            ("ubuntu", "docker.io/library/ubuntu:latest"),
            ("ubuntu:24.04", "docker.io/library/ubuntu:24.04"),
            (
                "vllm/vllm-openai:v0.34.0",
                "docker.io/vllm/vllm-openai:v0.34.0",
            ),
            ("docker.io/ubuntu", "docker.io/library/ubuntu:latest"),
            (
                "index.docker.io/library/ubuntu",
                "docker.io/library/ubuntu:latest",
            ),
            ("ghcr.io/acme/app", "ghcr.io/acme/app:latest"),
            ("127.0.0.1:5000/acme/app:v1", "127.0.0.1:5000/acme/app:v1"),
            ("localhost/app", "localhost/app:latest"),
            ("localhost:5000/app:1", "localhost:5000/app:1"),
            (
                "nvcr.io/nvidia/pytorch:25.01-py3",
                "nvcr.io/nvidia/pytorch:25.01-py3",
            ),
        ] {
            assert_eq!(norm(given), expected, "{given}");
        }
        let r = Reference::parse(&format!("ubuntu@sha256:{pin}")).unwrap();
        assert_eq!(r.tag, None);
        assert_eq!(r.pin.as_ref().map(|p| p.as_str()), Some(pin.as_str()));
        assert_eq!(r.asked(), format!("sha256:{pin}"));
        let r = Reference::parse(&format!("ubuntu:24.04@sha256:{pin}")).unwrap();
        assert_eq!(r.tag.as_deref(), Some("24.04"));
        assert_eq!(r.asked(), "24.04");
        assert_eq!(
            Reference::parse("ubuntu").unwrap().api_host(),
            DOCKER_HUB_API
        );
    }

    #[test]
    fn refusals_name_the_part() {
        for (given, what) in [
            ("", "not an image reference"),
            ("Ubuntu", "repository"),
            ("acme/../x", "repository"),
            ("ubuntu:a+b", "tag"),
            ("ubuntu@sha256:abc", "digest"),
            ("ubuntu@md5:abc", "digest"),
            ("bad_host.io:99999/x", "registry host"),
            ("a b", "not an image reference"),
        ] {
            let e = Reference::parse(given).unwrap_err().to_string();
            assert!(e.contains(what), "{given}: {e}");
        }
    }

    #[test]
    fn charts() {
        let r = Reference::parse_chart("oci://127.0.0.1:5000/charts/acme:0.1.0+build.1").unwrap();
        assert_eq!(r.registry, "127.0.0.1:5000");
        assert_eq!(r.repository, "charts/acme");
        assert_eq!(r.tag.as_deref(), Some("0.1.0_build.1"));
        for bad in ["charts/acme:1", "oci://acme:1", "oci://ghcr.io/acme"] {
            assert!(Reference::parse_chart(bad).is_err(), "{bad}");
        }
    }

    #[test]
    fn the_mirrors_own_names_are_refused() {
        for given in [
            "127.0.0.1:5000/models/acme/tiny:main",
            "127.0.0.1:5000/modelpack/acme/tiny:abc",
            "127.0.0.1:5000/charts/acme:1",
            "datasets/acme/set",
        ] {
            let e = Reference::parse(given).unwrap_err();
            assert!(matches!(e, ReferenceError::Reserved { .. }), "{given}: {e}");
        }
        let e = Reference::parse_chart("oci://127.0.0.1:5000/models/acme:1.0.0").unwrap_err();
        assert!(
            matches!(
                e,
                ReferenceError::Reserved {
                    prefix: "models",
                    ..
                }
            ),
            "{e}"
        );
    }
}
