//! What a `/v2/…` request gets, decided from the index alone: one function
//! returning an [`Outcome`], turned into a response in `render`.
//!
//! Invariant: the path is matched on its raw (still percent-encoded)
//! segments from the end, so `<name>` is whatever comes between `v2` and
//! the endpoint's own segments, and it must match the spec's name grammar
//! before it is looked up — a `%2F`, `..` or empty component is refused as
//! `NAME_INVALID`, never decoded into something else. Every method but GET
//! and HEAD is refused as `UNSUPPORTED`: this registry is read-only.

use http::Method;
use llmgw_shared::shown;

use super::error::OciError;
use super::names::{self, Digest, is_name, is_tag};
use crate::serve::http::paths::query_get;
use crate::serve::index::Blob;
use crate::serve::index::oci::made::Made;
use crate::serve::index::oci::{
    Lookup, ManifestEntry, OciIndex, OciRepo, Referrer, registry_label,
};

/// What to answer.
#[derive(Debug)]
pub enum Outcome<'a> {
    /// `GET /v2/`: this is a registry.
    Base,
    /// `GET /v2/_catalog`: names, and the query of the next page.
    Catalog {
        names: Vec<&'a str>,
        next: Option<String>,
    },
    /// `GET /v2/<name>/tags/list`.
    Tags {
        name: &'a str,
        tags: Vec<&'a str>,
        next: Option<String>,
    },
    /// A manifest's stored bytes.
    Manifest(&'a ManifestEntry),
    /// A config or layer (or a manifest asked for as a blob).
    Blob(Blob),
    /// A manifest, config or layer made rather than stored (a model's
    /// profiles), with its digest.
    Made {
        /// The repository that names it (what makes a document again).
        repo: &'a OciRepo,
        made: &'a Made,
        digest: &'a llmgw_shared::Sha256,
        /// Asked for as a manifest (the route it is counted under).
        manifest: bool,
    },
    /// `GET /v2/<name>/referrers/<digest>`: an index of these.
    Referrers {
        list: Vec<&'a Referrer>,
        filtered: bool,
    },
    Refused(OciError),
    /// A `/v2/` path no endpoint has.
    NoRoute,
}

/// The request as the decision reads it.
pub struct Ask<'r> {
    pub method: &'r Method,
    /// The raw segments after `v2`.
    pub segs: &'r [&'r str],
    pub query: &'r [(String, String)],
    /// Every `Accept` header line (skopeo sends one type a line).
    pub accept: &'r [&'r str],
}

/// Decides the answer to a `/v2/` request.
pub fn decide<'a>(ix: &'a OciIndex, ask: &Ask<'_>) -> Outcome<'a> {
    if ask.method != Method::GET && ask.method != Method::HEAD {
        return Outcome::Refused(OciError::Unsupported(format!(
            "{} (pushing, deleting, uploading)",
            ask.method
        )));
    }
    match ask.segs {
        [] | [""] => Outcome::Base,
        ["_catalog"] => {
            let (names, next) = page(ix.names().collect(), ask.query);
            Outcome::Catalog { names, next }
        }
        [name @ .., "tags", "list"] => with_repo(ix, name, ask, |repo| {
            let (tags, next) = page(repo.tags.keys().map(String::as_str).collect(), ask.query);
            Outcome::Tags {
                name: &repo.name,
                tags,
                next,
            }
        }),
        [name @ .., "manifests", reference] => {
            with_repo(ix, name, ask, |repo| manifest(repo, reference, ask.accept))
        }
        [name @ .., "blobs", digest] => with_repo(ix, name, ask, |repo| match digest_of(digest) {
            Ok(Some(d)) => match repo.blobs.get_key_value(&d) {
                Some((sha, _)) if repo.made.contains_key(sha) => made(repo, sha),
                Some((sha, size)) => Outcome::Blob(Blob {
                    sha256: sha.clone(),
                    size: *size,
                }),
                None => blob_unknown(repo, digest),
            },
            Ok(None) => blob_unknown(repo, digest),
            Err(e) => Outcome::Refused(e),
        }),
        [name @ .., "referrers", digest] => with_repo(ix, name, ask, |repo| {
            let d = match digest_of(digest) {
                Ok(d) => d,
                Err(e) => return Outcome::Refused(e),
            };
            let held = d.and_then(|d| repo.referrers.get(&d));
            let wanted = query_get(ask.query, "artifactType");
            let list = held
                .into_iter()
                .flatten()
                .filter(|r| wanted.is_none_or(|w| r.artifact_type.as_deref() == Some(w)))
                .collect();
            Outcome::Referrers {
                list,
                filtered: wanted.is_some(),
            }
        }),
        _ => Outcome::NoRoute,
    }
}

/// Checks the name's raw segments and looks it up (with `ns`), then
/// answers with `f`.
fn with_repo<'a>(
    ix: &'a OciIndex,
    raw: &[&str],
    ask: &Ask<'_>,
    f: impl FnOnce(&'a OciRepo) -> Outcome<'a>,
) -> Outcome<'a> {
    let name = raw.join("/");
    if raw.is_empty() || !is_name(&name) {
        return Outcome::Refused(OciError::BadName(shown(&name).to_string()));
    }
    let ns = query_get(ask.query, "ns");
    match ix.lookup(&name, ns) {
        Lookup::Found(repo) => f(repo),
        Lookup::Unknown => Outcome::Refused(OciError::NameUnknown { name }),
        Lookup::Ambiguous(held) => Outcome::Refused(OciError::Ambiguous {
            name,
            held: held.join(", "),
        }),
        Lookup::NotFrom { ns, held } => Outcome::Refused(OciError::NotFrom {
            name,
            ns: shown(&ns).to_string(),
            held: held.join(", "),
        }),
    }
}

