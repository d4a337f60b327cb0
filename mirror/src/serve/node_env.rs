//! One answer to "how do I point a node at this mirror": for what a store
//! holds, the exact variables and files a node sets, as JSON (`GET /-/env`)
//! and as a shell block (`llmgw mirror env`).
//!
//! Invariant: one function ([`node_env`]) decides every line from a
//! [`Holds`] — what is held, made either from the held manifests (the
//! command) or from the serving index (the route) — so the two never
//! disagree; a variable is named only for what the store holds, and never
//! two that clients refuse together (uv's interpreter list and its install
//! mirror: uv 0.13 rejects the install when both are set).

use std::collections::BTreeSet;

use llmgw_shared::manifest::{Manifest, SiteLockFormat};
use serde::Serialize;

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
    /// By environment, `(project, version)` of each companion wheel it
    /// holds (`flashinfer-cubin`): its node variables and notes.
    pub companions: std::collections::BTreeMap<String, BTreeSet<(String, String)>>,
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
        }
        h
    }

    /// From the serving index (what `GET /-/env` answers from).
    pub fn of_index(index: &super::index::Index) -> Self {
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
        }
    }
}

/// One variable a node exports, and which clients read it.
#[derive(Debug, Clone, Serialize, PartialEq, Eq)]
pub struct Var {
    /// The variable's name.
    pub name: String,
    /// Its value.
    pub value: String,
    /// The clients that read it.
    pub read_by: String,
}

/// One Python environment's settings: a node uses one environment.
#[derive(Debug, Clone, Serialize, PartialEq, Eq)]
pub struct EnvSettings {
    /// The environment's served name (`tools-amd64`).
    pub name: String,
    /// What a node installing from it sets.
    pub variables: Vec<Var>,
    /// The environment's lock, its file URLs on the mirror.
    pub lock: String,
    /// For a site's `uv.lock`: its project's `pyproject.toml`, which
    /// `uv sync --frozen` reads beside the lock.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub project: Option<String>,
    /// Set when the bundle carries no interpreter for it: the CPython
    /// version the node must bring.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub node_brings_python: Option<String>,
    /// What else a node of it must know (a variable to leave unset).
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub notes: Vec<String>,
}

/// One release held: where its assets download from.
#[derive(Debug, Clone, Serialize, PartialEq, Eq)]
pub struct ReleaseBase {
    /// `owner/repo`.
    pub repo: String,
    /// The release's tag.
    pub tag: String,
    /// Its assets' base URL on the mirror (the asset name follows).
    pub download: String,
}

/// A containerd `hosts.toml` that sends one registry's pulls to the mirror.
#[derive(Debug, Clone, Serialize, PartialEq, Eq)]
pub struct HostsToml {
    /// The registry it redirects (`docker.io`).
    pub registry: String,
    /// Where containerd reads it.
    pub file: String,
    /// The file's text.
    pub content: String,
}

/// Everything a node sets to use the mirror at `url`.
#[derive(Debug, Clone, Serialize, PartialEq, Eq)]
pub struct NodeEnv {
    /// The mirror's base URL, as nodes reach it.
    pub url: String,
    /// What every node sets.
    pub variables: Vec<Var>,
    /// One of these per node, by the environment it installs.
    pub python_envs: Vec<EnvSettings>,
    /// The GitHub-shaped API over the releases held (`None` without any).
    pub github_api: Option<String>,
    /// Each release held, where its assets download from.
    pub releases: Vec<ReleaseBase>,
    /// For containerd, one file per registry images are held from.
    pub containerd: Vec<HostsToml>,
    /// The classic Helm repository (`helm repo add`), when charts are held.
    pub helm_repo: Option<String>,
    /// The runtime extras held: each client's variable and the files it
    /// wants where it looks (`super::node_extras`).
    pub extras: Vec<super::node_extras::ExtrasSetting>,
}

fn var(name: &str, value: String, read_by: &str) -> Var {
    Var {
        name: name.into(),
        value,
        read_by: read_by.into(),
    }
}

