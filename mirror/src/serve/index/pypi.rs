//! The Python part of the index: each held environment as its own package
//! index, and the interpreters held, as lookup tables built from the
//! manifests.
//!
//! Invariant: an environment is served exactly as one manifest lists it —
//! never merged with another environment or with another bundle's
//! environment of the same name (the later import replaces it whole, where
//! [`Authority::moves`] lets it), so a CUDA 13 node is never offered a
//! `+cu129` file. Project and file names
//! from a URL are only ever keys into these tables.

use std::collections::BTreeMap;

use llmgw_shared::manifest::{AssetRef, PYTHON_ENGINE, Yanked};
use llmgw_shared::{Sha256, pep503_normalize};

use crate::serve::index::entries::{Blob, natural_cmp};
use crate::store::series::follow::Authority;

/// Every environment and interpreter held.
#[derive(Debug, Clone, Default)]
pub struct PypiIndex {
    /// By the environment's name, ASCII lower case.
    envs: BTreeMap<String, PyEnv>,
    /// By uv's key (`cpython-3.12.12-linux-x86_64-gnu`).
    pub interpreters: BTreeMap<String, Interpreter>,
}

/// One environment, ready to answer its index.
#[derive(Debug, Clone)]
pub struct PyEnv {
    pub name: String,
    /// The bundle (manifest sha256) it is served from.
    pub bundle: String,
    pub engine: Option<String>,
    pub version: Option<String>,
    pub variant: Option<String>,
    pub arch: String,
    pub python: String,
    pub platform: String,
    pub os_packages: Vec<String>,
    /// Made with `--override`: installed from its lock only.
    pub overrides: bool,
    pub free_gb: Option<u32>,
    pub note: Option<String>,
    pub lock: Blob,
    pub interpreter: Option<AssetRef>,
    /// `none`: the bundle carries no interpreter by choice; the nodes bring
    /// their own CPython `python`.
    pub node_interpreter: Option<llmgw_shared::manifest::NodeInterpreter>,
    /// A site's own lock (`lock` is then that file): its format, and the
    /// project's `pyproject.toml` served beside a `uv.lock`.
    pub site_lock: Option<SiteLockServed>,
    /// Every file, by file name.
    pub files: BTreeMap<String, PyFile>,
    /// Normalized project name -> its file names, sorted.
    pub projects: BTreeMap<String, Vec<String>>,
    /// Bytes of the wheels and their metadata files.
    pub bytes: u64,
}

/// What the mirror serves of a site's own lock.
#[derive(Debug, Clone)]
pub struct SiteLockServed {
    pub format: llmgw_shared::manifest::SiteLockFormat,
    pub project: Option<Blob>,
}

/// One distribution file of an environment.
#[derive(Debug, Clone)]
pub struct PyFile {
    pub filename: String,
    pub project: String,
    pub version: String,
    pub blob: Blob,
    pub requires_python: Option<String>,
    pub yanked: Option<Yanked>,
    pub upload_time: Option<String>,
    /// The PEP 658 `.metadata` file.
    pub metadata: Option<Blob>,
}

/// A python-build-standalone archive held, as uv's download list needs it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Interpreter {
    /// `3.12.12`, a pre-release suffix included (`3.14.0rc1`).
    pub version: String,
    pub major: u8,
    pub minor: u8,
    pub patch: u8,
    pub prerelease: String,
    /// `x86_64` or `aarch64`.
    pub family: String,
    /// `v2`, `v3`, `v4` for x86_64 micro-architectures.
    pub arch_variant: Option<String>,
    /// `gnu` or `musl`.
    pub libc: String,
    /// The release tag, python-build-standalone's build date (`20251014`).
    pub build: String,
    pub repo: String,
    pub tag: String,
    pub name: String,
    pub sha256: Sha256,
    /// `install_only_stripped` is preferred over `install_only`.
    pub stripped: bool,
}

impl Interpreter {
    /// The key uv's `download-metadata.json` files it under.
    pub fn key(&self) -> String {
        let arch = match &self.arch_variant {
            Some(v) => format!("{}_{v}", self.family),
            None => self.family.clone(),
        };
        format!("cpython-{}-linux-{arch}-{}", self.version, self.libc)
    }
}

