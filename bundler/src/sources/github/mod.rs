//! GitHub-style release APIs (GitHub itself, and Gitea, whose API has the
//! same shape): a release by tag, its assets, and what their publisher
//! says each should hash to.
//!
//! An asset's publisher digest is GitHub's `digest` field (`sha256:<hex>`,
//! null for assets uploaded before June 2025) or a `<asset>.sha256` file
//! beside it (cargo-dist, e.g. uv). When both exist they must agree. An
//! asset with neither is refused: nothing unverified goes into a bundle.

use llmgw_shared::manifest::{DigestSource, PublisherDigest};
use llmgw_shared::parse_sidecar;
use llmgw_shared::url::SEGMENT;
use llmgw_shared::{Sha256, check_file_name, check_ref_name, check_repo_id};
use percent_encoding::utf8_percent_encode;
use serde::Deserialize;

use crate::cache::Expect;
use crate::error::CreateError;
use crate::fetch::Download;
use crate::http::{Http, HttpError};

/// A release JSON larger than this is refused (GitHub's are tens of KiB).
pub const MAX_RELEASE_JSON: usize = 32 << 20;
/// A `.sha256` sidecar, a `SHA256SUMS` or a signature larger than this is refused.
pub const MAX_SMALL_FILE: usize = 1 << 20;

/// The parts of GitHub's release object this needs.
#[derive(Debug, Clone, Deserialize)]
pub struct ReleaseJson {
    pub tag_name: String,
    #[serde(default)]
    pub assets: Vec<AssetJson>,
}

/// The parts of GitHub's asset object this needs.
#[derive(Debug, Clone, Deserialize)]
pub struct AssetJson {
    pub name: String,
    pub size: u64,
    /// `sha256:<hex>`, or null/absent (old uploads, Gitea).
    #[serde(default)]
    pub digest: Option<String>,
    pub browser_download_url: String,
    #[serde(default)]
    pub content_type: Option<String>,
}

impl AssetJson {
    /// The asset as the run's fetcher gets it: from its download URL,
    /// checked against `sha256`, the digest its publisher stated for it
    /// (`label` names it in messages).
    pub fn download(&self, label: String, sha256: &Sha256) -> Download {
        Download {
            label,
            url: self.browser_download_url.clone(),
            size: self.size,
            expect: Expect::Sha256(sha256.clone()),
            denied_hint: None,
        }
    }
}

impl ReleaseJson {
    pub fn asset(&self, name: &str) -> Option<&AssetJson> {
        self.assets.iter().find(|a| a.name == name)
    }

    /// The asset names, for "the release has: …" in messages.
    pub fn names_for_message(&self) -> String {
        const SHOWN: usize = 40;
        let mut names: Vec<&str> = self.assets.iter().map(|a| a.name.as_str()).collect();
        names.sort();
        if names.is_empty() {
            return "no assets at all".to_string();
        }
        let more = names.len().saturating_sub(SHOWN);
        let mut s = names.into_iter().take(SHOWN).collect::<Vec<_>>().join(", ");
        if more > 0 {
            s.push_str(&format!(" and {more} more"));
        }
        s
    }
}

/// Fetches `/repos/{repo}/releases/tags/{tag}` from `api`; `None` when the
/// server says there is no such release (404).
pub async fn fetch_release(
    http: &Http,
    api: &str,
    repo: &str,
    tag: &str,
) -> Result<Option<ReleaseJson>, CreateError> {
    check_repo_id("release repository", repo)?;
    check_ref_name("release tag", tag)?;
    let url = format!(
        "{api}/repos/{repo}/releases/tags/{}",
        utf8_percent_encode(tag, SEGMENT)
    );
    let body = match http
        .get_small(&url, Some("application/vnd.github+json"), MAX_RELEASE_JSON)
        .await
    {
        Ok((b, _)) => b,
        Err(HttpError::Status { status: 404, .. }) => return Ok(None),
        Err(e) => return Err(e.into()),
    };
    let rel: ReleaseJson = serde_json::from_slice(&body).map_err(|source| HttpError::Json {
        url: url.clone(),
        expected: "a GitHub-style release object",
        source,
    })?;
    for a in &rel.assets {
        check_file_name("release asset name", &a.name)?;
    }
    Ok(Some(rel))
}

