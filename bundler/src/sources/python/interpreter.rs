//! The interpreter nodes create their environments with: the
//! python-build-standalone build a given uv version downloads for
//! `uv venv --python 3.12`, read from that uv's own
//! `crates/uv-python/download-metadata.json` at its tag.
//!
//! uv checks the archive against the sha256 built into its binary, so only
//! the exact file that uv version lists will do. It is carried as an
//! ordinary release asset of `astral-sh/python-build-standalone`, checked
//! against both that sha256 and GitHub's digest, which must agree.

use serde::Deserialize;

use crate::error::PythonError;
use crate::http::Http;

/// The repository the interpreters are released from.
pub const PBS_REPO: &str = "astral-sh/python-build-standalone";
/// Where uv keeps the list of interpreters it downloads.
pub const UV_REPO: &str = "astral-sh/uv";
const METADATA_PATH: &str = "crates/uv-python/download-metadata.json";
/// uv's list is about 2 MiB.
const MAX_METADATA: usize = 64 << 20;

/// One interpreter build, as uv lists it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Interpreter {
    /// `cpython-3.12.14-linux-x86_64-gnu`.
    pub key: String,
    /// `3.12.14`.
    pub version: String,
    /// The python-build-standalone release tag: `20260924`.
    pub tag: String,
    /// The asset name, decoded: `cpython-3.12.14+20260924-x86_64-…tar.gz`.
    pub asset: String,
    /// uv's sha256 of it.
    pub sha256: llmgw_shared::Sha256,
}

#[derive(Deserialize)]
struct Entry {
    name: String,
    arch: Arch,
    os: String,
    libc: String,
    major: u64,
    minor: u64,
    patch: u64,
    #[serde(default)]
    prerelease: String,
    url: String,
    #[serde(default)]
    sha256: Option<String>,
    #[serde(default)]
    variant: Option<String>,
}

#[derive(Deserialize)]
struct Arch {
    family: String,
    #[serde(default)]
    variant: Option<String>,
}

/// The machine name python-build-standalone uses for a Go architecture.
pub fn triple_arch(arch: &str) -> &'static str {
    if arch == "arm64" { "aarch64" } else { "x86_64" }
}

/// Fetches uv's list at `uv_version`'s tag from GitHub's raw file server
/// (`--github-raw`, `https://raw.githubusercontent.com`).
pub async fn fetch_metadata(
    http: &Http,
    github_raw: &str,
    uv_version: &str,
) -> Result<Vec<u8>, PythonError> {
    let url = format!("{github_raw}/{UV_REPO}/{uv_version}/{METADATA_PATH}");
    http.get_small(&url, None, MAX_METADATA)
        .await
        .map(|(b, _)| b)
        .map_err(|error| PythonError::InterpreterList {
            uv_version: uv_version.to_string(),
            path: METADATA_PATH,
            error,
        })
}

