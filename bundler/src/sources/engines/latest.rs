//! `--engine ENGINE=latest` (llama.cpp, uv): the moving name made a
//! concrete release before anything is planned, so the bundle records a
//! tag, never `latest`.
//!
//! Which release is "newest" is decided here, by tag, not by the order
//! the API lists releases in: llama.cpp publishes SemVer stable releases
//! (`v0.3.0`) beside its continuous `bNNNN` builds since 2026-08
//! (ggml-org/llama.cpp PR #27477 prepared the first; SemVer is its
//! versioning for stable releases, termux/termux-packages PR #31511), so
//! the highest stable SemVer tag wins over any build number however newer
//! the build, and a build number is taken only from a list with no SemVer
//! release; uv's tags are SemVer (`0.12.20`) only. Drafts, prereleases and
//! tags with a suffix (`v0.4.0-rc1`) are never "latest".
//!
//! Invariant: the release returned has every asset the recipe table names
//! for the request's architectures; one that lacks any is refused, naming
//! the release and what is missing, rather than an older one taken.

use llmgw_shared::check_ref_name;
use llmgw_shared::recipe;
use serde::Deserialize;

use super::{EngineBuilds, resolve};
use crate::error::{CreateError, LatestError, RequestError};
use crate::http::Http;
use crate::sources::github::MAX_RELEASE_JSON;
use crate::spec::EngineSpec;

/// Releases asked for a page of the list.
const PER_PAGE: usize = 100;
/// Pages looked at, at most, for a release of the engine's best tag form:
/// llama.cpp publishes several builds a day between stable releases.
const MAX_PAGES: usize = 5;

/// The version that asks for the newest release.
pub const LATEST: &str = "latest";

/// A release as the list gives it: what choosing needs.
#[derive(Debug, Deserialize)]
struct Listed {
    tag_name: String,
    #[serde(default)]
    draft: bool,
    #[serde(default)]
    prerelease: bool,
    #[serde(default)]
    assets: Vec<ListedAsset>,
}

#[derive(Debug, Deserialize)]
struct ListedAsset {
    name: String,
}

/// How a tag ranks among an engine's releases: its form (higher wins) and
/// its numbers; `None` for a tag of no form the engine's stable releases take.
fn rank(engine: &str, tag: &str) -> Option<(u8, Vec<u64>)> {
    let numbers = |s: &str, parts: usize| -> Option<Vec<u64>> {
        let v: Vec<u64> = s
            .split('.')
            .map(|p| {
                (!p.is_empty() && p.len() <= 9 && p.bytes().all(|b| b.is_ascii_digit()))
                    .then(|| p.parse().ok())
                    .flatten()
            })
            .collect::<Option<_>>()?;
        (v.len() == parts).then_some(v)
    };
    match engine {
        "llamacpp" => match (tag.strip_prefix('v'), tag.strip_prefix('b')) {
            (Some(semver), _) => numbers(semver, 3).map(|v| (1, v)),
            (_, Some(build)) => numbers(build, 1).map(|v| (0, v)),
            _ => None,
        },
        _ => numbers(tag, 3).map(|v| (0, v)),
    }
}

/// The tag forms `engine`'s stable releases take, for messages, and the
/// best form's rank (a page holding one ends the search).
fn forms(engine: &str) -> (&'static str, u8) {
    match engine {
        "llamacpp" => ("v0.3.0 (SemVer) or b8000 (a build)", 1),
        _ => ("0.12.20 (SemVer)", 0),
    }
}

/// The newest stable release among `listed`, by [`rank`].
fn newest<'a>(engine: &str, listed: &'a [Listed]) -> Option<&'a Listed> {
    listed
        .iter()
        .filter(|r| !r.draft && !r.prerelease)
        .filter_map(|r| rank(engine, &r.tag_name).map(|k| (k, r)))
        .max_by(|a, b| a.0.cmp(&b.0))
        .map(|(_, r)| r)
}

