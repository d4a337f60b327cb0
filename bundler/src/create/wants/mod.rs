//! Planning wants against their upstreams: each group of wants is planned
//! on a plan of its own, whose failure becomes gaps for exactly those
//! wants, and is then taken into the run's plan (a repository or release
//! the request already plans gains the wanted files, once each).
//!
//! Invariant: a want is carried only as its upstream publishes it (the
//! Hub's tree and LFS digests, the release's asset digests, the index's
//! resolve), through the same source code a request uses; a want that is
//! not there is a gap naming the node's path and why, never a failure.

use std::collections::BTreeMap;

use llmgw_shared::chain;

use crate::attest::SignaturePolicy;
use crate::http::Http;
use crate::plan::Plan;
use crate::sources::python::EnvRequest;
use crate::sources::{engines, github};
use crate::spec::EngineSpec;
use crate::want::{Want, Wants, what};

mod hub_wants;

pub use hub_wants::plan_hub;

/// Where images are planned from: the run's client, its registry
/// sessions, cache and settings.
pub struct ImageCtx<'a> {
    pub http: &'a Http,
    pub auth: &'a crate::sources::oci::auth::RegistryAuth,
    pub cache: &'a crate::cache::Cache,
    pub progress: &'a crate::progress::Events,
    pub spec: &'a crate::spec::CreateSpec,
    pub created: Option<u64>,
}

/// Plans each image wanted (by the registry containerd named, or the
/// want-list's `source`) and each chart wanted (by its `source`) that the
/// request does not carry, each on a plan of its own: one a registry
/// refuses is a gap.
pub async fn plan_images(ctx: &ImageCtx<'_>, wants: &Wants, plan: &mut Plan) {
    use crate::spec::oci::{ChartSource, ImageSource};
    for (w, origin) in &wants.wants {
        let (images, charts) = match w {
            Want::Image { reference } => match ImageSource::parse(reference) {
                Ok(s) if ctx.spec.images.contains(&s) => continue,
                Ok(s) => (vec![s], vec![]),
                Err(e) => {
                    plan.gap(what(origin), chain(&e));
                    continue;
                }
            },
            Want::Chart { reference } => match ChartSource::parse(reference) {
                Ok(c) if ctx.spec.charts.contains(&c) => continue,
                Ok(c) => (vec![], vec![c]),
                Err(e) => {
                    plan.gap(what(origin), chain(&e));
                    continue;
                }
            },
            _ => continue,
        };
        let mut own = Plan::default();
        let planned = crate::sources::oci::plan_all(
            ctx.http,
            ctx.auth,
            ctx.cache,
            ctx.progress,
            &images,
            &charts,
            &ctx.spec.registries,
            &ctx.spec.arches,
            ctx.created,
            &mut own,
        )
        .await;
        match planned {
            Ok(()) => absorb(plan, own),
            Err(e) => plan.gap(what(origin), chain(&e)),
        }
    }
}

/// The engine of the recipe table whose releases are published at `repo`.
fn engine_of(repo: &str) -> Option<&'static str> {
    llmgw_shared::recipe::installable()
        .into_iter()
        .chain(["uv"])
        .find(|e| {
            llmgw_shared::recipe::recipe(e)
                .ok()
                .and_then(|r| r.repo())
                .is_some_and(|r| r.eq_ignore_ascii_case(repo))
        })
}

/// Plans the release assets and releases wanted, each of an engine of the
/// recipe table; `asked` is the request's own engines.
pub async fn plan_releases(
    http: &Http,
    (github_api, signatures): (&str, &SignaturePolicy),
    arches: &[String],
    asked: &[EngineSpec],
    wants: &Wants,
    plan: &mut Plan,
) {
    let mut assets: BTreeMap<(String, String), Vec<(String, String)>> = BTreeMap::new();
    for (w, origin) in &wants.wants {
        let (repo, tag) = match w {
            Want::ReleaseAsset { repo, tag, .. } | Want::Release { repo, tag } => (repo, tag),
            _ => continue,
        };
        let Some(engine) = engine_of(repo) else {
            plan.gap(
                what(origin),
                format!(
                    "{repo} publishes no engine of the recipe table; bundle create carries the \
                     releases of its engines ({}) and llmgw's own (--llmgw)",
                    engine_repos()
                ),
            );
            continue;
        };
        let spec = EngineSpec {
            name: engine.to_string(),
            version: tag.clone(),
            variant: None,
        };
        if asked.contains(&spec) {
            // The request carries the engine at that version: its builds
            // for --arch are what the table carries.
            if let Want::ReleaseAsset { asset, .. } = w
                && !engines::resolve(&spec, arches).is_ok_and(|eb| eb.asset_names().contains(asset))
            {
                assets
                    .entry((repo.clone(), tag.clone()))
                    .or_default()
                    .push((asset.clone(), origin.clone()));
            }
            continue;
        }
        match w {
            Want::ReleaseAsset { asset, .. } => assets
                .entry((repo.clone(), tag.clone()))
                .or_default()
                .push((asset.clone(), origin.clone())),
            _ => {
                let api = (github_api, signatures);
                whole_release(http, api, arches, &spec, origin, plan).await
            }
        }
    }
    for ((repo, tag), list) in assets {
        let engine = engine_of(&repo).unwrap_or_default();
        let spec = EngineSpec {
            name: engine.to_string(),
            version: tag.clone(),
            variant: None,
        };
        let api = (github_api, signatures);
        release_assets(http, api, arches, &spec, &repo, &list, plan).await;
    }
}