impl PypiIndex {
    /// Builds the tables from the manifests in the order they count
    /// (oldest import first): a later bundle's environment of the same name
    /// replaces the earlier one whole where `authority` lets it move the
    /// name; for an interpreter key held twice, the newer build wins.
    pub fn build<'a>(
        bundles: impl IntoIterator<Item = &'a crate::store::Held>,
        authority: &Authority,
    ) -> Self {
        let mut out = PypiIndex::default();
        for crate::store::Held { id, manifest: m } in bundles {
            for env in &m.python_envs {
                let name = env.name.to_ascii_lowercase();
                let holder = out.envs.get(&name).map(|e| e.bundle.as_str());
                if authority.moves(holder, id) {
                    out.envs.insert(name, py_env(id, env));
                }
            }
            for r in m.releases.iter().filter(|r| r.engine == PYTHON_ENGINE) {
                for a in &r.assets {
                    let held = Held {
                        repo: r.repo.to_string(),
                        tag: r.tag.clone(),
                        sha256: a.sha256.clone(),
                    };
                    let Some(i) = parse_standalone_name(&a.name, held) else {
                        continue;
                    };
                    let key = i.key();
                    let better = match out.interpreters.get(&key) {
                        None => true,
                        Some(old) => {
                            (natural_cmp(&i.build, &old.build), i.stripped)
                                >= (std::cmp::Ordering::Equal, old.stripped)
                        }
                    };
                    if better {
                        out.interpreters.insert(key, i);
                    }
                }
            }
        }
        out
    }

    /// An environment by name (any ASCII case).
    pub fn env(&self, name: &str) -> Option<&PyEnv> {
        self.envs.get(&name.to_ascii_lowercase())
    }

    /// Every environment, by name.
    pub fn envs(&self) -> impl Iterator<Item = &PyEnv> {
        self.envs.values()
    }
}

impl PyEnv {
    /// The files of a project, by its normalized name.
    pub fn project_files(&self, normalized: &str) -> Option<Vec<&PyFile>> {
        self.projects
            .get(normalized)
            .map(|names| names.iter().filter_map(|n| self.files.get(n)).collect())
    }
}

fn py_env(bundle: &str, env: &llmgw_shared::manifest::PythonEnv) -> PyEnv {
    let mut files = BTreeMap::new();
    let mut projects: BTreeMap<String, Vec<String>> = BTreeMap::new();
    let mut bytes = 0;
    for f in &env.files {
        let metadata = f.metadata.as_ref().map(|m| Blob {
            sha256: m.sha256.clone(),
            size: m.size,
        });
        bytes += f.size + metadata.as_ref().map_or(0, |m| m.size);
        // The manifest says the name is normalized; normalizing again
        // costs nothing and keeps a lookup from ever missing.
        let project = pep503_normalize(&f.project);
        projects
            .entry(project.clone())
            .or_default()
            .push(f.filename.clone());
        files.insert(
            f.filename.clone(),
            PyFile {
                filename: f.filename.clone(),
                project,
                version: f.version.clone(),
                blob: Blob {
                    sha256: f.sha256.clone(),
                    size: f.size,
                },
                requires_python: f.requires_python.clone(),
                yanked: f.yanked.clone(),
                upload_time: f.upload_time.clone(),
                metadata,
            },
        );
    }
    for names in projects.values_mut() {
        names.sort();
    }
    PyEnv {
        name: env.name.clone(),
        bundle: bundle.to_string(),
        engine: env.engine.clone(),
        version: env.version.clone(),
        variant: env.variant.clone(),
        arch: env.arch.clone(),
        python: env.python.clone(),
        platform: env.platform.clone(),
        os_packages: env.os_packages.clone(),
        overrides: !env.overrides.is_empty(),
        free_gb: env.free_gb,
        note: env.note.clone(),
        lock: Blob {
            sha256: env.lock.sha256.clone(),
            size: env.lock.size,
        },
        interpreter: env.interpreter.clone(),
        node_interpreter: env.node_interpreter,
        site_lock: env.site_lock.as_ref().map(|s| SiteLockServed {
            format: s.format,
            project: s.project.as_ref().map(|p| Blob {
                sha256: p.sha256.clone(),
                size: p.size,
            }),
        }),
        files,
        projects,
        bytes,
    }
}

