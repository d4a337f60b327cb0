//! Each group of settings checked, in the order `CreateSpec::resolve`
//! reads them (so that of two wrong values, the first is the one named).
//!
//! Invariant: a value that leaves here has its shape: a name is safe, a
//! list holds each item once, a number is in its range.

use std::path::{Path, PathBuf};

use llmgw_shared::check_repo_id;
use llmgw_shared::manifest::RepoKind;

use super::parse::{flag_of, url_flag};
use super::{
    CreateSettings, DEFAULT_JOBS, DEFAULT_LLMGW_REPO, EngineSpec, LlmgwSpec, MAX_JOBS, RepoSpec,
    oci, parse_engine, parse_repo, python,
};
use crate::error::{CreateError, FlagError, RequestError};

/// `--out PATH`: given, and naming a file or folder to create.
pub(super) fn out(out: Option<PathBuf>) -> Result<PathBuf, CreateError> {
    let out = out.ok_or(RequestError::OutRequired)?;
    if out.file_name().is_none() {
        return Err(FlagError::OutName { out }.into());
    }
    Ok(out)
}

/// `--arch` (repeatable, comma-separated): each known, once, sorted.
pub(super) fn arches(given: Vec<String>) -> Result<Vec<String>, CreateError> {
    let mut arches: Vec<String> = Vec::new();
    for a in given {
        for a in a.split(',').map(str::trim).filter(|a| !a.is_empty()) {
            if let Some(problem) = llmgw_shared::recipe::arch_problem(a) {
                return Err(FlagError::Arch {
                    arch: a.to_string(),
                    problem,
                }
                .into());
            }
            if !arches.iter().any(|x| x == a) {
                arches.push(a.to_string());
            }
        }
    }
    if arches.is_empty() {
        return Err(RequestError::ArchRequired.into());
    }
    arches.sort();
    Ok(arches)
}

/// `--llmgw VERSION` with its repository, API and `--trust` keys.
pub(super) fn llmgw(
    version: Option<String>,
    repo: Option<String>,
    api: Option<String>,
    trust: Vec<PathBuf>,
    github_api: &str,
) -> Result<Option<LlmgwSpec>, CreateError> {
    let Some(version) = version else {
        return Ok(None);
    };
    if !llmgw_shared::recipe::valid_version(&version) {
        return Err(FlagError::LlmgwVersion { version }.into());
    }
    let repo = repo.unwrap_or_else(|| DEFAULT_LLMGW_REPO.to_string());
    check_repo_id("--llmgw-repo", &repo).map_err(CreateError::UnsafeFlag)?;
    let api = match api {
        Some(u) => url_flag("--llmgw-api", u)?,
        None => github_api.to_string(),
    };
    if trust.is_empty() {
        return Err(RequestError::LlmgwWithoutTrust.into());
    }
    Ok(Some(LlmgwSpec {
        version,
        repo,
        api,
        trust,
    }))
}

/// `--engine NAME=VERSION`, each once.
pub(super) fn engines(given: Vec<String>) -> Result<Vec<EngineSpec>, CreateError> {
    let mut engines: Vec<EngineSpec> = Vec::new();
    for e in given {
        let e = parse_engine(&e)?;
        if !engines.contains(&e) {
            engines.push(e);
        }
    }
    Ok(engines)
}

/// `--model` and `--dataset`: a repository at a revision asked for twice
/// is refused (its globs belong in one value).
pub(super) fn repos(
    models: Vec<String>,
    datasets: Vec<String>,
) -> Result<Vec<RepoSpec>, CreateError> {
    let mut repos = Vec::new();
    for m in models {
        repos.push(parse_repo(RepoKind::Model, &m)?);
    }
    for d in datasets {
        repos.push(parse_repo(RepoKind::Dataset, &d)?);
    }
    for (i, r) in repos.iter().enumerate() {
        if repos[..i]
            .iter()
            .any(|o| o.kind == r.kind && o.id == r.id && o.revision == r.revision)
        {
            return Err(RequestError::RepoTwice {
                flag: flag_of(r.kind),
                id: r.id.clone(),
                revision: r.revision.clone(),
            }
            .into());
        }
    }
    Ok(repos)
}

