//! The OCI distribution-spec's grammar for the names an image is known by:
//! repository paths, tags, registry hosts, media types and platforms.
//!
//! Invariant: a name that passes here is exactly what the spec allows (so
//! a real registry would accept it) and can never be read as a path
//! outside its place: no `..`, no leading or doubled `/`, no control
//! characters. The bundler parses references with these same checks, and
//! the mirror serves only names that passed them.

/// The longest repository path accepted (distribution's own limit for a
/// whole name).
pub const MAX_REPOSITORY_CHARS: usize = 255;

/// Whether `path` is a repository path of the distribution spec:
/// components `[a-z0-9]+((\.|_|__|-+)[a-z0-9]+)*` joined by `/`.
pub fn is_repository(path: &str) -> bool {
    !path.is_empty() && path.len() <= MAX_REPOSITORY_CHARS && path.split('/').all(is_path_component)
}

fn is_path_component(c: &str) -> bool {
    let b = c.as_bytes();
    let alnum = |x: u8| x.is_ascii_lowercase() || x.is_ascii_digit();
    if b.is_empty() || !alnum(b[0]) || !alnum(b[b.len() - 1]) {
        return false;
    }
    let mut i = 0;
    while i < b.len() {
        if alnum(b[i]) {
            i += 1;
            continue;
        }
        // A separator: `.`, `_`, `__`, or any run of `-`, between alnums.
        let start = i;
        match b[i] {
            b'.' => i += 1,
            b'_' => {
                i += 1;
                if i < b.len() && b[i] == b'_' {
                    i += 1;
                }
            }
            b'-' => {
                while i < b.len() && b[i] == b'-' {
                    i += 1;
                }
            }
            _ => return false,
        }
        if start == 0 || i >= b.len() || !alnum(b[i]) {
            return false;
        }
    }
    true
}

/// The first path components of the repositories the mirror makes itself:
/// a Hub repository's image and ModelPack profile (`models/<org>/<repo>`,
/// `models/datasets/…`, `modelpack/…`), and a packaged chart's artifact
/// (`charts/<name>`). Nothing carried may take such a name: a pod pinned to
/// `models/<org>/<repo>:<commit>` must mount that commit's files, never an
/// image an unsigned bundle put there.
pub const RESERVED_PREFIXES: [&str; 4] = ["models", "datasets", "modelpack", "charts"];

/// The reserved first component `repository` starts with, if any
/// ([`RESERVED_PREFIXES`]); `charts/` is reserved for charts, so a chart's
/// artifact may use it and an image may not.
pub fn reserved_prefix(repository: &str, chart: bool) -> Option<&'static str> {
    let first = repository.split('/').next().unwrap_or_default();
    RESERVED_PREFIXES
        .into_iter()
        .find(|p| *p == first && !(chart && *p == "charts"))
}

/// Whether `tag` is a tag of the distribution spec:
/// `[a-zA-Z0-9_][a-zA-Z0-9._-]{0,127}`.
pub fn is_tag(tag: &str) -> bool {
    let b = tag.as_bytes();
    let first = |x: u8| x.is_ascii_alphanumeric() || x == b'_';
    !b.is_empty()
        && b.len() <= 128
        && first(b[0])
        && b[1..].iter().all(|&x| first(x) || x == b'.' || x == b'-')
}

/// A registry host as the mirror keys it: lower case, Docker Hub's other
/// names as `docker.io` (containerd sends `ns=docker.io`, a manifest may
/// say `index.docker.io`). `None` when it is not a host[:port].
pub fn registry_key(host: &str) -> Option<String> {
    let h = host.to_ascii_lowercase();
    let ok = !h.is_empty()
        && h.len() <= 255 // the longest host:port taken from a manifest or `ns`
        && h.bytes()
            .all(|x| x.is_ascii_alphanumeric() || matches!(x, b'.' | b'-' | b':' | b'[' | b']'));
    if !ok {
        return None;
    }
    Some(match h.as_str() {
        "index.docker.io" | "registry-1.docker.io" | "registry.hub.docker.com" => {
            "docker.io".to_string()
        }
        _ => h,
    })
}

/// Whether `host` is a registry host as Docker reads one: a DNS name or
/// IPv4 address, or a bracketed IPv6 address, with an optional `:port`.
pub fn is_registry_host(host: &str) -> bool {
    if host.is_empty() || host.len() > 255 {
        return false;
    }
    let (name, port) = if let Some(rest) = host.strip_prefix('[') {
        let Some((v6, after)) = rest.split_once(']') else {
            return false;
        };
        if v6.parse::<std::net::Ipv6Addr>().is_err() {
            return false;
        }
        match after {
            "" => return true,
            p => match p.strip_prefix(':') {
                Some(p) => return is_port(p),
                None => return false,
            },
        }
    } else {
        match host.rsplit_once(':') {
            Some((n, p)) => (n, Some(p)),
            None => (host, None),
        }
    };
    port.is_none_or(is_port) && !name.is_empty() && name.split('.').all(is_dns_label)
}

