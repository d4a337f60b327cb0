//! What to put in a bundle: from command-line flags and, optionally, a TOML
//! spec file (`--spec FILE`) that a site keeps in version control.
//!
//! Flags override the file, key by key; a list given on the command line
//! (`--engine`, `--model`, `--dataset`, `--arch`, `--trust`) replaces the
//! file's list rather than adding to it, so what runs is always what one of
//! the two says. Relative paths in the file are relative to the file's own
//! folder, so a spec means the same wherever it is run from.
//!
//! ```toml
//! out = "site.tar.zst"
//! arch = ["amd64", "arm64"]
//! llmgw = "v0.5.0"
//! llmgw_repo = "llmgw/llmgw"
//! llmgw_api = "https://gitea.example.org/api/v1"
//! trust = ["llmgw-release.pub"]
//! engines = ["llamacpp=b6123", "uv=0.12.20"]
//! models = ["acme/tiny@main", "org/m:*.Q4_K_M.gguf,config.json"]
//! datasets = []
//! jobs = 4
//! zstd_level = 3
//! allow_missing = false
//! python_envs = ["tools=transformers,huggingface_hub[cli]"]
//! pypi = "https://pypi.org/simple"
//! indexes = ["pytorch-cu129=https://proxy.example/whl/cu129"]
//! uv = "/usr/local/bin/uv"
//! manylinux = "2_28"
//! github_raw = "https://raw.githubusercontent.com"
//! volume_size = "fat32"   # or dvd5, dvd9, bd25, bd50, or bytes: 4G, 700M
//! chunk_size = "1G"
//! parity = 1
//! ```

use std::path::{Path, PathBuf};

use llmgw_shared::manifest::RepoKind;
use llmgw_shared::names;
use serde::Deserialize;

use crate::error::CreateError;

/// The architectures the recipe table publishes Linux builds for.
pub const KNOWN_ARCHES: [&str; 2] = llmgw_shared::recipe::ARCHES;

pub const DEFAULT_GITHUB_API: &str = "https://api.github.com";
/// Where uv's `download-metadata.json` is read from, at uv's tag.
pub const DEFAULT_GITHUB_RAW: &str = "https://raw.githubusercontent.com";
pub const DEFAULT_HF_ENDPOINT: &str = "https://huggingface.co";
pub const DEFAULT_LLMGW_REPO: &str = "llmgw/llmgw";
pub const DEFAULT_JOBS: usize = 4;
/// More parallel downloads than this only make each one slower.
pub const MAX_JOBS: usize = 64;

/// The flags as given; `None` or empty means "not given".
#[derive(Debug, Default, Clone)]
pub struct SpecFlags {
    pub spec: Option<PathBuf>,
    pub out: Option<PathBuf>,
    /// Each may hold a comma-separated list.
    pub arch: Vec<String>,
    pub llmgw: Option<String>,
    pub llmgw_repo: Option<String>,
    pub llmgw_api: Option<String>,
    pub trust: Vec<PathBuf>,
    pub engines: Vec<String>,
    pub models: Vec<String>,
    pub datasets: Vec<String>,
    pub github_api: Option<String>,
    pub hf_endpoint: Option<String>,
    pub cache: Option<PathBuf>,
    pub jobs: Option<usize>,
    pub zstd_level: Option<i32>,
    pub allow_missing: bool,
    /// `--sign-key`, `--channel`, `--sequence`, `--expires` (flags only).
    pub series: crate::series::SeriesSpec,
    /// `--have`, `--base`, `--need` (flags only).
    pub delta: crate::delta::DeltaSpec,
    /// `NAME=REQ[,REQ…]`, each a site's own Python environment.
    pub python_envs: Vec<String>,
    pub pypi: Option<String>,
    /// `NAME=URL`, each overriding an index the recipe names.
    pub indexes: Vec<String>,
    pub uv: Option<PathBuf>,
    pub manylinux: Option<String>,
    pub github_raw: Option<String>,
    /// Plan, check and report everything, download nothing large, write
    /// no bundle.
    pub dry_run: bool,
    /// `--volume-size`, `--chunk-size`, `--parity`: write volumes.
    pub volume_size: Option<String>,
    pub chunk_size: Option<String>,
    pub parity: Option<u32>,
}