/// `engine`'s builds at its newest release (see the module docs), every
/// asset the table names for `arches` checked to be in it.
pub async fn resolve_latest(
    http: &Http,
    api: &str,
    engine: &EngineSpec,
    arches: &[String],
) -> Result<EngineBuilds, CreateError> {
    let repo = recipe::recipe(&engine.name)
        .ok()
        .and_then(|r| r.repo())
        .ok_or_else(|| RequestError::LatestNotRelease {
            engine: engine.name.clone(),
        })?;
    let (form, best) = forms(&engine.name);
    let mut listed: Vec<Listed> = Vec::new();
    for page in 1..=MAX_PAGES {
        let url = format!("{api}/repos/{repo}/releases?per_page={PER_PAGE}&page={page}");
        let (body, _) = http
            .get_small(&url, Some("application/vnd.github+json"), MAX_RELEASE_JSON)
            .await?;
        let got: Vec<Listed> =
            serde_json::from_slice(&body).map_err(|source| crate::http::HttpError::Json {
                url: url.clone(),
                expected: "a GitHub-style list of releases",
                source,
            })?;
        let full = got.len() == PER_PAGE;
        listed.extend(got);
        let found_best = newest(&engine.name, &listed)
            .and_then(|r| rank(&engine.name, &r.tag_name))
            .is_some_and(|(f, _)| f == best);
        if found_best || !full {
            break;
        }
    }
    let chosen = newest(&engine.name, &listed).ok_or_else(|| LatestError::NoRelease {
        engine: engine.name.clone(),
        repo: repo.to_string(),
        forms: form,
        looked: listed.len(),
    })?;
    check_ref_name("release tag", &chosen.tag_name)?;
    let concrete = EngineSpec {
        version: chosen.tag_name.clone(),
        ..engine.clone()
    };
    let eb = resolve(&concrete, arches)?;
    let missing: Vec<String> = eb
        .asset_names()
        .into_iter()
        .filter(|n| !chosen.assets.iter().any(|a| &a.name == n))
        .collect();
    if !missing.is_empty() {
        return Err(LatestError::Incomplete {
            engine: engine.name.clone(),
            repo: repo.to_string(),
            tag: chosen.tag_name.clone(),
            missing,
        }
        .into());
    }
    Ok(eb)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn listed(tags: &[(&str, bool)]) -> Vec<Listed> {
        tags.iter()
            .map(|(t, pre)| Listed {
                tag_name: t.to_string(),
                draft: false,
                prerelease: *pre,
                assets: Vec::new(),
            })
            .collect()
    }

    #[test]
    fn semver_wins_over_any_build_and_prereleases_never_do() {
        let l = listed(&[
            ("v0.4.0-rc1", false),
            ("v0.5.0", true),
            ("b8010", false),
            ("v0.3.0", false),
            ("v0.2.9", false),
            ("b8000", false),
            ("v0.10.0x", false),
        ]);
        assert_eq!(newest("llamacpp", &l).unwrap().tag_name, "v0.3.0");
        let builds = listed(&[("b7999", false), ("b8010", false), ("b800", false)]);
        assert_eq!(newest("llamacpp", &builds).unwrap().tag_name, "b8010");
        // Compared as numbers, not text.
        let l = listed(&[("v0.9.0", false), ("v0.10.0", false)]);
        assert_eq!(newest("llamacpp", &l).unwrap().tag_name, "v0.10.0");
        let uv = listed(&[
            ("0.12.9", false),
            ("0.12.20", false),
            ("0.13.0-rc.1", false),
        ]);
        assert_eq!(newest("uv", &uv).unwrap().tag_name, "0.12.20");
        assert!(newest("llamacpp", &listed(&[("master", false)])).is_none());
        assert_eq!(rank("llamacpp", "b"), None);
        assert_eq!(rank("llamacpp", "v1.2"), None);
    }
}