/// GitHub's `digest` of an asset as lower-case hex: `None` when absent or
/// null, an error when present but not a sha256.
pub fn github_digest(repo: &str, tag: &str, a: &AssetJson) -> Result<Option<Sha256>, CreateError> {
    let Some(d) = a.digest.as_deref().map(str::trim).filter(|d| !d.is_empty()) else {
        return Ok(None);
    };
    let hex = d
        .strip_prefix("sha256:")
        .and_then(|h| Sha256::parse_exact("digest", &h.to_ascii_lowercase()).ok());
    match hex {
        Some(h) => Ok(Some(h)),
        None => Err(CreateError::BadDigest {
            what: format!("{repo} {tag} {}", a.name),
            detail: format!("GitHub's digest {d:?} is not of the form sha256:<64 hex digits>"),
        }),
    }
}

/// Every digest the publisher gives for `asset`, checked against each
/// other, and the sha256 they agree on: what the bytes must hash to.
pub async fn publisher_digests(
    http: &Http,
    release: &ReleaseJson,
    repo: &str,
    asset: &AssetJson,
) -> Result<(Sha256, Vec<PublisherDigest>), CreateError> {
    let tag = &release.tag_name;
    let mut out = Vec::new();
    let mut agreed = github_digest(repo, tag, asset)?;
    if let Some(h) = &agreed {
        out.push(PublisherDigest {
            source: DigestSource::GithubAssetDigest,
            value: h.to_string(),
        });
    }
    let sidecar_name = format!("{}.sha256", asset.name);
    if let Some(side) = release.asset(&sidecar_name) {
        let (body, _) = http
            .get_small(&side.browser_download_url, None, MAX_SMALL_FILE)
            .await?;
        let text = String::from_utf8_lossy(&body);
        let h = parse_sidecar(&format!("{repo} {tag} {sidecar_name}"), &text)?;
        if let Some(first) = &agreed
            && *first != h
        {
            return Err(CreateError::DigestConflict {
                what: format!("{repo} {tag} {}", asset.name),
                first_source: "GitHub's asset digest".into(),
                first: first.to_string(),
                second_source: sidecar_name,
                second: h.into(),
            });
        }
        out.push(PublisherDigest {
            source: DigestSource::Sha256Sidecar,
            value: h.to_string(),
        });
        agreed.get_or_insert(h);
    }
    let Some(sha256) = agreed else {
        return Err(CreateError::NoPublisherDigest {
            repo: repo.to_string(),
            tag: tag.clone(),
            asset: asset.name.clone(),
        });
    };
    Ok((sha256, out))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn asset(name: &str, digest: Option<&str>) -> AssetJson {
        AssetJson {
            name: name.into(),
            size: 1,
            digest: digest.map(String::from),
            browser_download_url: format!("http://x/{name}"),
            content_type: None,
        }
    }

    #[test]
    fn digest_shapes() {
        let h = "A".repeat(64);
        let got = github_digest("o/r", "t", &asset("a", Some(&format!("sha256:{h}")))).unwrap();
        assert_eq!(got.as_deref(), Some("a".repeat(64).as_str()));
        assert_eq!(github_digest("o/r", "t", &asset("a", None)).unwrap(), None);
        let err = github_digest("o/r", "t", &asset("a", Some("md5:abc"))).unwrap_err();
        assert!(err.to_string().contains("o/r t a"), "{err}");
        assert!(err.to_string().contains("md5:abc"), "{err}");
    }

    #[test]
    fn release_json_as_github_shapes_it() {
        let json = r#"{"tag_name":"b6123","name":"b6123","draft":false,"assets":[
            {"id":1,"name":"llama-b6123-bin-ubuntu-x64.tar.gz","state":"uploaded",
             "content_type":"application/gzip","size":12,"digest":null,
             "browser_download_url":"https://github.com/x"}]}"#;
        let r: ReleaseJson = serde_json::from_str(json).unwrap();
        assert_eq!(r.assets[0].digest, None);
        assert_eq!(r.names_for_message(), "llama-b6123-bin-ubuntu-x64.tar.gz");
    }
}