/// The environment the defaults come from, passed in so that tests and the
/// CLI say exactly what is read.
#[derive(Debug, Default, Clone)]
pub struct SpecEnv {
    /// `$HF_ENDPOINT`.
    pub hf_endpoint: Option<String>,
    /// `$XDG_CACHE_HOME`.
    pub xdg_cache_home: Option<PathBuf>,
    /// `$HOME`.
    pub home: Option<PathBuf>,
}

impl SpecEnv {
    /// Reads the process environment.
    pub fn from_process() -> Self {
        let nonempty = |k: &str| std::env::var_os(k).filter(|v| !v.is_empty());
        Self {
            hf_endpoint: nonempty("HF_ENDPOINT").and_then(|v| v.into_string().ok()),
            xdg_cache_home: nonempty("XDG_CACHE_HOME").map(PathBuf::from),
            home: nonempty("HOME").map(PathBuf::from),
        }
    }
}

/// The TOML spec file: the same keys as the flags, lists plural.
#[derive(Debug, Default, Deserialize)]
#[serde(deny_unknown_fields)]
struct SpecFile {
    out: Option<PathBuf>,
    arch: Option<Vec<String>>,
    llmgw: Option<String>,
    llmgw_repo: Option<String>,
    llmgw_api: Option<String>,
    trust: Option<Vec<PathBuf>>,
    engines: Option<Vec<String>>,
    models: Option<Vec<String>>,
    datasets: Option<Vec<String>>,
    github_api: Option<String>,
    hf_endpoint: Option<String>,
    cache: Option<PathBuf>,
    jobs: Option<usize>,
    zstd_level: Option<i32>,
    allow_missing: Option<bool>,
    python_envs: Option<Vec<String>>,
    pypi: Option<String>,
    indexes: Option<Vec<String>>,
    uv: Option<PathBuf>,
    manylinux: Option<String>,
    github_raw: Option<String>,
    volume_size: Option<String>,
    chunk_size: Option<String>,
    parity: Option<u32>,
}

/// llmgw's own release, and the keys its signature must verify with.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct LlmgwSpec {
    pub version: String,
    pub repo: String,
    pub api: String,
    pub trust: Vec<PathBuf>,
}

/// An engine of the recipe table at one version.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct EngineSpec {
    pub name: String,
    pub version: String,
}

/// A Hugging Face repository, a revision and the globs choosing its files.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct RepoSpec {
    pub kind: RepoKind,
    pub id: String,
    pub revision: String,
    /// Empty means every file.
    pub patterns: Vec<String>,
}

/// Everything one run of `bundle create` is to do, checked.
#[derive(Debug, Clone)]
pub struct CreateSpec {
    pub out: PathBuf,
    pub arches: Vec<String>,
    pub llmgw: Option<LlmgwSpec>,
    pub engines: Vec<EngineSpec>,
    pub repos: Vec<RepoSpec>,
    pub github_api: String,
    pub hf_endpoint: String,
    pub cache: PathBuf,
    /// Whether the cache was asked for (`--cache` or the spec's `cache`):
    /// then a `.tar` or `.tar.zst` run keeps every blob it downloads there
    /// too, at the cost of writing it twice; else only what costs nothing.
    pub keep_in_cache: bool,
    pub jobs: usize,
    /// The zstd level of a `.tar.zst`.
    pub zstd_level: i32,
    pub allow_missing: bool,
    pub series: crate::series::SeriesSpec,
    /// What the site holds or lacks: a delta or a repair bundle.
    pub delta: crate::delta::DeltaSpec,
    /// Site environments (`--python-env`).
    pub python_envs: Vec<crate::python::request::SiteEnv>,
    /// The simple API's base (`--pypi`).
    pub pypi: String,
    /// `--index NAME=URL`.
    pub indexes: Vec<(String, String)>,
    /// `--uv PATH`.
    pub uv: Option<PathBuf>,
    /// The manylinux tag environments are resolved for: `2_28`.
    pub manylinux: String,
    /// GitHub's raw file server (`--github-raw`), for uv's interpreter list.
    pub github_raw: String,
    pub dry_run: bool,
    /// `--volume-size`: volumes instead of one bundle.
    pub volumes: Option<crate::volumes::VolumeSpec>,
}