/// Reads a python-build-standalone archive name,
/// `cpython-3.12.12+20251014-x86_64-unknown-linux-gnu-install_only_stripped.tar.gz`.
/// Only the Linux `install_only` archives uv installs from are taken; the
/// build date is left for the caller (it is the release tag).
pub fn parse_standalone_name(name: &str, held: Held) -> Option<Interpreter> {
    let rest = name.strip_prefix("cpython-")?;
    let (rest, stripped) = if let Some(r) = rest.strip_suffix("-install_only_stripped.tar.gz") {
        (r, true)
    } else {
        (rest.strip_suffix("-install_only.tar.gz")?, false)
    };
    // `3.12.12+20251014`, then the target triple.
    let (version_build, triple) = rest.split_once('-')?;
    let (version, _build) = version_build.split_once('+')?;
    let (arch, libc) = triple
        .strip_suffix("-unknown-linux-gnu")
        .map(|a| (a, "gnu"))
        .or_else(|| {
            triple
                .strip_suffix("-unknown-linux-musl")
                .map(|a| (a, "musl"))
        })?;
    let (family, arch_variant) = match arch {
        "x86_64" | "aarch64" => (arch, None),
        _ => match arch.strip_prefix("x86_64_")? {
            v @ ("v2" | "v3" | "v4") => ("x86_64", Some(v.to_string())),
            _ => return None,
        },
    };
    let mut parts = version.splitn(3, '.');
    let major = parts.next()?.parse().ok()?;
    let minor = parts.next()?.parse().ok()?;
    let tail = parts.next()?;
    let digits = tail.bytes().take_while(u8::is_ascii_digit).count();
    let patch = tail[..digits].parse().ok()?;
    let prerelease = tail[digits..].to_string();
    if !prerelease.is_empty() && !prerelease.bytes().all(|b| b.is_ascii_alphanumeric()) {
        return None;
    }
    Some(Interpreter {
        version: version.to_string(),
        major,
        minor,
        patch,
        prerelease,
        family: family.to_string(),
        arch_variant,
        libc: libc.to_string(),
        build: held.tag.clone(),
        repo: held.repo,
        tag: held.tag,
        name: name.to_string(),
        sha256: held.sha256,
        stripped,
    })
}

/// Where an interpreter archive is held: the release entry that carries
/// it (its tag is python-build-standalone's build date) and its bytes.
pub struct Held {
    pub repo: String,
    pub tag: String,
    pub sha256: Sha256,
}

#[cfg(test)]
mod tests {
    use super::*;

    fn held() -> Held {
        Held {
            repo: "astral-sh/python-build-standalone".into(),
            tag: "20251014".into(),
            sha256: Sha256::of(b"archive"),
        }
    }

    #[test]
    fn standalone_names() {
        let i = parse_standalone_name(
            "cpython-3.12.12+20251014-x86_64-unknown-linux-gnu-install_only_stripped.tar.gz",
            held(),
        )
        .unwrap();
        assert_eq!((i.major, i.minor, i.patch), (3, 12, 12));
        assert_eq!(i.key(), "cpython-3.12.12-linux-x86_64-gnu");
        assert!(i.stripped);
        let i = parse_standalone_name(
            "cpython-3.14.0rc1+20250808-x86_64_v3-unknown-linux-musl-install_only.tar.gz",
            held(),
        )
        .unwrap();
        assert_eq!(i.prerelease, "rc1");
        assert_eq!(i.key(), "cpython-3.14.0rc1-linux-x86_64_v3-musl");
        assert!(!i.stripped);
        let a = parse_standalone_name(
            "cpython-3.12.12+20251014-aarch64-unknown-linux-gnu-install_only_stripped.tar.gz",
            held(),
        )
        .unwrap();
        assert_eq!(a.key(), "cpython-3.12.12-linux-aarch64-gnu");
        for other in [
            "cpython-3.12.12+20251014-aarch64-apple-darwin-install_only_stripped.tar.gz",
            "cpython-3.12.12+20251014-x86_64-pc-windows-msvc-install_only.tar.gz",
            "cpython-3.12.12+20251014-x86_64-unknown-linux-gnu-debug-full.tar.zst",
            "cpython-3.12.12+20251014-x86_64_v9-unknown-linux-gnu-install_only.tar.gz",
            "SHA256SUMS",
        ] {
            assert_eq!(parse_standalone_name(other, held()), None, "{other}");
        }
    }
}
