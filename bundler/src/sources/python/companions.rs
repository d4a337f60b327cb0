//! Companion wheels (issue #32): after uv's resolution, every resolved
//! package the recipe table gives companions
//! (`llmgw_shared::recipe::companions_of`: `flashinfer-python` →
//! `flashinfer-cubin`, `flashinfer-jit-cache`) has each one its publisher
//! has for it added as a requirement pinned to the resolved version — from
//! the default index, or from the publisher's own index at the CUDA
//! version the environment resolved (`per_cuda`) — and the environment is
//! resolved again.
//!
//! Invariant: the second resolution keeps every followed package at the
//! version first resolved (it is required `==`, and checked after: an
//! error if not); a companion not added is a gap that says why and what
//! the node does without it, never silently missing. A site's own lock is
//! never touched (it is carried as the site wrote it).

use llmgw_shared::recipe::{self, Companion, CompanionIndex, public_version};

use super::Ctx;
use super::lock::LockedPackage;
use super::per_cuda;
use super::request::EnvRequest;
use super::simple::{self, normalize};
use super::uv::ExplicitIndex;
use crate::error::{CreateError, PythonError};

/// What the companions of one resolution come to.
#[derive(Debug, Default)]
pub struct Additions {
    /// The requirements to resolve again with: each followed package
    /// pinned, then its companions pinned.
    pub requirements: Vec<String>,
    /// `(name, version)` of each followed package, to check after.
    pub pinned: Vec<(String, String)>,
    /// The publishers' own indexes a companion must come from.
    pub indexes: Vec<ExplicitIndex>,
    /// `(what, why)` of each companion not added, and of what the
    /// companions leave to the network.
    pub gaps: Vec<(String, String)>,
}

/// The companions `packages` call for, each looked up where its publisher
/// puts it; with `--no-extras`, every one a gap.
pub async fn plan(
    ctx: &Ctx<'_>,
    req: &EnvRequest,
    packages: &[LockedPackage],
) -> Result<Additions, CreateError> {
    let mut out = Additions::default();
    let cuda = per_cuda::resolved_cuda(packages);
    for p in packages {
        let name = normalize(&p.name);
        let companions = recipe::companions_of(&name, &p.version);
        let mut added = false;
        for c in &companions {
            let what = format!("{}: {}", req.name, c.requirement(&p.version));
            if packages.iter().any(|q| normalize(&q.name) == c.project) {
                continue;
            }
            if ctx.extras_left_out {
                out.gaps
                    .push((what, format!("--no-extras: left out; {}", c.without)));
                continue;
            }
            match c.index {
                CompanionIndex::Default => match published(ctx, c, &p.version).await? {
                    None => {
                        out.requirements.push(c.requirement(&p.version));
                        added = true;
                    }
                    Some(why) => out.gaps.push((what, why)),
                },
                CompanionIndex::PerCuda { base, builds } => {
                    let planned =
                        per_cuda::plan(ctx, req, c, (base, builds), &p.version, cuda.as_ref())
                            .await?;
                    match planned {
                        Ok((requirement, index)) => {
                            out.requirements.push(requirement);
                            out.indexes.push(index);
                            added = true;
                        }
                        Err(gap) => out.gaps.push(gap),
                    }
                }
            }
        }
        if added {
            out.requirements
                .insert(0, format!("{}=={}", p.name, p.version));
            out.pinned.push((name.clone(), p.version.clone()));
        }
    }
    Ok(out)
}

/// `None` when the default index publishes `c` at `version`'s public
/// part, else why not (as a gap's reason).
async fn published(
    ctx: &Ctx<'_>,
    c: &Companion,
    version: &str,
) -> Result<Option<String>, CreateError> {
    let want = public_version(version);
    let page = simple::fetch_project(ctx.http, ctx.pypi, c.project).await?;
    let has = page.as_ref().is_some_and(|page| {
        page.files
            .iter()
            .any(|f| simple::wheel_version(&f.filename) == Some(want))
    });
    Ok((!has).then(|| {
        format!(
            "{} has no {} wheel {want} (FlashInfer publishes some versions only on {}); {}",
            ctx.pypi,
            c.project,
            recipe::FLASHINFER_WHEEL_INDEX,
            c.without
        )
    }))
}

/// Checks the second resolution of environment `env` kept every followed
/// package pinned.
pub fn check_kept(
    env: &str,
    pinned: &[(String, String)],
    packages: &[LockedPackage],
) -> Result<(), PythonError> {
    for (name, version) in pinned {
        let now = packages.iter().find(|p| normalize(&p.name) == *name);
        if now.map(|p| &p.version) != Some(version) {
            return Err(PythonError::CompanionMoved {
                env: env.to_string(),
                project: name.clone(),
                expected: version.clone(),
                actual: now.map_or_else(|| "nothing".into(), |p| p.version.clone()),
            });
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A second resolution that moved the followed package is refused,
    /// naming the environment, both versions and what to do.
    #[test]
    fn a_moved_package_is_refused_naming_both_versions() {
        let locked = |v: &str| LockedPackage {
            name: "flashinfer-python".into(),
            version: v.into(),
            files: Vec::new(),
        };
        let pinned = [("flashinfer-python".to_string(), "0.5.3".to_string())];
        assert!(check_kept("vllm", &pinned, &[locked("0.5.3")]).is_ok());
        let e = check_kept("vllm", &pinned, &[locked("0.5.2")]).unwrap_err();
        let text = e.to_string();
        for want in [
            "vllm:",
            "flashinfer-python 0.5.2",
            "expected 0.5.3",
            "--override",
        ] {
            assert!(text.contains(want), "{want} not in: {text}");
        }
        let gone = check_kept("vllm", &pinned, &[]).unwrap_err().to_string();
        assert!(gone.contains("flashinfer-python nothing"), "{gone}");
    }
}