/// The manylinux tag environments are resolved for unless told otherwise:
/// glibc 2.28 (RHEL 8, Debian 10, Ubuntu 18.10) and newer.
pub const DEFAULT_MANYLINUX: &str = "2_28";

fn usage(msg: impl Into<String>) -> CreateError {
    CreateError::Usage(msg.into())
}

impl CreateSpec {
    /// Merges the flags over the spec file (when one is given) over the
    /// defaults, and checks every value.
    pub fn resolve(flags: SpecFlags, env: &SpecEnv) -> Result<Self, CreateError> {
        let (file, base) = match &flags.spec {
            Some(path) => {
                let text = std::fs::read_to_string(path).map_err(|e| CreateError::io(path, e))?;
                let file: SpecFile = toml::from_str(&text)
                    .map_err(|e| usage(format!("spec file {}: {e}", path.display())))?;
                let base = path.parent().map(Path::to_path_buf).unwrap_or_default();
                (file, base)
            }
            None => (SpecFile::default(), PathBuf::new()),
        };
        let rel = |p: PathBuf| if p.is_absolute() { p } else { base.join(p) };
        let list = |flag: Vec<String>, file: Option<Vec<String>>| {
            if flag.is_empty() {
                file.unwrap_or_default()
            } else {
                flag
            }
        };

        let out = flags
            .out
            .or(file.out.map(rel))
            .ok_or_else(|| usage("--out PATH is required (or `out` in the spec file)"))?;
        if out.file_name().is_none() {
            return Err(usage(format!(
                "--out {}: expected a file or folder name to create",
                out.display()
            )));
        }

        let mut arches: Vec<String> = Vec::new();
        for a in list(flags.arch, file.arch) {
            for a in a.split(',').map(str::trim).filter(|a| !a.is_empty()) {
                if let Some(problem) = llmgw_shared::recipe::arch_problem(a) {
                    return Err(usage(format!("--arch {a}: {problem}")));
                }
                if !arches.iter().any(|x| x == a) {
                    arches.push(a.to_string());
                }
            }
        }
        if arches.is_empty() {
            return Err(usage(
                "--arch is required: the node architectures to carry builds for (amd64, arm64)",
            ));
        }
        arches.sort();

        let github_api = url_flag(
            "--github-api",
            flags
                .github_api
                .or(file.github_api)
                .unwrap_or_else(|| DEFAULT_GITHUB_API.to_string()),
        )?;
        let hf_endpoint = url_flag(
            "--hf-endpoint",
            flags
                .hf_endpoint
                .or(file.hf_endpoint)
                .or(env.hf_endpoint.clone())
                .unwrap_or_else(|| DEFAULT_HF_ENDPOINT.to_string()),
        )?;

        let trust: Vec<PathBuf> = if flags.trust.is_empty() {
            file.trust
                .unwrap_or_default()
                .into_iter()
                .map(rel)
                .collect()
        } else {
            flags.trust
        };
        let llmgw = match flags.llmgw.or(file.llmgw) {
            None => None,
            Some(version) => {
                if !llmgw_shared::recipe::valid_version(&version) {
                    return Err(usage(format!(
                        "--llmgw {version:?}: not a release version such as v0.5.0"
                    )));
                }
                let repo = flags
                    .llmgw_repo
                    .or(file.llmgw_repo)
                    .unwrap_or_else(|| DEFAULT_LLMGW_REPO.to_string());
                names::check_repo_id("--llmgw-repo", &repo).map_err(|e| usage(e.to_string()))?;
                let api = match flags.llmgw_api.or(file.llmgw_api) {
                    Some(u) => url_flag("--llmgw-api", u)?,
                    None => github_api.clone(),
                };
                if trust.is_empty() {
                    return Err(usage(
                        "--llmgw needs --trust KEY.pub: llmgw's release is only carried when its \
                         SHA256SUMS signature verifies with a key you trust",
                    ));
                }
                Some(LlmgwSpec {
                    version,
                    repo,
                    api,
                    trust,
                })
            }
        };

        let mut engines: Vec<EngineSpec> = Vec::new();
        for e in list(flags.engines, file.engines) {
            let e = parse_engine(&e)?;
            if !engines.contains(&e) {
                engines.push(e);
            }
        }
        let mut repos = Vec::new();
        for m in list(flags.models, file.models) {
            repos.push(parse_repo(RepoKind::Model, &m)?);
        }
        for d in list(flags.datasets, file.datasets) {
            repos.push(parse_repo(RepoKind::Dataset, &d)?);
        }
        for (i, r) in repos.iter().enumerate() {
            if repos[..i]
                .iter()
                .any(|o| o.kind == r.kind && o.id == r.id && o.revision == r.revision)
            {
                return Err(usage(format!(
                    "{} {}@{} is asked for twice; give it once with all its globs",
                    flag_of(r.kind),
                    r.id,
                    r.revision
                )));
            }
        }

        let python_envs = list(flags.python_envs, file.python_envs)
            .iter()
            .map(|t| crate::python::request::parse_site_env(t))
            .collect::<Result<Vec<_>, _>>()?;
        let pypi = url_flag(
            "--pypi",
            flags
                .pypi
                .or(file.pypi)
                .unwrap_or_else(|| crate::python::request::DEFAULT_PYPI.to_string()),
        )?;
        let mut indexes = Vec::new();
        for i in list(flags.indexes, file.indexes) {
            let (name, url) = i
                .split_once('=')
                .filter(|(n, _)| !n.trim().is_empty())
                .ok_or_else(|| {
                    usage(format!(
                        "--index {i:?}: expected NAME=URL, e.g.                          pytorch-cu129=https://proxy.example/whl/cu129"
                    ))
                })?;
            indexes.push((
                name.trim().to_string(),
                url_flag("--index", url.to_string())?,
            ));
        }
        let github_raw = url_flag(
            "--github-raw",
            flags
                .github_raw
                .or(file.github_raw)
                .unwrap_or_else(|| DEFAULT_GITHUB_RAW.to_string()),
        )?;
        let manylinux = flags
            .manylinux
            .or(file.manylinux)
            .unwrap_or_else(|| DEFAULT_MANYLINUX.to_string());
        let tag_ok = manylinux.split_once('_').is_some_and(|(a, b)| {
            a == "2" && !b.is_empty() && b.len() <= 3 && b.bytes().all(|c| c.is_ascii_digit())
        });
        if !tag_ok {
            return Err(usage(format!(
                "--manylinux {manylinux:?}: expected a manylinux glibc tag such as 2_28 or 2_34"
            )));
        }

        if llmgw.is_none() && engines.is_empty() && repos.is_empty() && python_envs.is_empty() {
            return Err(usage(
                "nothing to bundle: give --llmgw, --engine, --model, --dataset or --python-env",
            ));
        }

        let asked = flags.cache.or(file.cache.map(rel));
        let keep_in_cache = asked.is_some();
        let cache = match asked {
            Some(c) => c,
            None => default_cache(env)?,
        };
        let zstd_level = flags
            .zstd_level
            .or(file.zstd_level)
            .unwrap_or(crate::writer::zst::DEFAULT_LEVEL);
        if !crate::writer::zst::LEVELS.contains(&zstd_level) {
            return Err(usage(format!(
                "--zstd-level {zstd_level}: expected {} to {}",
                crate::writer::zst::LEVELS.start(),
                crate::writer::zst::LEVELS.end()
            )));
        }
        let volumes = crate::volumes::VolumeSpec::parse(
            flags.volume_size.or(file.volume_size).as_deref(),
            flags.chunk_size.or(file.chunk_size).as_deref(),
            flags.parity.or(file.parity),
        )?;
        if volumes.is_some() {
            crate::volumes::check_out(&out)?;
        }
        let jobs = flags.jobs.or(file.jobs).unwrap_or(DEFAULT_JOBS);
        if jobs == 0 || jobs > MAX_JOBS {
            return Err(usage(format!(
                "--jobs {jobs}: expected 1 to {MAX_JOBS} parallel downloads"
            )));
        }
        Ok(Self {
            out,
            arches,
            llmgw,
            engines,
            repos,
            github_api,
            hf_endpoint,
            cache,
            keep_in_cache,
            jobs,
            zstd_level,
            allow_missing: flags.allow_missing || file.allow_missing.unwrap_or(false),
            series: flags.series,
            delta: flags.delta,
            python_envs,
            pypi,
            indexes,
            uv: flags.uv.or(file.uv.map(rel)),
            manylinux,
            github_raw,
            dry_run: flags.dry_run,
            volumes,
        })
    }
}

