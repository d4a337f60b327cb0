//! A miss whose source the operator wrote into the want-list: a chart the
//! mirror serves as `charts/NAME` (no miss can say which registry it came
//! from), or an image a node asked for without containerd's `?ns=`.
//!
//! Invariant: pure. The source only names where to fetch what the miss
//! asked for — its last path segments must be the name the node asked
//! for, so an edited source cannot turn a miss into something else — and
//! what is fetched is still checked against its registry's digests.

use percent_encoding::percent_decode_str;

use super::parse::Want;

/// The longest source read: a registry host and a repository path.
const MAX_SOURCE: usize = 512;

/// What the miss at `path` asks for, fetched from `source`, or why not.
pub fn want_of_sourced(path: &str, source: &str) -> Result<Want, String> {
    let path = path.split_once('?').map_or(path, |(p, _)| p);
    let segs: Vec<String> = path
        .trim_start_matches('/')
        .split('/')
        .map(|s| percent_decode_str(s).decode_utf8_lossy().into_owned())
        .collect();
    let s: Vec<&str> = segs.iter().map(String::as_str).collect();
    let ["v2", name @ .., "manifests", reference] = s.as_slice() else {
        return Err(
            "a source is read only for a chart's or an image's manifest \
             (/v2/NAME/manifests/REF): leave it out of other misses"
                .into(),
        );
    };
    let ok = !source.is_empty()
        && source.len() <= MAX_SOURCE
        && source
            .chars()
            .all(|c| c.is_ascii_alphanumeric() || matches!(c, '.' | '-' | '_' | ':' | '/'));
    if !ok || name.is_empty() {
        return Err(format!(
            "the source {} is not a registry and repository (letters, digits and `.-_:/`, at \
             most {MAX_SOURCE} characters)",
            llmgw_shared::shown(source)
        ));
    }
    let sep = if reference.starts_with("sha256:") {
        '@'
    } else {
        ':'
    };
    if let ["charts", chart @ ..] = name {
        let Some(repo) = source.strip_prefix("oci://") else {
            return Err(format!(
                "the source of chart {} is oci://REGISTRY/REPOSITORY, not {}",
                chart.join("/"),
                llmgw_shared::shown(source)
            ));
        };
        same_name(repo, chart)?;
        return Ok(Want::Chart {
            reference: format!("oci://{repo}{sep}{reference}"),
        });
    }
    if source.contains("://") {
        return Err(format!(
            "the source of image {} is REGISTRY/NAME, with no scheme: not {}",
            name.join("/"),
            llmgw_shared::shown(source)
        ));
    }
    same_name(source, name)?;
    Ok(Want::Image {
        reference: format!("{source}{sep}{reference}"),
    })
}

/// Refuses a source whose repository does not end in the name asked for,
/// after a registry host of its own.
fn same_name(source: &str, name: &[&str]) -> Result<(), String> {
    let asked = name.join("/");
    match source.strip_suffix(&asked) {
        Some(registry) if registry.ends_with('/') && registry.len() > 1 => Ok(()),
        _ => Err(format!(
            "the source {} does not end in the name asked for ({asked}) after a registry: \
             write REGISTRY/…/{asked}",
            llmgw_shared::shown(source)
        )),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_chart_takes_its_registry_from_the_source() {
        assert_eq!(
            want_of_sourced(
                "/v2/charts/app/manifests/1.2.0",
                "oci://registry.example:5000/helm/app"
            ),
            Ok(Want::Chart {
                reference: "oci://registry.example:5000/helm/app:1.2.0".into()
            })
        );
        assert_eq!(
            want_of_sourced(
                "/v2/library/alpine/manifests/3.20",
                "docker.io/library/alpine"
            ),
            Ok(Want::Image {
                reference: "docker.io/library/alpine:3.20".into()
            })
        );
        assert_eq!(
            want_of_sourced("/v2/acme/app/manifests/sha256:ab", "ghcr.io/acme/app"),
            Ok(Want::Image {
                reference: "ghcr.io/acme/app@sha256:ab".into()
            })
        );
    }

    #[test]
    fn a_source_that_names_something_else_is_refused() {
        for (path, source, says) in [
            (
                "/v2/charts/app/manifests/1",
                "oci://r.example/other",
                "does not end in",
            ),
            (
                "/v2/charts/app/manifests/1",
                "r.example/app",
                "oci://REGISTRY",
            ),
            ("/v2/charts/app/manifests/1", "oci://app", "does not end in"),
            (
                "/v2/acme/app/manifests/1",
                "oci://r.example/acme/app",
                "no scheme",
            ),
            (
                "/v2/acme/app/manifests/1",
                "r.example/acme/app?x",
                "not a registry",
            ),
            (
                "/v2/acme/app/manifests/1",
                "r.example/evil-acme/app",
                "does not end in",
            ),
            (
                "/acme/tiny/resolve/main/x",
                "r.example/acme/tiny",
                "only for",
            ),
        ] {
            let e = want_of_sourced(path, source).unwrap_err();
            assert!(e.contains(says), "{path} {source}: {e}");
        }
    }
}