/// `--python-env NAME=REQ[,REQ…]` (or `NAME=PATH` of a lock).
pub(super) fn site_envs(given: &[String]) -> Result<Vec<python::SiteEnv>, CreateError> {
    given.iter().map(|t| python::parse_site_env(t)).collect()
}

/// `--index NAME=URL`.
pub(super) fn indexes(given: Vec<String>) -> Result<Vec<(String, String)>, CreateError> {
    let mut indexes = Vec::new();
    for i in given {
        let (name, url) = i
            .split_once('=')
            .filter(|(n, _)| !n.trim().is_empty())
            .ok_or_else(|| FlagError::Index { text: i.clone() })?;
        indexes.push((
            name.trim().to_string(),
            url_flag("--index", url.to_string())?,
        ));
    }
    Ok(indexes)
}

/// `--manylinux 2_28`: a manylinux glibc tag.
pub(super) fn manylinux(given: Option<String>) -> Result<Option<String>, CreateError> {
    if let Some(m) = &given {
        let tag_ok = m.split_once('_').is_some_and(|(a, b)| {
            a == "2" && !b.is_empty() && b.len() <= 3 && b.bytes().all(|c| c.is_ascii_digit())
        });
        if !tag_ok {
            return Err(FlagError::Manylinux { tag: m.clone() }.into());
        }
    }
    Ok(given)
}

/// `--python 3.11`: only with a site environment for it to set.
pub(super) fn site_python(
    given: Option<&str>,
    python_envs: &[python::SiteEnv],
) -> Result<Option<String>, CreateError> {
    match given {
        None => Ok(None),
        Some(_) if python_envs.is_empty() => Err(RequestError::PythonWithoutSiteEnv.into()),
        Some(p) => Ok(Some(python::check_python(p)?)),
    }
}

/// `--want FILE`: a want-list, never an empty one.
pub(super) fn wants(given: Option<&Path>) -> Result<Option<crate::want::Wants>, CreateError> {
    let wants = given.map(crate::want::Wants::load).transpose()?;
    if wants.as_ref().is_some_and(crate::want::Wants::is_empty) {
        let path = given.unwrap_or_else(|| Path::new("")).to_path_buf();
        return Err(crate::error::ListError::WantEmpty { path }.into());
    }
    Ok(wants)
}

/// `--zstd-level`, within zstd's levels.
pub(super) fn zstd_level(given: Option<i32>) -> Result<i32, CreateError> {
    let zstd_level = given.unwrap_or(crate::writer::zst::DEFAULT_LEVEL);
    if !crate::writer::zst::LEVELS.contains(&zstd_level) {
        return Err(FlagError::ZstdLevel {
            level: zstd_level,
            min: *crate::writer::zst::LEVELS.start(),
            max: *crate::writer::zst::LEVELS.end(),
        }
        .into());
    }
    Ok(zstd_level)
}

/// `--volume-size`, `--chunk-size` and `--parity`, and an `--out` that
/// volumes can be written to when they are asked for.
pub(super) fn volumes(
    out: &Path,
    volume_size: Option<String>,
    chunk_size: Option<String>,
    parity: Option<u32>,
) -> Result<Option<crate::volumes::VolumeSpec>, CreateError> {
    let volumes =
        crate::volumes::VolumeSpec::parse(volume_size.as_deref(), chunk_size.as_deref(), parity)?;
    if volumes.is_some() {
        crate::volumes::check_out(out)?;
    }
    Ok(volumes)
}

