//! What a store holds, as far as a node's settings depend on it: made from
//! the held manifests (`mirror env`) or from the serving index (`/-/env`).
//!
//! Invariant: both makers fill every field from the same facts of each
//! environment (its interpreter, lock, overrides, OS packages, platform),
//! so the command and the route print the same lines.

use std::collections::BTreeSet;

use llmgw_shared::manifest::{Manifest, SiteLockFormat, extra_gap_file};

/// What a store holds, as far as a node's settings depend on it.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Holds {
    /// Any Hub model or dataset.
    pub hub: bool,
    /// Any python-build-standalone interpreter (for uv).
    pub interpreters: bool,
    /// The environments' served names (`tools-amd64`), sorted.
    pub envs: BTreeSet<String>,
    /// The environments whose nodes bring their own CPython (the bundle
    /// carries none by choice), with its version.
    pub own_python: std::collections::BTreeMap<String, String>,
    /// The environments that are a site's own `uv.lock` project (served
    /// as `uv.lock` and `pyproject.toml`, installed by `uv sync --frozen`).
    pub uv_locks: BTreeSet<String>,
    /// `(owner/repo, tag)` of each GitHub release held.
    pub releases: BTreeSet<(String, String)>,
    /// The registries images are held from (not the local layouts').
    pub registries: BTreeSet<String>,
    /// Any Helm chart.
    pub charts: bool,
    /// `(host, path)` of each runtime extra held.
    pub extras: BTreeSet<(String, String)>,
    /// The runtime extras a held bundle left out (its gaps), by what, with
    /// the reason; [`Holds::left_out`] drops those another bundle holds.
    pub extras_left_out: std::collections::BTreeMap<String, String>,
    /// By environment, `(project, version)` of each companion wheel it
    /// holds (`flashinfer-cubin`): its node variables and notes.
    pub companions: std::collections::BTreeMap<String, BTreeSet<(String, String)>>,
    /// By environment, what its nodes must have and how it installs.
    pub facts: std::collections::BTreeMap<String, EnvFacts>,
}

/// What a node of one environment must have besides the mirror, and how
/// the environment can be installed.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct EnvFacts {
    /// Made with `--override`: the index cannot resolve the engine's own
    /// pins (an override replaces one), so only the lock installs it.
    pub overrides: bool,
    /// OS packages the recipe table says nodes need (`gcc`).
    pub os_packages: Vec<String>,
    /// The platform resolved for (`x86_64-manylinux_2_31`): its glibc floor.
    pub platform: String,
}

impl EnvFacts {
    pub(super) fn of(overrides: bool, os_packages: &[String], platform: &str) -> Self {
        Self {
            overrides,
            os_packages: os_packages.to_vec(),
            platform: platform.to_string(),
        }
    }

    /// The glibc a node needs, from the manylinux tag resolved for
    /// (`manylinux_2_31` is glibc 2.31); none for another platform.
    pub fn glibc(&self) -> Option<String> {
        let tag = self.platform.split('-').nth(1)?;
        let rest = tag.strip_prefix("manylinux_")?;
        let (major, minor) = rest.split_once('_')?;
        let ok = |p: &str| !p.is_empty() && p.bytes().all(|b| b.is_ascii_digit());
        (ok(major) && ok(minor)).then(|| format!("{major}.{minor}"))
    }
}

/// Whether `project` is a companion wheel of the recipe table.
fn is_companion(project: &str) -> bool {
    llmgw_shared::recipe::COMPANIONS
        .iter()
        .any(|c| c.project == llmgw_shared::pep503_normalize(project))
}

impl Holds {
    /// From the held manifests (what `llmgw mirror env` reads).
    pub fn of_manifests<'a>(manifests: impl IntoIterator<Item = &'a Manifest>) -> Self {
        let mut h = Self::default();
        for m in manifests {
            h.hub |= !m.repos.is_empty();
            for e in &m.python_envs {
                h.envs.insert(e.name.clone());
                h.interpreters |= e.interpreter.is_some();
                if e.node_interpreter.is_some() {
                    h.own_python.insert(e.name.clone(), e.python.clone());
                }
                if e.site_lock.as_ref().map(|s| s.format) == Some(SiteLockFormat::UvLock) {
                    h.uv_locks.insert(e.name.clone());
                }
                h.facts.insert(
                    e.name.clone(),
                    EnvFacts::of(!e.overrides.is_empty(), &e.os_packages, &e.platform),
                );
                for f in e.files.iter().filter(|f| is_companion(&f.project)) {
                    h.companions
                        .entry(e.name.clone())
                        .or_default()
                        .insert((f.project.clone(), f.version.clone()));
                }
            }
            for r in &m.releases {
                h.releases.insert((r.repo.to_string(), r.tag.clone()));
            }
            for i in &m.images {
                if let Some(r) = &i.registry {
                    h.registries.insert(r.clone());
                }
            }
            h.charts |= !m.charts.is_empty();
            for e in &m.extras {
                h.extras.insert((e.host.clone(), e.path.clone()));
            }
            for g in m.gaps.iter().filter(|g| g.is_runtime_extra()) {
                h.extras_left_out
                    .entry(g.what.clone())
                    .or_insert_with(|| g.reason.clone());
            }
        }
        h
    }

    /// The runtime extras left out that no held bundle carries, `(what,
    /// reason)`: a file is carried when its `(host, path)` is held; the
    /// DSL kernels of a release when any DSL kernel file is held.
    pub fn left_out(&self) -> impl Iterator<Item = (&String, &String)> {
        let dsl_held = self
            .extras
            .iter()
            .any(|(host, path)| llmgw_shared::recipe::is_dsl_fmha_extra(host, path));
        self.extras_left_out
            .iter()
            .filter(move |(what, _)| match extra_gap_file(what) {
                Some((host, path)) => !self.extras.contains(&(host.into(), path.into())),
                None => !dsl_held,
            })
    }

    /// From the serving index (what `GET /-/env` answers from).
    pub fn of_index(index: &crate::serve::index::Index) -> Self {
        Self {
            hub: !index.repos.is_empty(),
            interpreters: !index.pypi.interpreters.is_empty(),
            envs: index.pypi.envs().map(|e| e.name.clone()).collect(),
            own_python: index
                .pypi
                .envs()
                .filter(|e| e.node_interpreter.is_some())
                .map(|e| (e.name.clone(), e.python.clone()))
                .collect(),
            uv_locks: index
                .pypi
                .envs()
                .filter(|e| e.site_lock.as_ref().map(|s| s.format) == Some(SiteLockFormat::UvLock))
                .map(|e| e.name.clone())
                .collect(),
            releases: index
                .releases
                .values()
                .map(|r| (r.repo.clone(), r.tag.clone()))
                .collect(),
            registries: index
                .oci
                .repos()
                .filter_map(|r| r.registry.clone())
                .collect(),
            charts: !index.oci.charts().is_empty(),
            extras: index.extras.keys().cloned().collect(),
            extras_left_out: index.extras_left_out.clone(),
            companions: index
                .pypi
                .envs()
                .map(|e| {
                    let held: BTreeSet<(String, String)> = e
                        .files
                        .values()
                        .filter(|f| is_companion(&f.project))
                        .map(|f| (f.project.clone(), f.version.clone()))
                        .collect();
                    (e.name.clone(), held)
                })
                .filter(|(_, held)| !held.is_empty())
                .collect(),
            facts: index
                .pypi
                .envs()
                .map(|e| {
                    let facts = EnvFacts::of(e.overrides, &e.os_packages, &e.platform);
                    (e.name.clone(), facts)
                })
                .collect(),
        }
    }
}
