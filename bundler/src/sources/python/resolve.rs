//! One environment, start to end: the engine's GitHub wheel fetched and
//! verified first (when the recipe names one), uv's resolution for the
//! node's platform (again with the companion wheels a resolved package
//! brings), and every file of the lock checked at its publisher.

use std::collections::BTreeMap;
use std::path::Path;

use llmgw_shared::chain;

use super::Ctx;
use super::check::{self, Checked, Origin};
use super::companions;
use super::lock;
use super::request::EnvRequest;
use super::simple::{self, ProjectPage, normalize};
use super::uv::{self, Compile, Uv};
use crate::error::CreateError;
use crate::error::PythonError;
use crate::fetch;
use crate::sources::github;

/// The manylinux tags tried, oldest first, when a dependency has no wheel
/// for the one asked for: the refusal names the first that works.
const LATER_TAGS: [&str; 7] = ["2_28", "2_31", "2_34", "2_35", "2_38", "2_39", "2_40"];

/// An environment resolved and checked.
#[derive(Debug)]
pub struct Resolved {
    /// uv's `--python-platform`: `x86_64-manylinux_2_28`.
    pub platform: String,
    pub lock_text: String,
    pub checked: Checked,
    /// The publishers' own indexes companion wheels came from (recorded
    /// in the manifest beside the environment's other indexes).
    pub companion_indexes: Vec<super::uv::ExplicitIndex>,
}

/// uv's platform for a Go architecture and a manylinux tag (`2_28`).
pub fn platform(arch: &str, manylinux: &str) -> String {
    format!(
        "{}-manylinux_{manylinux}",
        super::interpreter::triple_arch(arch)
    )
}

/// Why an environment was not resolved: an upstream of its variant (the
/// GitHub release of its wheel, its extra index) could not be had — a gap
/// under `--allow-missing` — or the resolution or a check failed, which
/// nothing makes a gap.
#[derive(Debug)]
pub enum Failed {
    Upstream(CreateError),
    Resolve(CreateError),
}

impl<E: Into<CreateError>> From<E> for Failed {
    fn from(e: E) -> Self {
        Failed::Resolve(e.into())
    }
}

pub async fn resolve(
    ctx: &Ctx<'_>,
    uv: &Uv,
    req: &EnvRequest,
    pages: &mut BTreeMap<(String, String), Option<ProjectPage>>,
) -> Result<Resolved, Failed> {
    let scratch = tempfile::Builder::new()
        .prefix("pyenv-")
        .tempdir_in(ctx.cache.root())
        .map_err(|e| CreateError::io(ctx.cache.root(), e))?;
    let mut dependencies = req.requirements.clone();
    let mut github_origin = None;
    if let Some(x) = &req.explicit {
        index_answers(ctx, req, x, pages)
            .await
            .map_err(Failed::Upstream)?;
    }
    if let Some(w) = &req.wheel {
        let (origin, dep) = fetch_wheel(ctx, req, w, scratch.path())
            .await
            .map_err(Failed::Upstream)?;
        dependencies.push(dep);
        github_origin = Some((normalize(&w.project), origin));
    }
    let mut compile = Compile {
        env: req.name.clone(),
        dependencies,
        explicit: req.explicit.clone(),
        companion_indexes: Vec::new(),
        default_index: ctx.pypi.to_string(),
        platform: platform(&req.arch, &req.manylinux),
        python: req.python.clone(),
        overrides: req.overrides.clone(),
        constraints: req.constraints.clone(),
    };
    let uv_cache = ctx.cache.root().join("uv");
    let mut lock_text = compile_with_hint(req, uv, &mut compile, scratch.path(), &uv_cache).await?;
    let parse = |text: &str| {
        lock::parse(text).map_err(|error| PythonError::Lock {
            env: req.name.clone(),
            error,
        })
    };
    let mut packages = parse(&lock_text)?;
    let added = companions::plan(ctx, req, &packages).await?;
    if !added.requirements.is_empty() {
        ctx.progress.message(&format!(
            "{}: resolving again with {}",
            req.name,
            added.requirements.join(" ")
        ));
        compile
            .dependencies
            .extend(added.requirements.iter().cloned());
        compile.companion_indexes = added.indexes.clone();
        lock_text = compile_with_hint(req, uv, &mut compile, scratch.path(), &uv_cache).await?;
        packages = parse(&lock_text)?;
        companions::check_kept(&req.name, &added.pinned, &packages)?;
    }
    let origin_of = |name: &str| -> Origin {
        let n = normalize(name);
        if let Some((project, o)) = &github_origin
            && *project == n
        {
            return o.clone();
        }
        let from = req.explicit.iter().chain(&added.indexes);
        match from
            .into_iter()
            .find(|x| x.packages.iter().any(|p| normalize(p) == n))
        {
            Some(x) => Origin::Index(x.url.clone()),
            None => Origin::Index(ctx.pypi.to_string()),
        }
    };
    let wanted = packages.iter().filter_map(|p| match origin_of(&p.name) {
        Origin::Index(i) => Some((i, normalize(&p.name))),
        Origin::Github { .. } => None,
    });
    simple::fetch_pages(ctx.http, ctx.jobs, wanted, pages)
        .await
        .map_err(Failed::Resolve)?;
    let mut checked = check::check(&req.name, &packages, &origin_of, pages, ctx.allow_missing)
        .map_err(|e| Failed::Resolve(e.into()))?;
    checked.gaps.extend(added.gaps);
    Ok(Resolved {
        platform: compile.platform,
        lock_text,
        checked,
        companion_indexes: added.indexes,
    })
}