/// `--jobs`: 1 to [`MAX_JOBS`] parallel downloads.
pub(super) fn jobs(given: Option<usize>) -> Result<usize, CreateError> {
    let jobs = given.unwrap_or(DEFAULT_JOBS);
    if jobs == 0 || jobs > MAX_JOBS {
        return Err(FlagError::Jobs {
            jobs,
            max: MAX_JOBS,
        }
        .into());
    }
    Ok(jobs)
}

type PythonChoices = (
    python::InterpreterChoice,
    Vec<python::EnvEdit>,
    Vec<python::EnvEdit>,
);

/// `--python-interpreter`, `--override` and `--constraint` read and
/// checked (which environments they name is checked with the request).
pub(super) fn python_choices(
    interpreter: &Option<String>,
    overrides: &[String],
    constraints: &[String],
) -> Result<PythonChoices, CreateError> {
    use python::{EnvEdit, InterpreterChoice};
    let interpreter = match interpreter {
        Some(t) => InterpreterChoice::parse(t)?,
        None => InterpreterChoice::Carried,
    };
    let edits = |flag: &'static str, list: &[String]| {
        list.iter()
            .map(|t| EnvEdit::parse(flag, t))
            .collect::<Result<Vec<_>, _>>()
    };
    Ok((
        interpreter,
        edits("--override", overrides)?,
        edits("--constraint", constraints)?,
    ))
}

/// Refuses a request whose every part (`none`: each part's "not asked")
/// asks for nothing.
pub(super) fn something_asked(none: &[bool]) -> Result<(), CreateError> {
    if none.iter().all(|n| *n) {
        return Err(RequestError::NothingToBundle.into());
    }
    Ok(())
}

type OciSettings = (Vec<oci::ImageSource>, Vec<oci::ChartSource>);

/// What the request asks of OCI registries, checked.
pub(super) struct OciRequest {
    pub images: Vec<oci::ImageSource>,
    pub charts: Vec<oci::ChartSource>,
    pub registries: oci::registries::Registries,
    pub engine_images: super::engine_images::EngineImages,
    pub driver: Option<String>,
}

/// `--image`, `--chart`, `--engine-image` (with `--driver`, per `--arch`),
/// `--insecure-registry` and `--registry` read and checked: the engine
/// images join the images as their Docker references.
pub(super) fn oci_request(
    s: &CreateSettings,
    arches: &[String],
) -> Result<OciRequest, CreateError> {
    use super::engine_images;
    let driver = engine_images::driver(s.driver.clone(), &s.engine_images)?;
    let engine_images = engine_images::resolve(&s.engine_images, arches, driver.as_deref())?;
    let mut image_texts = s.images.clone();
    image_texts.extend(engine_images.picks.iter().map(|p| p.image.reference()));
    let (images, charts) = oci_settings(&image_texts, &s.charts)?;
    let registries = oci::registries::Registries::parse(&s.insecure_registries, &s.registries)?;
    Ok(OciRequest {
        images,
        charts,
        registries,
        engine_images,
        driver,
    })
}

/// `--image` (with the engine images' references) and `--chart` read and
/// checked, each image and chart once.
fn oci_settings(images: &[String], charts: &[String]) -> Result<OciSettings, CreateError> {
    use oci::{ChartSource, ImageSource};
    let mut refs: Vec<ImageSource> = Vec::new();
    for i in images {
        let r = ImageSource::parse(i)?;
        if refs.contains(&r) {
            continue;
        }
        if let Some(other) = refs
            .iter()
            .find(|o| o.served_as() == r.served_as() && r.served_as().2.is_some())
        {
            return Err(RequestError::ImagesClash {
                first: r.to_string(),
                second: other.to_string(),
            }
            .into());
        }
        refs.push(r);
    }
    let mut chart_list: Vec<ChartSource> = Vec::new();
    for c in charts {
        let c = ChartSource::parse(c)?;
        if !chart_list.contains(&c) {
            chart_list.push(c);
        }
    }
    Ok((refs, chart_list))
}
