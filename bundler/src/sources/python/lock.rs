//! Reading the PEP 751 lock (`pylock.toml`) uv wrote: which files, of which
//! project and version, the resolver chose for the node's platform.
//!
//! What the lock says is a claim to check, not a fact: every file it names
//! is later looked up at its publisher and compared. Here it is only read,
//! bounded, and refused when it names something a bundle cannot carry (a
//! source tree, a VCS checkout, an sdist that would be built on the node).

use serde::Deserialize;

use crate::error::LockError;
use crate::limits::MAX_LOCK_BYTES;

/// One file the lock names.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct LockedFile {
    /// The URL the resolver found it at (or a `file://` path).
    pub url: String,
    /// The last path segment of `url`, percent-decoded.
    pub filename: String,
    pub size: Option<u64>,
    /// Lower-case hex, when the lock has one.
    pub sha256: Option<String>,
    pub upload_time: Option<String>,
}

/// One project at one version, and the wheels of it the lock lists.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct LockedPackage {
    /// As the lock writes it (normalised by uv).
    pub name: String,
    pub version: String,
    pub files: Vec<LockedFile>,
}

#[derive(Deserialize)]
#[serde(rename_all = "kebab-case")]
struct RawLock {
    lock_version: String,
    #[serde(default)]
    packages: Vec<RawPackage>,
}

#[derive(Deserialize)]
#[serde(rename_all = "kebab-case")]
struct RawPackage {
    name: String,
    /// Optional in PEP 751 for packages from a URL or path.
    #[serde(default)]
    version: Option<String>,
    #[serde(default)]
    wheels: Vec<RawFile>,
    #[serde(default)]
    sdist: Option<toml::Value>,
    #[serde(default)]
    archive: Option<RawFile>,
    #[serde(default)]
    vcs: Option<toml::Value>,
    #[serde(default)]
    directory: Option<toml::Value>,
}

#[derive(Deserialize)]
#[serde(rename_all = "kebab-case")]
struct RawFile {
    #[serde(default)]
    url: Option<String>,
    #[serde(default)]
    path: Option<String>,
    #[serde(default)]
    name: Option<String>,
    #[serde(default)]
    size: Option<u64>,
    #[serde(default)]
    upload_time: Option<toml::value::Datetime>,
    #[serde(default)]
    hashes: std::collections::BTreeMap<String, String>,
}

/// Reads a lock's text into its packages, in the lock's order.
pub fn parse(text: &str) -> Result<Vec<LockedPackage>, LockError> {
    if text.len() > MAX_LOCK_BYTES {
        return Err(LockError::TooLarge(text.len()));
    }
    let raw: RawLock = toml::from_str(text).map_err(LockError::Parse)?;
    if raw.lock_version.split('.').next() != Some("1") {
        return Err(LockError::Version(raw.lock_version));
    }
    let mut out = Vec::new();
    for p in raw.packages {
        let version = p.version.clone().unwrap_or_default();
        let refuse = |what| LockError::NotAWheel {
            name: p.name.clone(),
            version: version.clone(),
            what,
        };
        if p.vcs.is_some() {
            return Err(refuse("a VCS checkout"));
        }
        if p.directory.is_some() {
            return Err(refuse("a source directory"));
        }
        let mut raw_files = p.wheels;
        if let Some(a) = p.archive {
            raw_files.push(a);
        }
        if raw_files.is_empty() {
            return Err(refuse(if p.sdist.is_some() {
                "a source distribution only"
            } else {
                "listed without any file"
            }));
        }
        let mut files = Vec::new();
        for f in raw_files {
            let url = f.url.or(f.path).unwrap_or_default();
            let filename = match f.name.filter(|n| !n.is_empty()) {
                Some(n) => n,
                None => file_name_of(&url).ok_or_else(|| LockError::NoFileName {
                    name: p.name.clone(),
                    url: url.clone(),
                })?,
            };
            if !filename.ends_with(".whl") {
                return Err(refuse("an archive that is not a wheel"));
            }
            files.push(LockedFile {
                url,
                filename,
                size: f.size,
                sha256: f.hashes.get("sha256").map(|h| h.to_ascii_lowercase()),
                upload_time: f.upload_time.map(|t| t.to_string()),
            });
        }
        out.push(LockedPackage {
            name: p.name,
            version,
            files,
        });
    }
    Ok(out)
}

/// The last path segment of a URL or path, percent-decoded (`%2B` is `+`
/// in a local version), without query or fragment.
pub fn file_name_of(url: &str) -> Option<String> {
    let path = url.split(['?', '#']).next().unwrap_or("");
    let last = path.rsplit('/').next().filter(|s| !s.is_empty())?;
    let decoded = percent_encoding::percent_decode_str(last)
        .decode_utf8()
        .ok()?
        .into_owned();
    (!decoded.is_empty() && !decoded.contains('/')).then_some(decoded)
}