fn flag_of(kind: RepoKind) -> &'static str {
    match kind {
        RepoKind::Model => "--model",
        RepoKind::Dataset => "--dataset",
    }
}

/// `$XDG_CACHE_HOME/llmgw`, else `~/.cache/llmgw`.
fn default_cache(env: &SpecEnv) -> Result<PathBuf, CreateError> {
    if let Some(x) = &env.xdg_cache_home {
        return Ok(x.join("llmgw"));
    }
    if let Some(h) = &env.home {
        return Ok(h.join(".cache").join("llmgw"));
    }
    Err(usage(
        "no cache folder: set --cache DIR (neither XDG_CACHE_HOME nor HOME is set)",
    ))
}

/// A base URL: http or https, without a trailing slash.
fn url_flag(flag: &str, value: String) -> Result<String, CreateError> {
    let v = value.trim().trim_end_matches('/').to_string();
    match reqwest::Url::parse(&v) {
        Ok(u) if matches!(u.scheme(), "http" | "https") && u.host().is_some() => Ok(v),
        _ => Err(usage(format!(
            "{flag} {value:?}: expected an http:// or https:// URL"
        ))),
    }
}

/// `NAME=VERSION`, e.g. `llamacpp=b6123`. The recipe table checks the name
/// and the version later, with its own words.
pub fn parse_engine(text: &str) -> Result<EngineSpec, CreateError> {
    match text.split_once('=') {
        Some((name, version)) if !name.trim().is_empty() && !version.trim().is_empty() => {
            Ok(EngineSpec {
                name: name.trim().to_string(),
                version: version.trim().to_string(),
            })
        }
        _ => Err(usage(format!(
            "--engine {text:?}: expected NAME=VERSION, e.g. llamacpp=b6123 or uv=0.12.20"
        ))),
    }
}

