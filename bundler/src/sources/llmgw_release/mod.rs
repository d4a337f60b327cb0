//! llmgw's own release: its `SHA256SUMS` is signed with minisign, and the
//! signature is verified with a `--trust` key before anything else of the
//! release is fetched. Then every asset `SHA256SUMS` lists for the
//! requested architectures is carried, each checked against its line.
//!
//! Which assets belong to an architecture is read from the asset's name,
//! split into tokens at `-`, `_` and `.`:
//! - `amd64`, `x86_64`, `x86-64`, `x64` mean amd64; `arm64`, `aarch64` mean arm64;
//! - a name with another architecture's token (`armv7`, `386`, `s390x`, …)
//!   or another operating system's (`darwin`, `macos`, `windows`, `freebsd`,
//!   …, or a `.exe`/`.msi`/`.dmg`/`.pkg` ending) is not carried: the nodes
//!   are Linux machines of the requested architectures;
//! - a name with no architecture token at all (an install script, a Helm
//!   chart, a source archive) is carried for every architecture, since a
//!   node of any of them may need it.
//!
//! `SHA256SUMS` and `SHA256SUMS.minisig` are carried too, so that import
//! can verify the signature again on the far side.

use llmgw_shared::manifest::{
    Asset, DigestSource, LLMGW_ENGINE, PublisherDigest, Release, ReleaseSignature,
};
use llmgw_shared::signing::{self, PublicKey, Signature};
use llmgw_shared::{Sha256, parse_sha256sums};

use crate::cache::Cache;
use crate::error::CreateError;
use crate::http::Http;
use crate::plan::Plan;
use crate::sources::github::{self, AssetJson, MAX_SMALL_FILE, ReleaseJson};
use crate::spec::LlmgwSpec;

pub const SUMS: &str = "SHA256SUMS";
pub const MINISIG: &str = "SHA256SUMS.minisig";
/// What `bundle create` says to do about a key it does not trust.
const TRUST_FIX: &str = "if you trust that key, give its public key file with --trust KEY.pub \
                         (repeatable)";

/// What an asset name says about the machine it is for.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Target {
    /// A Linux (or unspecified OS) asset of this architecture.
    Arch(&'static str),
    /// No architecture in the name: for every architecture.
    Any,
    /// Another architecture or operating system: not for these nodes.
    Other,
}

const OTHER_ARCH: &[&str] = &[
    "386", "i386", "i686", "x86", "arm", "armv5", "armv6", "armv7", "armhf", "armel", "ppc64",
    "ppc64le", "s390x", "riscv64", "mips", "mipsle", "mips64", "mips64le", "loong64", "wasm",
];
const OTHER_OS: &[&str] = &[
    "darwin", "macos", "osx", "apple", "windows", "win", "win32", "win64", "freebsd", "netbsd",
    "openbsd", "android", "ios",
];
const OTHER_OS_SUFFIX: &[&str] = &[".exe", ".msi", ".dmg", ".pkg"];

/// Reads an asset name as described in the module docs.
pub fn target_of(name: &str) -> Target {
    let lower = name
        .to_ascii_lowercase()
        .replace("x86_64", "amd64")
        .replace("x86-64", "amd64");
    if OTHER_OS_SUFFIX.iter().any(|s| lower.ends_with(s)) {
        return Target::Other;
    }
    let mut arch = None;
    for tok in lower.split(['-', '_', '.']) {
        if OTHER_OS.contains(&tok) || OTHER_ARCH.contains(&tok) {
            return Target::Other;
        }
        let a = match tok {
            "amd64" | "x64" => Some("amd64"),
            "arm64" | "aarch64" => Some("arm64"),
            _ => None,
        };
        if let Some(a) = a {
            if arch.is_some_and(|b| b != a) {
                return Target::Other;
            }
            arch = Some(a);
        }
    }
    arch.map_or(Target::Any, Target::Arch)
}