/// The settings for a node of the mirror at `url` (its base, no trailing
/// `/`), for what `h` says is held.
pub fn node_env(h: &Holds, url: &str) -> NodeEnv {
    let url = url.trim_end_matches('/').to_string();
    let mut variables = Vec::new();
    if h.hub {
        variables.push(var(
            "HF_ENDPOINT",
            url.clone(),
            "huggingface_hub, hf, transformers, vLLM, SGLang",
        ));
        variables.push(var("MODEL_ENDPOINT", format!("{url}/"), "llama.cpp -hf"));
    }
    if h.interpreters {
        variables.push(var(
            "UV_PYTHON_DOWNLOADS_JSON_URL",
            format!("{url}/uv/python-downloads.json"),
            "uv (the interpreters held; never also UV_PYTHON_INSTALL_MIRROR)",
        ));
    }
    let dsl_held = h
        .extras
        .iter()
        .any(|(host, path)| llmgw_shared::recipe::is_dsl_fmha_extra(host, path));
    let python_envs = h
        .envs
        .iter()
        .map(|name| {
            let index = format!("{url}/pypi/{name}/simple");
            let uv_lock = h.uv_locks.contains(name);
            let mut variables = vec![
                var("UV_DEFAULT_INDEX", index.clone(), "uv"),
                var("UV_NO_BUILD", "1".into(), "uv"),
                var("PIP_INDEX_URL", index, "pip"),
                var("PIP_ONLY_BINARY", ":all:".into(), "pip"),
            ];
            let mut notes = Vec::new();
            for (project, version) in h.companions.get(name).into_iter().flatten() {
                for v in llmgw_shared::recipe::node_variables_of(project, version, dsl_held) {
                    variables.push(var(v.name, v.value.into(), v.read_by));
                }
                if project == "flashinfer-cubin" {
                    notes.push(llmgw_shared::recipe::FLASHINFER_CUBIN_DIR_NOTE.to_string());
                }
            }
            EnvSettings {
                name: name.clone(),
                variables,
                notes,
                lock: format!(
                    "{url}/pypi/{name}/{}",
                    if uv_lock { "uv.lock" } else { "pylock.toml" }
                ),
                project: uv_lock.then(|| format!("{url}/pypi/{name}/pyproject.toml")),
                node_brings_python: h.own_python.get(name).cloned(),
            }
        })
        .collect();
    let releases: Vec<ReleaseBase> = h
        .releases
        .iter()
        .map(|(repo, tag)| ReleaseBase {
            repo: repo.clone(),
            tag: tag.clone(),
            download: format!(
                "{url}/{repo}/releases/download/{}/",
                percent_encoding::utf8_percent_encode(tag, llmgw_shared::url::SEGMENT)
            ),
        })
        .collect();
    let containerd = h
        .registries
        .iter()
        .map(|r| HostsToml {
            registry: r.clone(),
            file: format!("/etc/containerd/certs.d/{r}/hosts.toml"),
            content: format!(
                "server = \"{}\"\n\n[host.\"{url}\"]\n  capabilities = [\"pull\", \"resolve\"]\n",
                upstream_server(r)
            ),
        })
        .collect();
    let extras = super::node_extras::settings(&h.extras, &url);
    NodeEnv {
        extras,
        github_api: (!releases.is_empty()).then(|| format!("{url}/api/v3")),
        helm_repo: h.charts.then(|| format!("{url}/charts")),
        url,
        variables,
        python_envs,
        releases,
        containerd,
    }
}

/// The registry's own server, as containerd's `server` line names it.
fn upstream_server(registry: &str) -> String {
    match registry {
        "docker.io" | "index.docker.io" | "registry-1.docker.io" => {
            "https://registry-1.docker.io".into()
        }
        r => format!("https://{r}"),
    }
}