/// A `<digest>` of the URL: held-able (sha256), never held (another
/// algorithm), or refused.
fn digest_of(raw: &str) -> Result<Option<llmgw_shared::Sha256>, OciError> {
    match names::parse_digest(raw) {
        Some(Digest::Sha256(d)) => Ok(Some(d)),
        Some(Digest::Other) => Ok(None),
        None => Err(OciError::BadDigest(shown(raw).to_string())),
    }
}

fn blob_unknown<'a>(repo: &OciRepo, digest: &str) -> Outcome<'a> {
    Outcome::Refused(OciError::BlobUnknown {
        name: format!("{} ({})", repo.name, registry_label(&repo.registry)),
        digest: digest.to_string(),
    })
}

/// A manifest by tag or digest, if the client accepts its media type.
fn manifest<'a>(repo: &'a OciRepo, reference: &str, accept: &[&str]) -> Outcome<'a> {
    let unknown = || {
        Outcome::Refused(OciError::ManifestUnknown {
            name: repo.name.clone(),
            reference: reference.to_string(),
        })
    };
    let digest = if is_tag(reference) {
        match repo.tags.get(reference) {
            Some(d) => d.clone(),
            None => return unknown(),
        }
    } else if reference.contains(':') {
        match digest_of(reference) {
            Ok(Some(d)) => d,
            Ok(None) => return unknown(),
            Err(e) => return Outcome::Refused(e),
        }
    } else {
        return Outcome::Refused(OciError::BadReference(shown(reference).to_string()));
    };
    let Some(entry) = repo.manifests.get(&digest) else {
        return unknown();
    };
    if !accepts(accept, &entry.media_type) {
        return Outcome::Refused(OciError::NotAccepted {
            name: repo.name.clone(),
            reference: reference.to_string(),
            media_type: entry.media_type.to_string(),
        });
    }
    match repo.made.get_key_value(&digest) {
        Some((digest, made)) => Outcome::Made {
            repo,
            made,
            digest,
            manifest: true,
        },
        None => Outcome::Manifest(entry),
    }
}

/// A made blob the repository lists.
fn made<'a>(repo: &'a OciRepo, sha: &llmgw_shared::Sha256) -> Outcome<'a> {
    match repo.made.get_key_value(sha) {
        Some((digest, made)) => Outcome::Made {
            repo,
            made,
            digest,
            manifest: false,
        },
        None => blob_unknown(repo, sha.as_str()),
    }
}

/// Whether the `Accept` lines, combined, take `media_type`: no `Accept`
/// takes anything; else the most specific range that matches decides, and
/// `q=0` refuses.
pub fn accepts(lines: &[&str], media_type: &str) -> bool {
    let mut ranges = lines
        .iter()
        .flat_map(|l| l.split(','))
        .filter_map(|item| {
            let mut parts = item.split(';');
            let range = parts.next()?.trim().to_ascii_lowercase();
            let q = parts
                .filter_map(|p| p.split_once('='))
                .find(|(k, _)| k.trim().eq_ignore_ascii_case("q"))
                .map_or(1.0, |(_, v)| v.trim().parse::<f32>().unwrap_or(0.0));
            (!range.is_empty()).then_some((range, q))
        })
        .peekable();
    if ranges.peek().is_none() {
        return true;
    }
    let media_type = media_type.to_ascii_lowercase();
    let family = media_type.split('/').next().unwrap_or("");
    // (specificity, q) of the best-matching range.
    let best = ranges
        .filter_map(|(range, q)| {
            let specificity = if range == media_type {
                2
            } else if range.strip_suffix("/*") == Some(family) {
                1
            } else if range == "*/*" {
                0
            } else {
                return None;
            };
            Some((specificity, q))
        })
        .max_by(|a, b| a.0.cmp(&b.0).then(a.1.total_cmp(&b.1)));
    best.is_some_and(|(_, q)| q > 0.0)
}

/// One page of a sorted list: the items after `last`, at most `n`, and
/// the query of the next page when more remain (none when `n` is 0).
fn page<'a>(items: Vec<&'a str>, query: &[(String, String)]) -> (Vec<&'a str>, Option<String>) {
    let last = query_get(query, "last");
    let n = query_get(query, "n").and_then(|v| v.parse::<usize>().ok());
    let mut rest: Vec<&str> = items
        .into_iter()
        .filter(|i| last.is_none_or(|l| *i > l))
        .collect();
    match n {
        Some(n) if rest.len() > n => {
            rest.truncate(n);
            let next = rest
                .last()
                .map(|l| format!("n={n}&last={}", llmgw_shared::url::encode_path(l)));
            (rest, next)
        }
        _ => (rest, None),
    }
}

#[cfg(test)]
#[path = "decide_tests.rs"]
mod tests;