fn is_port(p: &str) -> bool {
    !p.is_empty() && p.len() <= 5 && p.bytes().all(|b| b.is_ascii_digit()) && {
        let n: u32 = p.parse().unwrap_or(0);
        (1..=65535).contains(&n)
    }
}

fn is_dns_label(l: &str) -> bool {
    let b = l.as_bytes();
    !b.is_empty()
        && b.len() <= 63
        && b[0].is_ascii_alphanumeric()
        && b[b.len() - 1].is_ascii_alphanumeric()
        && b.iter().all(|&x| x.is_ascii_alphanumeric() || x == b'-')
}

/// Whether `mt` is a media type as a plain token (RFC 6838 section 4.2:
/// `type/subtype`, each a restricted name, no parameters).
pub fn is_media_type(mt: &str) -> bool {
    match mt.split_once('/') {
        Some((t, s)) => is_restricted_name(t) && is_restricted_name(s),
        None => false,
    }
}

fn is_restricted_name(n: &str) -> bool {
    let b = n.as_bytes();
    !b.is_empty()
        && b.len() <= 127
        && b[0].is_ascii_alphanumeric()
        && b.iter()
            .all(|&x| x.is_ascii_alphanumeric() || b"!#$&^_.+-".contains(&x))
}

/// Whether `p` is a platform as the manifest records it:
/// `os/arch[/variant]`, each part `[A-Za-z0-9][A-Za-z0-9._-]*`.
pub fn is_platform(p: &str) -> bool {
    let parts: Vec<&str> = p.split('/').collect();
    (2..=3).contains(&parts.len())
        && parts.iter().all(|s| {
            !s.is_empty()
                && s.len() <= 64
                && s.as_bytes()[0].is_ascii_alphanumeric()
                && s.bytes()
                    .all(|x| x.is_ascii_alphanumeric() || b"._-".contains(&x))
        })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_mirrors_own_names_are_reserved() {
        for (name, chart, reserved) in [
            ("models/acme/tiny", false, Some("models")),
            ("models/acme/tiny", true, Some("models")),
            ("modelpack/acme/tiny", false, Some("modelpack")),
            ("datasets/acme/set", false, Some("datasets")),
            ("charts/acme", false, Some("charts")),
            ("charts/acme", true, None),
            ("acme/models/tiny", false, None),
            ("modelsx/a", false, None),
            ("vllm/vllm-openai", false, None),
        ] {
            assert_eq!(
                reserved_prefix(name, chart),
                reserved,
                "{name} chart={chart}"
            );
        }
    }

    #[test]
    fn repositories() {
        for ok in [
            "library/ubuntu",
            "vllm/vllm-openai",
            "a",
            "a/b/c",
            "a__b",
            "a---b",
            "a.b_c",
            "charts/acme",
        ] {
            assert!(is_repository(ok), "{ok}");
        }
        for bad in [
            "",
            "Upper/case",
            "a//b",
            "/a",
            "a/",
            "..",
            "a/../b",
            "a___b",
            "-a",
            "a-",
            "a._b",
            "a b",
            "a\u{202e}b",
            &"a".repeat(256),
        ] {
            assert!(!is_repository(bad), "{bad:?}");
        }
    }

    #[test]
    fn tags() {
        for ok in ["latest", "v0.34.0", "_x", "1.2.3-rc1_build"] {
            assert!(is_tag(ok), "{ok}");
        }
        for bad in ["", ".x", "-x", "a/b", "a:b", "a+b", &"a".repeat(129)] {
            assert!(!is_tag(bad), "{bad:?}");
        }
    }

    #[test]
    fn hosts() {
        for ok in [
            "docker.io",
            "127.0.0.1:5000",
            "localhost",
            "localhost:1",
            "[::1]:5000",
            "[::1]",
            "my-reg.example.org",
        ] {
            assert!(is_registry_host(ok), "{ok}");
        }
        for bad in [
            "", "a:0", "a:65536", "a:", "-a.b", "a..b", "a/b", "[::1", "[zz]", "a b",
        ] {
            assert!(!is_registry_host(bad), "{bad:?}");
        }
    }

    #[test]
    fn media_types_and_platforms() {
        assert!(is_media_type("application/vnd.oci.image.layer.v1.tar+gzip"));
        assert!(!is_media_type("application/json; charset=utf-8"));
        assert!(!is_media_type("application"));
        assert!(!is_media_type("a/b/c"));
        assert!(is_platform("linux/arm64/v8"));
        assert!(is_platform("unknown/unknown"));
        assert!(!is_platform("linux"));
        assert!(!is_platform("linux/../x"));
    }

    #[test]
    fn registries_are_keyed_as_containerd_names_them() {
        assert_eq!(registry_key("Docker.IO").as_deref(), Some("docker.io"));
        assert_eq!(
            registry_key("registry-1.docker.io").as_deref(),
            Some("docker.io")
        );
        assert_eq!(
            registry_key("127.0.0.1:5000").as_deref(),
            Some("127.0.0.1:5000")
        );
        assert_eq!(registry_key("a/b"), None);
        assert_eq!(registry_key(""), None);
    }
}
