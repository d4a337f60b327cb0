//! The settings a node sets for what a store holds ([`node_env`]): the
//! variables, each environment's install lines and needs, the release
//! bases, containerd's hosts files, the Helm repository and the extras.
//!
//! Invariant: an environment made with overrides names its lock only (no
//! index a node could resolve from); one whose interpreter is not carried
//! sets `UV_PYTHON_DOWNLOADS=never`; a site's `uv.lock` is synced without
//! its own project.

use serde::Serialize;

use super::holds::Holds;

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
    /// The commands that install it on a node, exactly as a node runs them
    /// (in an empty folder, with `variables` exported): the lock's, and the
    /// index's where the index can resolve it. `bundle rehearse` runs them.
    pub install: Vec<String>,
    /// OS packages its nodes need besides the wheels.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub os_packages: Vec<String>,
    /// The glibc its nodes need at least (`2.31`).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub glibc: Option<String>,
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
    /// wants where it looks (`super::extras_env`).
    pub extras: Vec<super::extras_env::ExtrasSetting>,
    /// The runtime extras the held bundles left out (and none carries): a
    /// node's engine that needs one fetches it upstream, which an
    /// air-gapped node cannot (`mirror list` shows the same gaps).
    pub extras_left_out: Vec<super::extras_env::LeftOut>,
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
        .map(|name| env_settings(h, name, &url, dsl_held))
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
    let extras = super::extras_env::settings(&h.extras, &url);
    let extras_left_out = h
        .left_out()
        .map(|(what, reason)| super::extras_env::LeftOut {
            what: what.clone(),
            reason: reason.clone(),
        })
        .collect();
    NodeEnv {
        extras,
        extras_left_out,
        github_api: (!releases.is_empty()).then(|| format!("{url}/api/v3")),
        helm_repo: h.charts.then(|| format!("{url}/charts")),
        url,
        variables,
        python_envs,
        releases,
        containerd,
    }
}

/// One environment's settings: its variables (the index's only where the
/// index can resolve it), how it installs, and what its nodes need.
fn env_settings(h: &Holds, name: &str, url: &str, dsl_held: bool) -> EnvSettings {
    let index = format!("{url}/pypi/{name}/simple");
    let uv_lock = h.uv_locks.contains(name);
    let facts = h.facts.get(name).cloned().unwrap_or_default();
    // An environment made with overrides is installed from its lock
    // only: its index is not named, so no node resolves from it.
    let mut variables = if facts.overrides {
        vec![var("UV_NO_BUILD", "1".into(), "uv")]
    } else {
        vec![
            var("UV_DEFAULT_INDEX", index.clone(), "uv"),
            var("UV_NO_BUILD", "1".into(), "uv"),
            var("PIP_INDEX_URL", index, "pip"),
            var("PIP_ONLY_BINARY", ":all:".into(), "pip"),
        ]
    };
    if h.own_python.contains_key(name) {
        // No interpreter carried: uv must never reach for GitHub.
        variables.push(var("UV_PYTHON_DOWNLOADS", "never".into(), "uv"));
    }
    let mut notes = Vec::new();
    if facts.overrides {
        notes.push(
            "made with --override: the index cannot resolve the engine's own pins, \
             so install it from its lock only"
                .to_string(),
        );
    }
    for (project, version) in h.companions.get(name).into_iter().flatten() {
        for v in llmgw_shared::recipe::node_variables_of(project, version, dsl_held) {
            variables.push(var(v.name, v.value.into(), v.read_by));
        }
        if project == "flashinfer-cubin" {
            notes.push(llmgw_shared::recipe::FLASHINFER_CUBIN_DIR_NOTE.to_string());
        }
    }
    let lock = format!(
        "{url}/pypi/{name}/{}",
        if uv_lock { "uv.lock" } else { "pylock.toml" }
    );
    let project = uv_lock.then(|| format!("{url}/pypi/{name}/pyproject.toml"));
    EnvSettings {
        name: name.to_string(),
        variables,
        install: install_lines(&lock, project.as_deref()),
        os_packages: facts.os_packages.clone(),
        glibc: facts.glibc(),
        notes,
        lock,
        project,
        node_brings_python: h.own_python.get(name).cloned(),
    }
}

/// How a node installs an environment from its lock, each a command it runs
/// as printed. A site's `uv.lock` is synced without installing its own
/// project (the node has only the lock and `pyproject.toml`, never the
/// project's source: a packaged project would fail to build).
fn install_lines(lock: &str, project: Option<&str>) -> Vec<String> {
    match project {
        Some(project) => vec![format!(
            "curl -fsSO {lock} -fsSO {project} && uv sync --frozen --no-install-project"
        )],
        None => vec![format!("uv pip install -r {lock}")],
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