/// uv's resolution of `req`, or `None` when its upstream failed: under
/// `--allow-missing` a gap of the plan, else one of its stops.
pub async fn resolved_or_gap(
    ctx: &Ctx<'_>,
    uv: &Uv,
    req: &EnvRequest,
    pages: &mut BTreeMap<(String, String), Option<ProjectPage>>,
    plan: &mut crate::plan::Plan,
) -> Result<Option<Resolved>, CreateError> {
    match resolve(ctx, uv, req, pages).await {
        Ok(r) => Ok(Some(r)),
        Err(Failed::Upstream(e)) if ctx.allow_missing => {
            let why = chain(&e);
            ctx.progress.message(&format!(
                "{}: not carried (--allow-missing): {why}",
                req.name
            ));
            plan.gap(req.name.clone(), why);
            Ok(None)
        }
        // Planning goes on: every part that stops the run is said at once.
        Err(Failed::Upstream(e)) => {
            plan.stops.push(CreateError::Part {
                part: format!("{}: its upstream", req.name),
                advice: upstream_advice(req),
                error: Box::new(e),
            });
            Ok(None)
        }
        Err(Failed::Resolve(e)) => Err(e),
    }
}

/// What to pass when a variant's upstream failed: `--allow-missing`, or
/// the variants to carry instead.
fn upstream_advice(req: &EnvRequest) -> String {
    let mut advice = "pass --allow-missing to record it as a gap and carry the rest".to_string();
    if let Some(engine) = &req.engine {
        advice.push_str(&format!(
            ", or choose the variants to carry (--engine {engine}={}:VARIANT; `llmgw recipe \
             environments {engine} {} --arch {}` lists them)",
            req.version, req.version, req.arch
        ));
    }
    advice
}

/// uv's resolution, and on a refusal for the platform, the first later
/// manylinux tag that resolves as the refusal's hint — for every
/// environment, whatever words uv refused in.
async fn compile_with_hint(
    req: &EnvRequest,
    uv: &Uv,
    compile: &mut Compile,
    scratch: &Path,
    uv_cache: &Path,
) -> Result<String, PythonError> {
    match uv::compile(uv, compile, scratch, uv_cache).await {
        Ok(t) => Ok(t),
        Err(PythonError::NoWheel {
            env,
            project,
            platform,
            ..
        }) => {
            let hint = later_tag_hint(req, uv, compile, scratch, uv_cache)
                .await
                .unwrap_or_else(|| {
                    format!(
                        "no manylinux tag up to {} gives every dependency a wheel; pin a \
                         version of it that publishes wheels",
                        LATER_TAGS[LATER_TAGS.len() - 1]
                    )
                });
            Err(PythonError::NoWheel {
                env,
                project,
                platform,
                hint,
            })
        }
        Err(PythonError::UvFailed {
            env,
            status,
            stderr,
            ..
        }) if platform_refused(&stderr) => {
            let hint = later_tag_hint(req, uv, compile, scratch, uv_cache)
                .await
                .map(|h| format!("; {h}"))
                .unwrap_or_default();
            Err(PythonError::UvFailed {
                env,
                status,
                stderr,
                hint,
            })
        }
        Err(e) => Err(e),
    }
}