fn engine_repos() -> String {
    llmgw_shared::recipe::installable()
        .into_iter()
        .chain(["uv"])
        .filter_map(|e| {
            let r = llmgw_shared::recipe::recipe(e).ok()?.repo()?;
            Some(format!("{e}: {r}"))
        })
        .collect::<Vec<_>>()
        .join(", ")
}

/// An engine's builds at a version for the run's architectures, as
/// `--engine NAME=VERSION` would carry them.
/// Its publisher's signatures are checked as for `--engine`, under the
/// run's policy (the site's `--identity`, `--trusted-root` and
/// `--allow-unsigned-upstream` included).
async fn whole_release(
    http: &Http,
    (api, signatures): (&str, &SignaturePolicy),
    arches: &[String],
    spec: &EngineSpec,
    origin: &str,
    plan: &mut Plan,
) {
    let eb = match engines::resolve(spec, arches) {
        Ok(eb) => eb,
        Err(e) => return plan.gap(what(origin), chain(&e)),
    };
    let mut own = Plan::default();
    match engines::plan(http, api, &eb, (true, signatures), &mut own).await {
        Ok(()) => absorb(plan, own),
        Err(e) => plan.gap(what(origin), chain(&e)),
    }
}

/// Exactly the assets wanted of one release, each checked against the
/// digest the release states and its publisher's signature as for
/// `--engine` (an asset whose evidence is refused is a gap, not carried);
/// the builds of the table they complete are recorded with them.
async fn release_assets(
    http: &Http,
    (api, signatures): (&str, &SignaturePolicy),
    arches: &[String],
    spec: &EngineSpec,
    repo: &str,
    list: &[(String, String)],
    plan: &mut Plan,
) {
    let tag = &spec.version;
    let release = match github::fetch_release(http, api, repo, tag).await {
        Ok(Some(r)) => r,
        Ok(None) => {
            for (_, o) in list {
                plan.gap(what(o), format!("{api} has no release {tag} of {repo}"));
            }
            return;
        }
        Err(e) => {
            for (_, o) in list {
                plan.gap(what(o), chain(&e));
            }
            return;
        }
    };
    let mut own = Plan::default();
    let mut carried = Vec::new();
    for (name, origin) in list {
        let Some(a) = release.asset(name) else {
            plan.gap(
                what(origin),
                format!(
                    "release {tag} of {repo} has no asset {}; it has: {}",
                    llmgw_shared::shown(name),
                    release.names_for_message()
                ),
            );
            continue;
        };
        let (sha, digests) = match github::publisher_digests(http, &release, repo, a).await {
            Ok(d) => d,
            Err(e) => {
                plan.gap(what(origin), chain(&e));
                continue;
            }
        };
        let label = format!("{repo} {tag} {name}");
        match crate::attest::seek(http, (api, signatures), repo, label.clone(), &sha).await {
            Ok(found) => own.signatures.add(found),
            Err(e) => {
                plan.gap(what(origin), chain(&e));
                continue;
            }
        }
        own.download(a.download(label, &sha));
        carried.push(llmgw_shared::manifest::Asset {
            name: name.clone(),
            size: a.size,
            sha256: sha,
            publisher_digests: digests,
            content_type: a.content_type.clone(),
        });
    }
    if carried.is_empty() {
        return;
    }
    let Ok(repo_id) = llmgw_shared::RepoId::parse("release repository", repo) else {
        return;
    };
    let names: Vec<&str> = carried.iter().map(|a| a.name.as_str()).collect();
    let builds = engines::resolve(spec, arches)
        .map(|eb| eb.builds)
        .unwrap_or_default()
        .into_iter()
        .filter(|b| b.assets.iter().all(|a| names.contains(&a.as_str())))
        .collect();
    own.releases.push(llmgw_shared::manifest::Release {
        repo: repo_id,
        tag: release.tag_name.clone(),
        engine: spec.name.clone(),
        version: spec.version.clone(),
        builds,
        assets: carried,
        signature: None,
    });
    absorb(plan, own);
}

