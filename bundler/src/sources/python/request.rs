//! Which Python environments a run carries: every environment the recipe
//! table lists for each `--engine vllm=V` / `sglang=V` and `--arch`, and
//! each site environment (`--python-env NAME=REQ,…`) per `--arch`, with the
//! indexes each resolves against (`--pypi`, `--index NAME=URL`).
//!
//! Worked out from the table and the flags alone, before any network, so a
//! request the table refuses is refused at once.

use llmgw_shared::recipe::{self, Wheel};

use super::uv::ExplicitIndex;
use crate::error::{CreateError, RequestError};
use crate::spec::python::SiteEnv;

/// The interpreter a site environment runs on unless `--python` says
/// else: the engines'.
pub const SITE_PYTHON: &str = "3.12";
/// The manylinux tag a site environment is resolved for unless
/// `--manylinux` says else: glibc 2.28 (RHEL 8, Debian 10, Ubuntu 18.10)
/// and newer. A recipe environment's default is the table's figure for it.
pub const SITE_MANYLINUX: &str = "2_28";

/// One environment for one architecture.
#[derive(Debug, Clone, PartialEq)]
pub struct EnvRequest {
    /// `vllm-0.20.1-cu13-amd64`, or `{NAME}-{arch}` for a site environment.
    pub name: String,
    /// The recipe's engine, `None` for a site environment.
    pub engine: Option<String>,
    pub version: String,
    pub variant: String,
    pub arch: String,
    pub python: String,
    pub requirements: Vec<String>,
    pub wheel: Option<Wheel>,
    pub explicit: Option<ExplicitIndex>,
    /// OS packages by family, as the table says.
    pub os_packages: std::collections::BTreeMap<String, Vec<String>>,
    pub free_gb: Option<u32>,
    pub note: String,
    /// The manylinux tag it is resolved for (`2_31`): `--manylinux`, else
    /// the recipe's figure for the engine version, else [`SITE_MANYLINUX`].
    pub manylinux: String,
    /// Whether `manylinux` is the default rather than `--manylinux`: then
    /// a refusal's hint names the flag to pass.
    pub manylinux_given: bool,
    /// `--override`: requirements laid over every upstream pin.
    pub overrides: Vec<String>,
    /// A site's own lock: the files are the ones it names, no resolver
    /// runs.
    pub site_lock: Option<std::path::PathBuf>,
    /// `--constraint`: bounds on versions the resolver may pick.
    pub constraints: Vec<String>,
}

/// The flags every environment of a run shares.
#[derive(Debug, Clone, Default)]
pub struct EnvFlags<'a> {
    /// `--index NAME=URL`.
    pub indexes: &'a [(String, String)],
    /// `--manylinux`, when given.
    pub manylinux: Option<&'a str>,
    /// `--python`, for site environments.
    pub site_python: Option<&'a str>,
}

/// The short name of an index the recipe names, for `--index NAME=URL`:
/// `pytorch-cu129` for `https://download.pytorch.org/whl/cu129`.
pub fn index_name(url: &str) -> String {
    let u = reqwest::Url::parse(url).ok();
    let host = u
        .as_ref()
        .and_then(|u| u.host_str().map(str::to_string))
        .unwrap_or_default();
    let labels: Vec<&str> = host.split('.').collect();
    let site = if labels.len() >= 2 {
        labels[labels.len() - 2]
    } else {
        host.as_str()
    };
    let last = url
        .trim_end_matches('/')
        .rsplit('/')
        .next()
        .unwrap_or_default();
    format!("{site}-{last}")
}

/// An engine as asked for: name, version, and the one variant chosen.
pub type EngineAsk = (String, String, Option<String>);