impl NodeEnv {
    /// The settings as one block a node's shell runs: the variables every
    /// node sets, then each environment's (exported when there is one,
    /// else commented: a node picks its own), then the other bases and
    /// files as comments.
    pub fn to_shell(&self) -> String {
        let mut out = format!("# llmgw mirror at {}\n", self.url);
        for v in &self.variables {
            out.push_str(&format!("export {}={}  # {}\n", v.name, v.value, v.read_by));
        }
        let one = self.python_envs.len() == 1;
        if !self.python_envs.is_empty() && !one {
            out.push_str("# Python environments: uncomment the one this node installs\n");
        }
        for e in &self.python_envs {
            let vars: Vec<String> = e
                .variables
                .iter()
                .map(|v| format!("{}={}", v.name, v.value))
                .collect();
            let lead = if one { "" } else { "# " };
            out.push_str(&format!(
                "# environment {}\n{lead}export {}\n",
                e.name,
                vars.join(" ")
            ));
            match &e.project {
                Some(project) => out.push_str(&format!(
                    "#   or exactly its lock, in an empty folder: curl -fsSO {} -fsSO {project} \
                     && uv sync --frozen\n",
                    e.lock
                )),
                None => out.push_str(&format!(
                    "#   or exactly its lock: uv pip install -r {}\n",
                    e.lock
                )),
            }
            if let Some(p) = &e.node_brings_python {
                out.push_str(&format!(
                    "#   no interpreter carried: the node brings its own CPython {p}\n"
                ));
            }
            for n in &e.notes {
                out.push_str(&format!("#   {n}\n"));
            }
        }
        if let Some(api) = &self.github_api {
            out.push_str(&format!("# GitHub-shaped release API: {api}\n"));
        }
        for r in &self.releases {
            out.push_str(&format!("# release {} {}: {}\n", r.repo, r.tag, r.download));
        }
        for h in &self.containerd {
            out.push_str(&format!("# containerd: {}\n", h.file));
            for line in h.content.lines() {
                out.push_str(&format!("#   {line}\n"));
            }
        }
        if let Some(helm) = &self.helm_repo {
            out.push_str(&format!("# Helm: helm repo add llmgw {helm}\n"));
        }
        super::node_extras::to_shell(&self.extras, &mut out);
        out
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn only_what_is_held_is_named_and_never_both_uv_python_variables() {
        let empty = node_env(&Holds::default(), "http://m:8080/");
        assert!(empty.variables.is_empty() && empty.python_envs.is_empty());
        let h = Holds {
            hub: true,
            interpreters: true,
            envs: ["tools-amd64".to_string()].into(),
            own_python: [("tools-amd64".to_string(), "3.11".to_string())].into(),
            uv_locks: BTreeSet::new(),
            releases: [("ggml-org/llama.cpp".to_string(), "b6123".to_string())].into(),
            registries: ["docker.io".to_string()].into(),
            charts: false,
            extras: Default::default(),
            companions: [(
                "tools-amd64".to_string(),
                [("flashinfer-cubin".to_string(), "0.6.13".to_string())].into(),
            )]
            .into(),
        };
        let e = node_env(&h, "http://m:8080");
        let names: Vec<&str> = e.variables.iter().map(|v| v.name.as_str()).collect();
        assert_eq!(
            names,
            [
                "HF_ENDPOINT",
                "MODEL_ENDPOINT",
                "UV_PYTHON_DOWNLOADS_JSON_URL"
            ]
        );
        let shell = e.to_shell();
        assert!(!shell.contains("UV_PYTHON_INSTALL_MIRROR="), "{shell}");
        assert!(
            shell.contains("#   no interpreter carried: the node brings its own CPython 3.11\n"),
            "{shell}"
        );
        assert!(
            shell.contains("\nexport UV_DEFAULT_INDEX=http://m:8080/pypi/tools-amd64/simple "),
            "{shell}"
        );
        assert!(
            shell.contains("server = \"https://registry-1.docker.io\""),
            "{shell}"
        );
        assert!(
            shell.contains(" FLASHINFER_NO_DOWNLOAD=1\n")
                && shell.contains("#   flashinfer-cubin held: leave FLASHINFER_CUBIN_DIR unset"),
            "{shell}"
        );
        assert_eq!(
            e.releases[0].download,
            "http://m:8080/ggml-org/llama.cpp/releases/download/b6123/"
        );

        // FlashInfer's CuTe DSL kernels held: the repository at the mirror,
        // and no FLASHINFER_NO_DOWNLOAD, which would refuse to fetch them.
        let repo = llmgw_shared::recipe::FLASHINFER_CUBINS_PATH;
        let dsl = Holds {
            extras: [(
                "edge.urm.nvidia.com".to_string(),
                format!("{repo}5b34f84266cbc2135066ce96885b664992535670/fmha/cute-dsl/x86_64/sm_100a/a.so"),
            )]
            .into(),
            ..h
        };
        let shell = node_env(&dsl, "http://m:8080").to_shell();
        assert!(!shell.contains("FLASHINFER_NO_DOWNLOAD"), "{shell}");
        assert!(
            shell.contains(&format!(
                "#   export FLASHINFER_CUBINS_REPOSITORY=http://m:8080/extras/edge.urm.nvidia.com/{repo}\n"
            )),
            "{shell}"
        );
    }
}