/// The environments of the request with each wanted project added to the
/// one the node asked it of, where the index has it; every other project
/// want is a gap.
pub async fn extend_envs(
    http: &Http,
    pypi: &str,
    envs: &[EnvRequest],
    wants: &Wants,
    plan: &mut Plan,
) -> Vec<EnvRequest> {
    let mut envs = envs.to_vec();
    for (w, origin) in &wants.wants {
        let Want::PythonProject { env, project } = w else {
            continue;
        };
        let Some(e) = envs.iter_mut().find(|e| &e.name == env) else {
            plan.gap(
                what(origin),
                format!(
                    "the environment {env} is not in this request: give the --python-env (or \
                     --engine) that made it, and --want adds {project} to it"
                ),
            );
            continue;
        };
        if let Some(lock) = &e.site_lock {
            let why = format!("{env} is the site's lock {}: lock it again", lock.display());
            plan.gap(what(origin), why);
            continue;
        }
        if e.requirements
            .iter()
            .any(|r| requirement_name(r) == *project)
        {
            continue;
        }
        let url = format!("{}/{project}/", pypi.trim_end_matches('/'));
        match http
            .get_small(&url, Some(crate::sources::python::simple::ACCEPT), 64 << 20)
            .await
        {
            Ok(_) => e.requirements.push(project.clone()),
            Err(err) if err.status() == Some(404) => {
                plan.gap(what(origin), format!("{pypi} has no project {project}"))
            }
            Err(err) => plan.gap(what(origin), chain(&err)),
        }
    }
    envs
}

/// The project a requirement names, PEP 503-normalized: `Rich[x]>=1` is `rich`.
fn requirement_name(req: &str) -> String {
    let end = req
        .find(|c: char| !(c.is_ascii_alphanumeric() || matches!(c, '-' | '_' | '.')))
        .unwrap_or(req.len());
    llmgw_shared::pep503_normalize(&req[..end])
}

/// Takes a plan made for wants into the run's: downloads once each, a
/// repository or release already planned gains the new files or assets.
fn absorb(plan: &mut Plan, own: Plan) {
    for d in own.downloads {
        plan.download(d);
    }
    plan.gaps.extend(own.gaps);
    for a in own.signatures.attested {
        plan.signatures.add(Some(crate::attest::Found::Attested(a)));
    }
    for u in own.signatures.unsigned {
        plan.signatures.add(Some(crate::attest::Found::Unsigned(u)));
    }
    for s in own.stored {
        if !plan.stored.iter().any(|x| x.sha256 == s.sha256) {
            plan.stored.push(s);
        }
    }
    for i in own.images {
        if !plan.images.iter().any(|x| {
            x.registry == i.registry
                && x.repository == i.repository
                && x.tag == i.tag
                && x.digest == i.digest
        }) {
            plan.images.push(i);
        }
    }
    for r in own.repos {
        match plan
            .repos
            .iter_mut()
            .find(|p| p.kind == r.kind && p.id == r.id && p.revision == r.revision)
        {
            Some(p) => {
                for f in r.files {
                    if !p.files.iter().any(|x| x.path == f.path) {
                        p.files.push(f);
                    }
                }
                // No glob means every file: the whole repository now.
                if r.patterns.is_empty() {
                    p.patterns.clear();
                } else if !p.patterns.is_empty() {
                    p.patterns.extend(r.patterns);
                }
                // A kernel's build folders: the ones it had and the new.
                if let (Some(have), Some(new)) = (&mut p.kernel, r.kernel) {
                    have.variants.extend(new.variants);
                    have.variants.sort();
                    have.variants.dedup();
                }
            }
            None => plan.repos.push(r),
        }
    }
    for r in own.releases {
        match plan
            .releases
            .iter_mut()
            .find(|p| p.repo == r.repo && p.tag == r.tag)
        {
            Some(p) => {
                for a in r.assets {
                    if !p.assets.iter().any(|x| x.name == a.name) {
                        p.assets.push(a);
                    }
                }
                for b in r.builds {
                    if !p.builds.contains(&b) {
                        p.builds.push(b);
                    }
                }
            }
            None => plan.releases.push(r),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn requirement_names_are_normalized() {
        assert_eq!(requirement_name("Rich_Text[x]>=1"), "rich-text");
        assert_eq!(requirement_name("numpy"), "numpy");
        assert_eq!(requirement_name("a.b ; python_version>'3'"), "a-b");
    }

    #[test]
    fn engines_are_found_by_their_release_repository() {
        assert_eq!(engine_of("ggml-org/llama.cpp"), Some("llamacpp"));
        assert_eq!(engine_of("astral-sh/uv"), Some("uv"));
        assert_eq!(engine_of("acme/other"), None);
    }
}