#[cfg(test)]
mod tests {
    use super::*;

    const UV_LOCK: &str = r#"
# This file was autogenerated by uv via the following command:
lock-version = "1.0"
created-by = "uv"
requires-python = ">=3.12"

[[packages]]
name = "charset-normalizer"
version = "3.5.3"
wheels = [
    { url = "https://files.example/packages/12/charset_normalizer-3.5.3-cp312-cp312-manylinux_2_28_aarch64.whl", upload-time = 2026-11-23T02:43:58Z, size = 239885, hashes = { sha256 = "70F65DD0C2ED79EA2D9776096E9C7D25E398C2C03EB31877753598D201D91784" } },
    { url = "https://files.example/packages/d2/charset_normalizer-3.5.3-py3-none-any.whl", upload-time = 2026-11-23T02:46:50Z, size = 68878, hashes = { sha256 = "96e268b0cbda016ac519513294fcd17032264085b600abaac58b93049477e132" } },
]

[[packages]]
name = "torch"
version = "2.9.0+cu129"
wheels = [{ url = "https://download.example/whl/cu129/torch-2.9.0%2Bcu129-cp312-cp312-manylinux_2_28_x86_64.whl", hashes = { sha256 = "aa" } }]

[[packages]]
name = "vllm"
version = "0.20.1+cu129"
archive = { url = "file:///cache/w/vllm-0.20.1+cu129-cp38-abi3-manylinux_2_31_x86_64.whl", hashes = { sha256 = "bb" } }
"#;

    #[test]
    fn reads_wheels_and_archives_as_uv_writes_them() {
        let ps = parse(UV_LOCK).unwrap();
        assert_eq!(ps.len(), 3);
        assert_eq!(ps[0].name, "charset-normalizer");
        assert_eq!(ps[0].files.len(), 2);
        let f = &ps[0].files[0];
        assert_eq!(
            f.filename,
            "charset_normalizer-3.5.3-cp312-cp312-manylinux_2_28_aarch64.whl"
        );
        assert_eq!(f.size, Some(239885));
        assert_eq!(f.upload_time.as_deref(), Some("2026-11-23T02:43:58Z"));
        assert_eq!(
            f.sha256.as_deref(),
            Some("70f65dd0c2ed79ea2d9776096e9c7d25e398c2c03eb31877753598d201d91784")
        );
        assert_eq!(
            ps[1].files[0].filename,
            "torch-2.9.0+cu129-cp312-cp312-manylinux_2_28_x86_64.whl"
        );
        assert_eq!(ps[1].files[0].size, None);
        assert_eq!(ps[2].version, "0.20.1+cu129");
        assert_eq!(
            ps[2].files[0].filename,
            "vllm-0.20.1+cu129-cp38-abi3-manylinux_2_31_x86_64.whl"
        );
    }

    #[test]
    fn refuses_what_is_not_a_wheel() {
        let sdist = "lock-version = \"1.0\"\n[[packages]]\nname = \"llguidance\"\nversion = \
                     \"1.2\"\nsdist = { url = \"https://x/llguidance-1.2.tar.gz\" }\n";
        assert_eq!(
            parse(sdist).unwrap_err().to_string(),
            "pylock.toml: llguidance 1.2 is a source distribution only, which a bundle cannot \
             carry: a node must install only wheels"
        );
        let vcs = "lock-version = \"1.0\"\n[[packages]]\nname = \"x\"\nvcs = { type = \"git\" }\n";
        assert!(
            parse(vcs)
                .unwrap_err()
                .to_string()
                .contains("a VCS checkout")
        );
        assert!(matches!(
            parse("lock-version = \"2.0\"\n"),
            Err(LockError::Version(v)) if v == "2.0"
        ));
        assert!(matches!(parse("packages = 3"), Err(LockError::Parse(_))));
        let big = "#".repeat(MAX_LOCK_BYTES + 1);
        assert!(matches!(parse(&big), Err(LockError::TooLarge(_))));
    }

    #[test]
    fn file_names_are_decoded_last_segments() {
        assert_eq!(
            file_name_of("https://h/a/b/t-2.0%2Bcu129-x.whl#sha256=ab").as_deref(),
            Some("t-2.0+cu129-x.whl")
        );
        assert_eq!(file_name_of("https://h/a/"), None);
        assert_eq!(file_name_of("https://h/a/x%2Fy.whl"), None);
    }
}