/// The newest CPython `python` (`3.12`) build for Linux glibc on `arch`
/// that the list names, as the stripped install-only archive.
pub fn pick(metadata: &[u8], python: &str, arch: &str) -> Result<Interpreter, PythonError> {
    let err = |detail: String| PythonError::Interpreter {
        arch: arch.to_string(),
        detail,
    };
    let entries: std::collections::BTreeMap<String, Entry> = serde_json::from_slice(metadata)
        .map_err(|error| PythonError::InterpreterListUnreadable {
            arch: arch.to_string(),
            path: METADATA_PATH,
            error,
        })?;
    let (major, minor) = python
        .split_once('.')
        .and_then(|(a, b)| Some((a.parse::<u64>().ok()?, b.parse::<u64>().ok()?)))
        .ok_or_else(|| err(format!("{python:?} is not a Python version like 3.12")))?;
    let family = triple_arch(arch);
    let suffix = format!("-{family}-unknown-linux-gnu-install_only_stripped.tar.gz");
    let best = entries
        .iter()
        .filter(|(_, e)| {
            e.name == "cpython"
                && e.os == "linux"
                && e.libc == "gnu"
                && e.arch.family == family
                && e.arch.variant.is_none()
                && e.variant.is_none()
                && e.prerelease.is_empty()
                && (e.major, e.minor) == (major, minor)
        })
        .max_by_key(|(_, e)| e.patch)
        .ok_or_else(|| {
            err(format!(
                "uv's {METADATA_PATH} lists no CPython {python} for {family} Linux (glibc)"
            ))
        })?;
    let (key, e) = best;
    let (tag, asset) = release_part(&e.url)
        .filter(|(_, a)| a.ends_with(&suffix))
        .ok_or_else(|| {
            err(format!(
                "{key}: {:?} is not a python-build-standalone release download ending in {suffix}",
                e.url
            ))
        })?;
    let sha256 = e
        .sha256
        .as_deref()
        .and_then(|h| llmgw_shared::Sha256::parse_exact("sha256", &h.to_ascii_lowercase()).ok())
        .ok_or_else(|| err(format!("{key}: uv's list gives no sha256 for it")))?;
    Ok(Interpreter {
        key: key.clone(),
        version: format!("{}.{}.{}", e.major, e.minor, e.patch),
        tag,
        asset,
        sha256,
    })
}

/// `…/releases/download/{tag}/{asset}` of a URL, the asset decoded.
fn release_part(url: &str) -> Option<(String, String)> {
    let rest = url.split("/releases/download/").nth(1)?;
    let (tag, asset) = rest.split_once('/')?;
    let asset = percent_encoding::percent_decode_str(asset)
        .decode_utf8()
        .ok()?
        .into_owned();
    (!tag.is_empty() && !asset.contains('/')).then(|| (tag.to_string(), asset))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn entry(patch: u64, family: &str, extra: &str) -> String {
        let triple = format!("{family}-unknown-linux-gnu");
        format!(
            r#"{{"name":"cpython","arch":{{"family":"{family}","variant":null}},"os":"linux",
            "libc":"gnu","major":3,"minor":12,"patch":{patch},"prerelease":"",
            "url":"https://github.com/astral-sh/python-build-standalone/releases/download/20260924/cpython-3.12.{patch}%2B20260924-{triple}-install_only_stripped.tar.gz",
            "sha256":"{}","variant":null{extra}}}"#,
            "AB".repeat(32)
        )
    }

    #[test]
    fn picks_the_newest_plain_cpython_for_the_arch() {
        let json = format!(
            r#"{{"cpython-3.12.14-linux-x86_64-gnu": {},
                "cpython-3.12.13-linux-x86_64-gnu": {},
                "cpython-3.12.14-linux-aarch64-gnu": {},
                "cpython-3.12.15+freethreaded-linux-x86_64-gnu": {}}}"#,
            entry(14, "x86_64", ""),
            entry(13, "x86_64", ""),
            entry(14, "aarch64", ""),
            entry(15, "x86_64", "").replace(r#""variant":null}"#, r#""variant":"freethreaded"}"#),
        );
        let i = pick(json.as_bytes(), "3.12", "amd64").unwrap();
        assert_eq!(i.key, "cpython-3.12.14-linux-x86_64-gnu");
        assert_eq!(i.version, "3.12.14");
        assert_eq!(i.tag, "20260924");
        assert_eq!(
            i.asset,
            "cpython-3.12.14+20260924-x86_64-unknown-linux-gnu-install_only_stripped.tar.gz"
        );
        assert_eq!(i.sha256, "ab".repeat(32));
        let a = pick(json.as_bytes(), "3.12", "arm64").unwrap();
        assert!(a.asset.contains("aarch64"), "{a:?}");
        let e = pick(json.as_bytes(), "3.13", "amd64").unwrap_err();
        assert_eq!(
            e.to_string(),
            "python-build-standalone for amd64: uv's crates/uv-python/download-metadata.json \
             lists no CPython 3.13 for x86_64 Linux (glibc)"
        );
    }
}
