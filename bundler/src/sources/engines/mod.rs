//! Engine builds (llama.cpp, uv): which assets the recipe table names for
//! the requested architectures, found in the engine's GitHub release and
//! checked against their publisher's digests.
//!
//! Only assets a build of the table names are carried; everything else in
//! the release (other operating systems, other architectures, checksum
//! sidecars, which are read but not carried) is left.

pub mod latest;

use llmgw_shared::manifest::{Asset, BuildRef, Release};
use llmgw_shared::recipe;

use crate::error::{CreateError, RequestError};
use crate::http::Http;
use crate::plan::Plan;
use crate::sources::github;
use crate::spec::EngineSpec;

/// An engine's builds per architecture, from the recipe table alone.
#[derive(Debug, Clone)]
pub struct EngineBuilds {
    pub engine: EngineSpec,
    /// `owner/repo` of the engine's GitHub releases.
    pub repo: String,
    pub builds: Vec<BuildRef>,
}

impl EngineBuilds {
    /// Every asset any build names, once, in the order first named.
    pub fn asset_names(&self) -> Vec<String> {
        let mut out: Vec<String> = Vec::new();
        for b in &self.builds {
            for a in &b.assets {
                if !out.contains(a) {
                    out.push(a.clone());
                }
            }
        }
        out
    }
}

/// Whether the recipe table installs this engine as a Python environment
/// (vLLM, SGLang) rather than from release archives; unknown engines are
/// not, and are refused by [`resolve`] with the table's words.
pub fn is_python(engine: &str) -> bool {
    recipe::recipe(engine).is_ok_and(|r| r.pypi().is_some())
}

/// Asks the recipe table (both host profiles, via `builds()`) for every
/// build of the engine for each architecture. Python engines, unknown
/// engines and bad versions are refused here, before any network.
pub fn resolve(engine: &EngineSpec, arches: &[String]) -> Result<EngineBuilds, CreateError> {
    let err = |source| CreateError::Recipe {
        engine: engine.name.clone(),
        version: engine.version.clone(),
        error: Box::new(source),
    };
    let r = recipe::recipe(&engine.name).map_err(err)?;
    if let Some(v) = &engine.variant {
        return Err(RequestError::EngineVariant {
            engine: engine.name.clone(),
            version: engine.version.clone(),
            variant: v.clone(),
        }
        .into());
    }
    let mut builds = Vec::new();
    for arch in arches {
        for b in recipe::builds(&engine.name, &engine.version, arch).map_err(err)? {
            builds.push(BuildRef {
                arch: arch.clone(),
                variant: b.variant,
                assets: b.assets,
            });
        }
    }
    // builds() refuses PyPI engines first; this is only a safety net.
    let repo = r.repo().ok_or_else(|| RequestError::EngineWithoutRelease {
        engine: engine.name.clone(),
    })?;
    Ok(EngineBuilds {
        engine: engine.clone(),
        repo: repo.to_string(),
        builds,
    })
}

/// Finds the engine's release and plans each asset's download; a missing
/// asset is an error, or with `allow_missing` a gap (and the builds that
/// need it are left out of the manifest).
pub async fn plan(
    http: &Http,
    github_api: &str,
    eb: &EngineBuilds,
    (allow_missing, signatures): (bool, &crate::attest::SignaturePolicy),
    plan: &mut Plan,
) -> Result<(), CreateError> {
    let tag = &eb.engine.version;
    let Some(release) = github::fetch_release(http, github_api, &eb.repo, tag).await? else {
        let detail = format!(
            "{github_api} has no release {tag} of {}; check the version (llama.cpp tags look \
             like b6123, uv's like 0.12.20)",
            eb.repo
        );
        if allow_missing {
            for a in eb.asset_names() {
                plan.gap(format!("{} {tag} {a}", eb.repo), detail.clone());
            }
            return Ok(());
        }
        return Err(CreateError::MissingRelease {
            what: format!("--engine {}={}", eb.engine.name, eb.engine.version),
            detail,
        });
    };
    let mut assets = Vec::new();
    let mut missing = Vec::new();
    for name in eb.asset_names() {
        let Some(a) = release.asset(&name) else {
            let e = CreateError::MissingAsset {
                repo: eb.repo.clone(),
                tag: tag.clone(),
                asset: name.clone(),
                have: release.names_for_message(),
            };
            if !allow_missing {
                return Err(e);
            }
            plan.gap(
                format!("{} {tag} {name}", eb.repo),
                format!(
                    "the release has no such asset; it has: {}",
                    release.names_for_message()
                ),
            );
            missing.push(name);
            continue;
        };
        let (sha, digests) = github::publisher_digests(http, &release, &eb.repo, a).await?;
        let what = format!("{} {tag} {name}", eb.repo);
        let found =
            crate::attest::seek(http, (github_api, signatures), &eb.repo, what.clone(), &sha)
                .await?;
        plan.signatures.add(found);
        plan.download(a.download(what, &sha));
        assets.push(Asset {
            name: name.clone(),
            size: a.size,
            sha256: sha,
            publisher_digests: digests,
            content_type: a.content_type.clone(),
        });
    }
    if assets.is_empty() {
        return Ok(());
    }
    // A build is only installable whole: one with a missing asset is left
    // out (its gap says why).
    let builds = eb
        .builds
        .iter()
        .filter(|b| !b.assets.iter().any(|a| missing.contains(a)))
        .cloned()
        .collect();
    plan.releases.push(Release {
        repo: llmgw_shared::RepoId::parse("release repository", &eb.repo)?,
        tag: release.tag_name.clone(),
        engine: eb.engine.name.clone(),
        version: eb.engine.version.clone(),
        builds,
        assets,
        signature: None,
    });
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn spec(name: &str, version: &str) -> EngineSpec {
        EngineSpec {
            name: name.into(),
            version: version.into(),
            variant: None,
        }
    }

    #[test]
    fn llamacpp_names_cpu_cuda_and_vulkan_per_arch() {
        let eb = resolve(
            &spec("llamacpp", "b6123"),
            &["amd64".into(), "arm64".into()],
        )
        .unwrap();
        assert_eq!(eb.repo, "ggml-org/llama.cpp");
        let names = eb.asset_names();
        assert!(names.contains(&"llama-b6123-bin-ubuntu-x64.tar.gz".to_string()));
        assert!(names.contains(&"llama-b6123-bin-ubuntu-arm64.tar.gz".to_string()));
        assert!(names.contains(&"cudart-llama-b6123-bin-ubuntu-cuda-13.3-x64.tar.gz".to_string()));
        assert!(
            !names
                .iter()
                .any(|n| n.contains("win") || n.contains("macos"))
        );
        assert!(
            eb.builds
                .iter()
                .any(|b| b.arch == "arm64" && b.variant == "vulkan")
        );
    }

    #[test]
    fn refusals_are_usage_errors_with_the_tables_reason() {
        for (name, version, want) in [
            ("vllm", "0.20.0", "installed from PyPI"),
            ("sglang", "0.5.0", "installed from PyPI"),
            ("llamacpp", "../b1", "not a version of llamacpp"),
            ("nope", "1", "does not know how to install"),
        ] {
            let err = resolve(&spec(name, version), &["amd64".into()]).unwrap_err();
            assert!(err.is_usage(), "{err}");
            // The table's reason is the cause, printed after the flag.
            let msg = llmgw_shared::chain(&err);
            assert!(msg.contains(want), "{msg}");
            assert!(
                msg.starts_with(&format!("--engine {name}={version}: ")),
                "{msg}"
            );
        }
    }
}
