//! The grammar of the OCI distribution spec: repository names, tags,
//! digests, and the registry hosts `ns` names (spec.md, "Pulling
//! manifests").
//!
//! Invariant: a text is a name, tag or digest only when it matches the
//! spec's grammar exactly; the grammar admits no `%`, `/` inside a
//! component, `..` or empty component, so a name that passes can only ever
//! be a key into the index — and the checks here read the raw, still
//! percent-encoded path, so nothing is decoded into a trick first.

use llmgw_shared::Sha256;

/// Whether `name` is a repository name: the spec's components joined by
/// `/`, checked by the same grammar the manifest is validated with.
pub fn is_name(name: &str) -> bool {
    llmgw_shared::manifest::is_repository(name)
}

/// Whether `tag` is a tag: `[a-zA-Z0-9_][a-zA-Z0-9._-]{0,127}` (shared's
/// grammar, as for the manifest).
pub fn is_tag(tag: &str) -> bool {
    llmgw_shared::manifest::is_tag(tag)
}

/// What a `<digest>` in a URL is.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Digest {
    /// `sha256:` and 64 lower-case hex digits: what the mirror holds.
    Sha256(Sha256),
    /// Another algorithm, well formed (`sha512:…`): never held here.
    Other,
}

/// Reads `algorithm:encoded` as the spec's digest grammar
/// (`[a-z0-9]+([+._-][a-z0-9]+)*:[a-zA-Z0-9=_-]+`); `None` when it is not
/// one. A `sha256:` digest must be exactly 64 lower-case hex digits.
pub fn parse_digest(text: &str) -> Option<Digest> {
    let (algorithm, encoded) = text.split_once(':')?;
    let alg_ok = !algorithm.is_empty()
        && algorithm.split(['+', '.', '_', '-']).all(|p| {
            !p.is_empty()
                && p.bytes()
                    .all(|x| x.is_ascii_lowercase() || x.is_ascii_digit())
        });
    let enc_ok = !encoded.is_empty()
        && encoded
            .bytes()
            .all(|x| x.is_ascii_alphanumeric() || matches!(x, b'=' | b'_' | b'-'));
    if !alg_ok || !enc_ok {
        return None;
    }
    if algorithm == "sha256" {
        return Sha256::parse_exact("digest", encoded)
            .ok()
            .map(Digest::Sha256);
    }
    Some(Digest::Other)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_follow_the_spec_grammar() {
        for good in [
            "library/ubuntu",
            "vllm/vllm-openai",
            "a",
            "a.b_c__d---e/f0",
            "charts/acme",
        ] {
            assert!(is_name(good), "{good}");
        }
        for bad in [
            "", "..", "a/../b", "a//b", "/a", "a/", "A/b", "a%2Fb", "a___b", "a._b", "-a", "a-",
            "a b", "_catalog",
        ] {
            assert!(!is_name(bad), "{bad}");
        }
        assert!(!is_name(
            &"a".repeat(llmgw_shared::manifest::MAX_REPOSITORY_CHARS + 1)
        ));
    }

    #[test]
    fn tags_and_digests() {
        assert!(is_tag("v0.34.0"));
        assert!(is_tag("_x"));
        assert!(is_tag(&"a".repeat(128)));
        for bad in [
            "",
            ".x",
            "-x",
            "a/b",
            "a:b",
            "..",
            "a%2Fb",
            &"a".repeat(129),
        ] {
            assert!(!is_tag(bad), "{bad}");
        }
        let hex = "a".repeat(64);
        assert_eq!(
            parse_digest(&format!("sha256:{hex}")),
            Some(Digest::Sha256(hex.parse().unwrap()))
        );
        assert_eq!(parse_digest(&format!("sha512:{hex}")), Some(Digest::Other));
        assert_eq!(parse_digest(&format!("sha256:{}", "A".repeat(64))), None);
        assert_eq!(parse_digest("sha256:abc"), None);
        assert_eq!(parse_digest("sha256:../../etc"), None);
        assert_eq!(parse_digest(":x"), None);
        assert_eq!(parse_digest("latest"), None);
    }
}