/// `REPO[@REVISION][:GLOB,...]`, e.g. `acme/tiny@main` or
/// `org/m:*.Q4_K_M.gguf,config.json`. The revision defaults to `main`.
pub fn parse_repo(kind: RepoKind, text: &str) -> Result<RepoSpec, CreateError> {
    let flag = flag_of(kind);
    let bad = |why: String| {
        usage(format!(
            "{flag} {text:?}: {why}; expected REPO[@REVISION][:GLOB,...], e.g. acme/tiny@main \
             or org/m:*.Q4_K_M.gguf,config.json"
        ))
    };
    let (left, globs) = match text.split_once(':') {
        Some((l, g)) => (l, Some(g)),
        None => (text, None),
    };
    let (id, revision) = match left.split_once('@') {
        Some((id, rev)) => (id, rev),
        None => (left, "main"),
    };
    names::check_repo_id("repository id", id).map_err(|e| bad(e.to_string()))?;
    names::check_ref_name("revision", revision).map_err(|e| bad(e.to_string()))?;
    let mut patterns = Vec::new();
    if let Some(globs) = globs {
        for g in globs.split(',') {
            let g = g.trim();
            if g.is_empty() {
                return Err(bad("an empty glob".into()));
            }
            globset::Glob::new(g).map_err(|e| bad(format!("glob {g:?}: {e}")))?;
            patterns.push(g.to_string());
        }
        if patterns.is_empty() {
            return Err(bad("no glob after ':'".into()));
        }
    }
    Ok(RepoSpec {
        kind,
        id: id.to_string(),
        revision: revision.to_string(),
        patterns,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn env() -> SpecEnv {
        SpecEnv {
            hf_endpoint: None,
            xdg_cache_home: None,
            home: Some("/home/op".into()),
        }
    }

    fn flags() -> SpecFlags {
        SpecFlags {
            out: Some("b.tar".into()),
            arch: vec!["arm64,amd64".into()],
            engines: vec!["llamacpp=b6123".into()],
            ..Default::default()
        }
    }

    #[test]
    fn model_syntax() {
        let r = parse_repo(RepoKind::Model, "acme/tiny").unwrap();
        assert_eq!((r.id.as_str(), r.revision.as_str()), ("acme/tiny", "main"));
        assert!(r.patterns.is_empty());
        let r = parse_repo(RepoKind::Model, "org/m@v1.0:*.Q4_K_M.gguf,config.json").unwrap();
        assert_eq!(r.revision, "v1.0");
        assert_eq!(r.patterns, vec!["*.Q4_K_M.gguf", "config.json"]);
        let r = parse_repo(RepoKind::Dataset, "acme/data@refs/pr/1").unwrap();
        assert_eq!(r.revision, "refs/pr/1");
        for (bad, why) in [
            ("acme", "owner/name"),
            ("acme/tiny@", "empty"),
            ("acme/tiny:", "empty glob"),
            ("acme/tiny:a,,b", "empty glob"),
            ("acme/tiny@../x", "'..'"),
            ("acme/tiny:[", "glob"),
            ("a/b/c", "owner/name"),
        ] {
            let err = parse_repo(RepoKind::Model, bad).unwrap_err().to_string();
            assert!(err.contains(why), "{bad}: {err}");
            assert!(err.starts_with("--model "), "{err}");
            assert!(err.contains("REPO[@REVISION][:GLOB,...]"), "{err}");
        }
        let err = parse_repo(RepoKind::Dataset, "x").unwrap_err().to_string();
        assert!(err.starts_with("--dataset "), "{err}");
    }

    #[test]
    fn engine_syntax() {
        let e = parse_engine("uv=0.12.20").unwrap();
        assert_eq!((e.name.as_str(), e.version.as_str()), ("uv", "0.12.20"));
        for bad in ["uv", "=1", "uv=", ""] {
            let err = parse_engine(bad).unwrap_err();
            assert!(err.to_string().contains("NAME=VERSION"), "{err}");
            assert!(err.is_usage());
        }
    }

    #[test]
    fn defaults() {
        let s = CreateSpec::resolve(flags(), &env()).unwrap();
        assert_eq!(s.arches, vec!["amd64", "arm64"]);
        assert_eq!(s.cache, PathBuf::from("/home/op/.cache/llmgw"));
        assert_eq!(s.jobs, 4);
        assert_eq!(s.zstd_level, 3);
        assert!(!s.keep_in_cache);
        assert_eq!(s.github_api, DEFAULT_GITHUB_API);
        assert_eq!(s.hf_endpoint, DEFAULT_HF_ENDPOINT);
        let mut e = env();
        e.hf_endpoint = Some("http://127.0.0.1:9/".into());
        e.xdg_cache_home = Some("/xdg".into());
        let s = CreateSpec::resolve(flags(), &e).unwrap();
        assert_eq!(s.hf_endpoint, "http://127.0.0.1:9");
        assert_eq!(s.cache, PathBuf::from("/xdg/llmgw"));
    }

    #[test]
    fn usage_errors() {
        let cases: Vec<(SpecFlags, &str)> = vec![
            (
                SpecFlags {
                    out: None,
                    ..flags()
                },
                "--out PATH is required",
            ),
            (
                SpecFlags {
                    arch: vec!["riscv64".into()],
                    ..flags()
                },
                "--arch riscv64",
            ),
            (
                SpecFlags {
                    arch: vec![],
                    ..flags()
                },
                "--arch is required",
            ),
            (
                SpecFlags {
                    engines: vec![],
                    ..flags()
                },
                "nothing to bundle",
            ),
            (
                SpecFlags {
                    jobs: Some(0),
                    ..flags()
                },
                "--jobs 0",
            ),
            (
                SpecFlags {
                    zstd_level: Some(20),
                    ..flags()
                },
                "--zstd-level 20: expected 1 to 19",
            ),
            (
                SpecFlags {
                    llmgw: Some("v0.5.0".into()),
                    ..flags()
                },
                "--llmgw needs --trust",
            ),
            (
                SpecFlags {
                    github_api: Some("ftp://x".into()),
                    ..flags()
                },
                "--github-api",
            ),
            (
                SpecFlags {
                    models: vec!["a/b".into(), "a/b:x".into()],
                    ..flags()
                },
                "asked for twice",
            ),
        ];
        for (f, want) in cases {
            let err = CreateSpec::resolve(f, &env()).unwrap_err();
            assert!(err.is_usage());
            assert!(err.to_string().contains(want), "{want}: {err}");
        }
    }

    #[test]
    fn spec_file_and_flags_override() {
        let dir = tempfile::tempdir().unwrap();
        let spec = dir.path().join("site.toml");
        std::fs::write(
            &spec,
            r#"
out = "site.tar.zst"
arch = ["amd64"]
llmgw = "v0.5.0"
llmgw_api = "http://127.0.0.1:1/api/v1"
trust = ["keys/llmgw.pub"]
engines = ["llamacpp=b6123", "uv=0.12.20"]
models = ["acme/tiny@main"]
datasets = ["acme/data:*.csv"]
jobs = 2
zstd_level = 9
cache = "c"
allow_missing = true
"#,
        )
        .unwrap();
        let f = SpecFlags {
            spec: Some(spec.clone()),
            ..Default::default()
        };
        let s = CreateSpec::resolve(f, &env()).unwrap();
        assert_eq!(s.out, dir.path().join("site.tar.zst"));
        let l = s.llmgw.unwrap();
        assert_eq!(l.trust, vec![dir.path().join("keys/llmgw.pub")]);
        assert_eq!(l.repo, DEFAULT_LLMGW_REPO);
        assert_eq!(l.api, "http://127.0.0.1:1/api/v1");
        assert_eq!(s.engines.len(), 2);
        assert_eq!(s.repos.len(), 2);
        assert_eq!(s.repos[1].kind, RepoKind::Dataset);
        assert_eq!(s.jobs, 2);
        assert_eq!(s.zstd_level, 9);
        assert_eq!(s.cache, dir.path().join("c"));
        assert!(s.keep_in_cache);
        assert!(s.allow_missing);

        let f = SpecFlags {
            spec: Some(spec.clone()),
            out: Some("other".into()),
            engines: vec!["uv=0.12.21".into()],
            jobs: Some(8),
            ..Default::default()
        };
        let s = CreateSpec::resolve(f, &env()).unwrap();
        assert_eq!(s.out, PathBuf::from("other"));
        assert_eq!(
            s.engines,
            vec![EngineSpec {
                name: "uv".into(),
                version: "0.12.21".into()
            }]
        );
        assert_eq!(s.jobs, 8);

        std::fs::write(&spec, "outt = 1\n").unwrap();
        let f = SpecFlags {
            spec: Some(spec),
            ..Default::default()
        };
        let err = CreateSpec::resolve(f, &env()).unwrap_err();
        assert!(err.is_usage());
        assert!(err.to_string().contains("unknown field"), "{err}");
    }
}