/// Finds the release (`VERSION` as the tag, else `vVERSION`), verifies its
/// signed checksums and plans the assets for `arches`: keys read, release
/// found, checksums verified, then the signed files and the assets they
/// list for these nodes planned.
pub async fn plan(
    http: &Http,
    cache: &Cache,
    spec: &LlmgwSpec,
    arches: &[String],
    allow_missing: bool,
    plan: &mut Plan,
) -> Result<(), CreateError> {
    let keys = read_keys(spec)?;
    let release = find(http, spec).await?;
    let tag = release.tag_name.clone();
    let who = format!("{} {tag}", spec.repo);
    let signed = verify(http, spec, &release, &who, &keys).await?;
    let lines = parse_sha256sums(
        &format!("{who} {SUMS}"),
        &String::from_utf8_lossy(&signed.sums),
    )?;
    let mut assets = carry_signed(cache, spec, &release, &who, &signed, plan)?;
    for line in lines {
        if line.name == SUMS || line.name == MINISIG {
            continue;
        }
        match target_of(&line.name) {
            Target::Other => continue,
            Target::Arch(a) if !arches.iter().any(|x| x == a) => continue,
            _ => {}
        }
        let Some(a) = release.asset(&line.name) else {
            if allow_missing {
                plan.gap(
                    format!("{who} {}", line.name),
                    format!(
                        "{SUMS} lists it but the release has no such asset; it has: {}",
                        release.names_for_message()
                    ),
                );
                continue;
            }
            return Err(CreateError::MissingAsset {
                repo: spec.repo.clone(),
                tag: tag.clone(),
                asset: line.name.clone(),
                have: release.names_for_message(),
            });
        };
        assets.push(listed_asset(spec, &tag, &who, a, line.sha256, plan)?);
    }
    plan.releases.push(Release {
        repo: llmgw_shared::RepoId::parse("release repository", &spec.repo)?,
        tag,
        engine: LLMGW_ENGINE.to_string(),
        version: spec.version.clone(),
        builds: Vec::new(),
        assets,
        signature: Some(ReleaseSignature {
            sums: SUMS.to_string(),
            minisig: MINISIG.to_string(),
            key_id: signed.key_id,
        }),
    });
    Ok(())
}

/// The `--trust` keys, read first: a missing or broken key file is the
/// operator's to fix before anything is fetched.
fn read_keys(spec: &LlmgwSpec) -> Result<Vec<PublicKey>, CreateError> {
    let mut keys = Vec::new();
    for path in &spec.trust {
        let text = std::fs::read_to_string(path).map_err(|e| CreateError::io(path, e))?;
        let k = PublicKey::parse(&path.display().to_string(), &text).map_err(|source| {
            CreateError::Signature {
                what: format!("--trust {}", path.display()),
                error: Box::new(source),
            }
        })?;
        keys.push(k);
    }
    Ok(keys)
}

/// The release tagged `VERSION`, else `vVERSION`.
async fn find(http: &Http, spec: &LlmgwSpec) -> Result<ReleaseJson, CreateError> {
    let mut release = github::fetch_release(http, &spec.api, &spec.repo, &spec.version).await?;
    if release.is_none() && !spec.version.starts_with('v') {
        let v = format!("v{}", spec.version);
        release = github::fetch_release(http, &spec.api, &spec.repo, &v).await?;
    }
    release.ok_or_else(|| CreateError::MissingRelease {
        what: format!("--llmgw {}", spec.version),
        detail: format!(
            "{} has no release {} of {} (tried the tag with and without a leading v)",
            spec.api, spec.version, spec.repo
        ),
    })
}

/// `SHA256SUMS` and its signature, verified with a trusted key.
struct Signed {
    sums: Vec<u8>,
    sig: Vec<u8>,
    /// The key that signed it.
    key_id: String,
}

/// Fetches `SHA256SUMS` and its signature, before anything else of the
/// release, and verifies them with `keys`, for the release's own tag.
async fn verify(
    http: &Http,
    spec: &LlmgwSpec,
    release: &ReleaseJson,
    who: &str,
    keys: &[PublicKey],
) -> Result<Signed, CreateError> {
    let need = |name: &str| {
        release.asset(name).ok_or_else(|| CreateError::Signature {
            what: who.to_string(),
            error: Box::new(signing::SigningError::BadSignature {
                what: name.to_string(),
                reason: signing::SignatureFault::Absent {
                    name: name.to_string(),
                    release_has: release.names_for_message(),
                },
            }),
        })
    };
    let sums_asset = need(SUMS)?.clone();
    let sig_asset = need(MINISIG)?.clone();
    let (sig_bytes, _) = http
        .get_small(&sig_asset.browser_download_url, None, MAX_SMALL_FILE)
        .await?;
    let (sums_bytes, _) = http
        .get_small(&sums_asset.browser_download_url, None, MAX_SMALL_FILE)
        .await?;
    let sig_text = String::from_utf8_lossy(&sig_bytes);
    let sig_what = format!("{who} {MINISIG}");
    let sig = Signature::parse(&sig_what, &sig_text).map_err(|source| CreateError::Signature {
        what: who.to_string(),
        error: Box::new(source),
    })?;
    let key_id = signing::verify_with_trusted(&format!("{who} {SUMS}"), &sums_bytes, &sig, keys)
        .map_err(|source| CreateError::Signature {
            what: format!("--llmgw {}", spec.version),
            error: Box::new(source.with_fix(TRUST_FIX)),
        })?;
    // Import refuses a signature made for another tag; so does create.
    signing::check_release_comment(&format!("{who} {SUMS}"), &sig, &release.tag_name).map_err(
        |source| CreateError::Signature {
            what: format!("--llmgw {}", spec.version),
            error: Box::new(source),
        },
    )?;
    Ok(Signed {
        sums: sums_bytes,
        sig: sig_bytes,
        key_id,
    })
}