/// Finds the recipe's wheel in its GitHub release, downloads it verified
/// against GitHub's digest, and links it into `scratch` under its own name
/// for uv to read: `vllm @ file:///…/vllm-0.20.1+cu129-….whl`.
async fn fetch_wheel(
    ctx: &Ctx<'_>,
    req: &EnvRequest,
    w: &llmgw_shared::recipe::Wheel,
    scratch: &Path,
) -> Result<(Origin, String), CreateError> {
    let release = github::fetch_release(ctx.http, ctx.github_api, &w.repo, &w.tag)
        .await?
        .ok_or_else(|| CreateError::MissingRelease {
            what: req.name.clone(),
            detail: format!("{} has no release {} of {}", ctx.github_api, w.tag, w.repo),
        })?;
    let matching: Vec<_> = release
        .assets
        .iter()
        .filter(|a| a.name.starts_with(&w.prefix) && a.name.ends_with(&w.suffix))
        .collect();
    let [asset] = matching.as_slice() else {
        return Err(CreateError::MissingAsset {
            repo: w.repo.clone(),
            tag: w.tag.clone(),
            asset: format!(
                "{}*{} ({} match)",
                w.prefix,
                w.suffix,
                if matching.is_empty() {
                    "none"
                } else {
                    "several"
                }
            ),
            have: release.names_for_message(),
        });
    };
    let (sha, _) = github::publisher_digests(ctx.http, &release, &w.repo, asset).await?;
    let d = asset.download(format!("{} {} {}", w.repo, w.tag, asset.name), &sha);
    let got = fetch::fetch_one(ctx.http, ctx.cache, &d, ctx.progress).await?;
    let wheels = scratch.join("wheels");
    std::fs::create_dir_all(&wheels).map_err(|e| CreateError::io(&wheels, e))?;
    let link = wheels.join(&asset.name);
    std::fs::hard_link(&got.path, &link)
        .or_else(|_| std::fs::copy(&got.path, &link).map(|_| ()))
        .map_err(|e| CreateError::io(&link, e))?;
    let url = reqwest::Url::from_file_path(&link)
        .map_err(|()| CreateError::io(&link, std::io::Error::other("not an absolute path")))?;
    let origin = Origin::Github {
        repo: w.repo.clone(),
        tag: w.tag.clone(),
        filename: asset.name.clone(),
        url: asset.browser_download_url.clone(),
        size: asset.size,
        sha256: sha,
    };
    Ok((origin, format!("{} @ {url}", w.project)))
}

/// After a refusal for the platform: the first later manylinux tag at
/// which the whole environment resolves, as advice; `None` when none does.
async fn later_tag_hint(
    req: &EnvRequest,
    uv: &Uv,
    compile: &mut Compile,
    scratch: &Path,
    uv_cache: &Path,
) -> Option<String> {
    let asked = req.manylinux.as_str();
    let arch = compile.platform.split('-').next().unwrap_or("").to_string();
    for tag in LATER_TAGS.iter().filter(|t| tag_after(t, asked)) {
        compile.platform = format!("{arch}-manylinux_{tag}");
        if uv::compile(uv, compile, scratch, uv_cache).await.is_ok() {
            let glibc = tag.replace('_', ".");
            let default = if req.manylinux_given {
                String::new()
            } else {
                format!(" (manylinux_{asked} is this environment's default)")
            };
            return Some(format!(
                "at manylinux_{tag} every dependency has a wheel: pass --manylinux {tag} if the \
                 nodes have glibc {glibc} or newer{default}"
            ));
        }
    }
    None
}

/// Whether uv refused for want of a wheel for the platform (rather than a
/// pin no release meets): then a later manylinux tag may be the answer.
fn platform_refused(stderr: &str) -> bool {
    stderr.contains("matching platform tag") || stderr.contains("on the following platform")
}

/// The explicit index answers for the first package the environment takes
/// from it: checked before the resolver runs, so an unreachable index is
/// the variant's upstream failing, not a resolution.
async fn index_answers(
    ctx: &Ctx<'_>,
    req: &EnvRequest,
    x: &super::uv::ExplicitIndex,
    pages: &mut BTreeMap<(String, String), Option<ProjectPage>>,
) -> Result<(), CreateError> {
    let Some(first) = x.packages.first() else {
        return Ok(());
    };
    let key = (x.url.clone(), normalize(first));
    if let Some(Some(_)) = pages.get(&key) {
        return Ok(());
    }
    match simple::fetch_project(ctx.http, &x.url, &key.1).await? {
        Some(page) => {
            pages.insert(key, Some(page));
            Ok(())
        }
        None => Err(CreateError::MissingRelease {
            what: req.name.clone(),
            detail: format!(
                "the index {} ({}) has no project {first}, which this variant takes from it",
                x.url, x.name
            ),
        }),
    }
}

/// Whether manylinux tag `a` (`2_34`) is newer than `b`.
fn tag_after(a: &str, b: &str) -> bool {
    let n = |t: &str| -> (u64, u64) {
        let (x, y) = t.split_once('_').unwrap_or((t, "0"));
        (x.parse().unwrap_or(0), y.parse().unwrap_or(0))
    };
    n(a) > n(b)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn platforms_and_tags() {
        assert_eq!(platform("amd64", "2_28"), "x86_64-manylinux_2_28");
        assert_eq!(platform("arm64", "2_34"), "aarch64-manylinux_2_34");
        assert!(tag_after("2_34", "2_28"));
        assert!(!tag_after("2_28", "2_28"));
        assert!(tag_after("2_40", "2_4"));
    }
}