/// Every environment of the engines and site environments, per arch.
/// `flags.indexes` are `--index NAME=URL`; one naming no index of these
/// environments is refused.
pub fn requests(
    engines: &[EngineAsk],
    sites: &[SiteEnv],
    arches: &[String],
    flags: &EnvFlags<'_>,
) -> Result<Vec<EnvRequest>, CreateError> {
    let overrides = flags.indexes;
    let mut out = Vec::new();
    let mut used = vec![false; overrides.len()];
    let manylinux = |table: &str| {
        flags
            .manylinux
            .or((!table.is_empty()).then_some(table))
            .unwrap_or(SITE_MANYLINUX)
            .to_string()
    };
    for (engine, version, variant) in engines {
        for arch in arches {
            let envs = recipe::environments_of(engine, version, variant.as_deref(), arch).map_err(
                |e| CreateError::Recipe {
                    engine: engine.clone(),
                    version: version.clone(),
                    error: Box::new(e),
                },
            )?;
            for e in envs {
                let b = e.build;
                let explicit = (!b.extra_index.is_empty()).then(|| {
                    let name = index_name(&b.extra_index);
                    let mut url = b.extra_index.clone();
                    for (i, (n, u)) in overrides.iter().enumerate() {
                        if *n == name || *n == b.extra_index {
                            url = u.clone();
                            used[i] = true;
                        }
                    }
                    ExplicitIndex {
                        name,
                        url,
                        packages: b.index_packages.clone(),
                    }
                });
                out.push(EnvRequest {
                    name: e.name,
                    engine: Some(e.engine),
                    version: e.version,
                    variant: e.variant,
                    arch: e.arch,
                    python: b.python,
                    requirements: b.requirements,
                    wheel: b.wheel,
                    explicit,
                    os_packages: b.packages,
                    free_gb: (b.free_gb > 0).then_some(b.free_gb),
                    note: b.note,
                    manylinux: manylinux(&e.manylinux),
                    manylinux_given: flags.manylinux.is_some(),
                    overrides: Vec::new(),
                    site_lock: None,
                    constraints: Vec::new(),
                });
            }
        }
    }
    out.extend(site_requests(sites, arches, flags, &manylinux));
    for (i, n) in out.iter().enumerate() {
        if out[..i].iter().any(|o| o.name == n.name) {
            return Err(match &n.engine {
                Some(engine) => RequestError::EngineEnvTwice {
                    env: n.name.clone(),
                    engine: engine.to_string(),
                    version: n.version.clone(),
                },
                None => RequestError::SiteEnvTwice {
                    env: n.name.clone(),
                },
            }
            .into());
        }
    }
    if let Some(i) = used.iter().position(|u| !u) {
        let known: Vec<String> = out
            .iter()
            .filter_map(|e| e.explicit.as_ref().map(|x| x.name.clone()))
            .collect::<std::collections::BTreeSet<_>>()
            .into_iter()
            .collect();
        return Err(RequestError::IndexUnused {
            name: overrides[i].0.clone(),
            used: known,
        }
        .into());
    }
    Ok(out)
}

/// Each site environment (`--python-env`) per arch: `--python`'s CPython
/// (else 3.12), and, when it installs a recipe engine, that engine's OS
/// packages.
fn site_requests(
    sites: &[SiteEnv],
    arches: &[String],
    flags: &EnvFlags<'_>,
    manylinux: &dyn Fn(&str) -> String,
) -> Vec<EnvRequest> {
    let mut out = Vec::new();
    for s in sites {
        // A site environment that installs vLLM or SGLang runs it as the
        // recipe's does, and its nodes need the same OS packages.
        let mut os_packages = std::collections::BTreeMap::new();
        for r in &s.requirements {
            for (family, names) in recipe::engine_os_packages(requirement_name(r))
                .into_iter()
                .flatten()
            {
                os_packages.insert(family, names);
            }
        }
        for arch in arches {
            out.push(EnvRequest {
                name: format!("{}-{arch}", s.name),
                engine: None,
                version: String::new(),
                variant: String::new(),
                arch: arch.clone(),
                python: flags.site_python.unwrap_or(SITE_PYTHON).to_string(),
                requirements: s.requirements.clone(),
                wheel: None,
                explicit: None,
                os_packages: os_packages.clone(),
                free_gb: None,
                note: String::new(),
                manylinux: manylinux(""),
                manylinux_given: flags.manylinux.is_some(),
                overrides: Vec::new(),
                site_lock: s.lock.clone(),
                constraints: Vec::new(),
            });
        }
    }
    out
}