/// `SHA256SUMS` and its signature as assets, stored from the bytes
/// verified (so that import can verify them again on the far side).
fn carry_signed(
    cache: &Cache,
    spec: &LlmgwSpec,
    release: &ReleaseJson,
    who: &str,
    signed: &Signed,
    plan: &mut Plan,
) -> Result<Vec<Asset>, CreateError> {
    let mut assets = Vec::new();
    for (name, bytes) in [(SUMS, &signed.sums), (MINISIG, &signed.sig)] {
        let (sha, path) = cache
            .put_bytes(bytes)
            .map_err(|e| CreateError::io(cache.root(), e))?;
        let a = release.asset(name).cloned();
        let mut digests = vec![PublisherDigest {
            source: DigestSource::MinisignVerified,
            value: sha.to_string(),
        }];
        if let Some(a) = &a
            && let Some(gh) = github::github_digest(&spec.repo, &release.tag_name, a)?
        {
            check_same(
                who,
                name,
                "GitHub's asset digest",
                &gh,
                "the bytes verified",
                &sha,
            )?;
            digests.push(PublisherDigest {
                source: DigestSource::GithubAssetDigest,
                value: gh.into(),
            });
        }
        plan.store(sha.clone(), path, bytes.len() as u64);
        assets.push(Asset {
            name: name.to_string(),
            size: bytes.len() as u64,
            sha256: sha,
            publisher_digests: digests,
            content_type: a.and_then(|a| a.content_type),
        });
    }
    Ok(assets)
}

/// An asset `SHA256SUMS` lists with `sha256`, planned for download against it
/// (and GitHub's digest of it, when GitHub gives one).
fn listed_asset(
    spec: &LlmgwSpec,
    tag: &str,
    who: &str,
    a: &AssetJson,
    sha256: Sha256,
    plan: &mut Plan,
) -> Result<Asset, CreateError> {
    let mut digests = vec![PublisherDigest {
        source: DigestSource::Sha256Sums,
        value: sha256.to_string(),
    }];
    if let Some(gh) = github::github_digest(&spec.repo, tag, a)? {
        check_same(who, &a.name, SUMS, &sha256, "GitHub's asset digest", &gh)?;
        digests.push(PublisherDigest {
            source: DigestSource::GithubAssetDigest,
            value: gh.into(),
        });
    }
    plan.download(a.download(format!("{who} {}", a.name), &sha256));
    Ok(Asset {
        name: a.name.clone(),
        size: a.size,
        sha256,
        publisher_digests: digests,
        content_type: a.content_type.clone(),
    })
}

fn check_same(
    who: &str,
    name: &str,
    first_source: &str,
    first: &str,
    second_source: &str,
    second: &str,
) -> Result<(), CreateError> {
    if first == second {
        return Ok(());
    }
    Err(CreateError::DigestConflict {
        what: format!("{who} {name}"),
        first_source: first_source.to_string(),
        first: first.to_string(),
        second_source: second_source.to_string(),
        second: second.to_string(),
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn asset_names_to_arches() {
        for (name, want) in [
            ("llmgw-linux-amd64.tar.gz", Target::Arch("amd64")),
            ("llmgw_0.5.0_linux_x86_64.tar.gz", Target::Arch("amd64")),
            ("llmgw-x64.tar.gz", Target::Arch("amd64")),
            ("llmgw-linux-arm64.tar.gz", Target::Arch("arm64")),
            (
                "llmgw-aarch64-unknown-linux-gnu.tar.gz",
                Target::Arch("arm64"),
            ),
            ("install.sh", Target::Any),
            ("llmgw-0.5.0.tar.gz", Target::Any),
            ("llmgw-darwin-arm64.tar.gz", Target::Other),
            ("llmgw-windows-amd64.zip", Target::Other),
            ("llmgw-amd64.exe", Target::Other),
            ("llmgw-linux-armv7.tar.gz", Target::Other),
            ("llmgw-linux-s390x.tar.gz", Target::Other),
            ("llmgw-amd64-arm64.tar.gz", Target::Other),
        ] {
            assert_eq!(target_of(name), want, "{name}");
        }
    }
}