/// The distribution name a PEP 508 requirement starts with:
/// `vllm` of `vllm[audio]==0.33.0 ; python_version>="3.10"`.
fn requirement_name(req: &str) -> &str {
    let end = req
        .find(|c: char| !(c.is_ascii_alphanumeric() || "-_.".contains(c)))
        .unwrap_or(req.len());
    &req[..end]
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::spec::python::parse_site_env;

    #[test]
    fn index_names_are_short() {
        assert_eq!(
            index_name("https://download.pytorch.org/whl/cu129"),
            "pytorch-cu129"
        );
        assert_eq!(index_name("http://127.0.0.1:9/whl/cu129/"), "0-cu129");
    }

    #[test]
    fn vllm_and_a_site_env_per_arch_with_the_index_overridden() {
        let engines = vec![("vllm".to_string(), "0.20.1".to_string(), None)];
        let sites = vec![parse_site_env("tools=iniconfig").unwrap()];
        let arches = vec!["amd64".to_string(), "arm64".to_string()];
        let over = vec![(
            "pytorch-cu129".to_string(),
            "http://127.0.0.1:9/cu129".to_string(),
        )];
        let flags = |indexes| EnvFlags {
            indexes,
            ..EnvFlags::default()
        };
        let rs = requests(&engines, &sites, &arches, &flags(&over)).unwrap();
        let names: Vec<&str> = rs.iter().map(|r| r.name.as_str()).collect();
        assert_eq!(
            names,
            [
                "vllm-0.20.1-cu13-amd64",
                "vllm-0.20.1-cu129-amd64",
                "vllm-0.19.1-cu12-amd64",
                "vllm-0.20.1-cu13-arm64",
                "vllm-0.20.1-cu129-arm64",
                "tools-amd64",
                "tools-arm64"
            ]
        );
        let x = rs[1].explicit.as_ref().unwrap();
        assert_eq!(x.url, "http://127.0.0.1:9/cu129");
        assert_eq!(x.packages, ["torch", "torchvision", "torchaudio"]);
        assert!(rs[0].explicit.is_none());
        let nope = [("nope".to_string(), "http://x".to_string())];
        let e = requests(&engines, &[], &arches, &flags(&nope)).unwrap_err();
        assert_eq!(
            e.to_string(),
            "--index nope: no environment of this bundle uses an index of that name; they use \
             pytorch-cu129"
        );
        let e = requests(
            &[("llamacpp".into(), "b1".into(), None)],
            &[],
            &arches,
            &flags(&[]),
        )
        .unwrap_err();
        assert!(e.is_usage(), "{e}");
    }

    #[test]
    fn a_variant_picks_one_environment_and_site_envs_inherit_engine_packages() {
        let arches = vec!["amd64".to_string()];
        let cu13 = vec![(
            "vllm".to_string(),
            "0.20.1".to_string(),
            Some("cu13".to_string()),
        )];
        let sites = vec![parse_site_env("serve=vllm[audio]==0.20.1,click").unwrap()];
        let flags = EnvFlags {
            site_python: Some("3.11"),
            ..EnvFlags::default()
        };
        let rs = requests(&cu13, &sites, &arches, &flags).unwrap();
        let names: Vec<&str> = rs.iter().map(|r| r.name.as_str()).collect();
        assert_eq!(names, ["vllm-0.20.1-cu13-amd64", "serve-amd64"]);
        assert_eq!(rs[1].python, "3.11");
        assert_eq!(rs[1].os_packages, rs[0].os_packages);
        assert!(!rs[1].os_packages.is_empty());
        let plain = requests(&[], &[parse_site_env("t=click").unwrap()], &arches, &flags);
        assert!(plain.unwrap()[0].os_packages.is_empty());
        let v100 = vec![(
            "vllm".to_string(),
            "0.20.1".to_string(),
            Some("cu12".to_string()),
        )];
        let e = llmgw_shared::chain(&requests(&v100, &[], &arches, &flags).unwrap_err());
        assert!(
            e.contains("vllm 0.20.1 for amd64 has no build \"cu12\" here; it has cu13, cu129"),
            "{e}"
        );
        let twice = [cu13[0].clone(), ("vllm".into(), "0.20.1".into(), None)];
        let e = requests(&twice, &[], &arches, &flags)
            .unwrap_err()
            .to_string();
        assert!(e.contains("ask for it twice"), "{e}");
    }
}
