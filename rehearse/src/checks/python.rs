//! Every Python environment of this host's architecture as a node installs
//! it, with the variables `mirror env` prints for it and the uv the bundle
//! carries: a venv from the carried interpreter (or the host's CPython of
//! that version when none is carried), then a dry-run install from the
//! index of the environment's requested packages (unless its node lines
//! say to install from the lock only), then each install line as printed,
//! as a dry run.
//!
//! Invariant: every command runs with a clean environment (`PATH`, a
//! private `HOME`, uv's cache and interpreters in the rehearsal's folder,
//! no user config) plus exactly the variables the node lines set, so what
//! passes here depends on the bundle and the printed lines alone.

use std::path::{Path, PathBuf};
use std::process::Stdio;
use std::time::Duration;

use llmgw_mirror::NodeEnv;
use llmgw_shared::manifest::{Manifest, PythonEnv};

use crate::report::Check;
use crate::uv::{Uv, host_arch};

const AREA: &str = "python";

/// How long one uv command may take (a dry run resolves; it downloads
/// only the interpreter and metadata).
const COMMAND_TIMEOUT: Duration = Duration::from_secs(600);

/// The rows for every environment of `m`, installed as `env` tells a node.
pub async fn check(m: &Manifest, env: &NodeEnv, uv: Option<&Uv>, work: &Path) -> Vec<Check> {
    let mut out = Vec::new();
    for e in &m.python_envs {
        if e.arch != host_arch() {
            out.push(Check::note(
                AREA,
                format!("environment {}", e.name),
                format!(
                    "a {} environment; this host is {}: rehearse it on a {} machine",
                    e.arch,
                    host_arch(),
                    e.arch
                ),
            ));
            continue;
        }
        let Some(uv) = uv else {
            out.push(Check::note(
                AREA,
                format!("environment {}", e.name),
                "no uv to rehearse with: the bundle carries none for this host and none is on PATH",
            ));
            continue;
        };
        let Some(settings) = env.python_envs.iter().find(|s| s.name == e.name) else {
            out.push(Check::fail(
                AREA,
                format!("environment {}", e.name),
                "`mirror env` prints no lines for it",
                "report it, with this line, as a fault of llmgw",
            ));
            continue;
        };
        let dir = work.join(format!("env-{}", out.len()));
        let node = Node::new(env, settings, uv, &dir);
        out.extend(one(e, settings, &node).await);
    }
    out
}

/// A node's shell for one environment: its variables, its folder.
struct Node {
    vars: Vec<(String, String)>,
    dir: PathBuf,
    uv: PathBuf,
}

impl Node {
    fn new(env: &NodeEnv, settings: &llmgw_mirror::EnvSettings, uv: &Uv, dir: &Path) -> Self {
        let mut vars: Vec<(String, String)> = env
            .variables
            .iter()
            .chain(&settings.variables)
            .map(|v| (v.name.clone(), v.value.clone()))
            .collect();
        let home = dir.join("home");
        vars.push(("HOME".into(), home.display().to_string()));
        vars.push(("UV_NO_CONFIG".into(), "1".into()));
        vars.push(("VIRTUAL_ENV".into(), dir.join("venv").display().to_string()));
        vars.push((
            "UV_CACHE_DIR".into(),
            dir.join("cache").display().to_string(),
        ));
        vars.push((
            "UV_PYTHON_INSTALL_DIR".into(),
            dir.join("pythons").display().to_string(),
        ));
        Self {
            vars,
            dir: dir.to_path_buf(),
            uv: uv.bin.clone(),
        }
    }

    /// Runs `script` with bash in `cwd` (made first), uv first on `PATH`;
    /// its combined output's last lines on failure.
    async fn run(&self, script: &str, cwd: &Path) -> Result<(), String> {
        std::fs::create_dir_all(cwd).map_err(|e| format!("{}: {e}", cwd.display()))?;
        let _ = std::fs::create_dir_all(self.dir.join("home"));
        let uv_dir = self.uv.parent().unwrap_or(Path::new("/"));
        // The host's PATH after uv and the venv: where a node's own CPython
        // (and curl) would be found.
        let host = std::env::var("PATH").unwrap_or_else(|_| "/usr/bin:/bin".into());
        let path = format!(
            "{}:{}/venv/bin:{host}",
            uv_dir.display(),
            self.dir.display()
        );
        let mut c = tokio::process::Command::new("bash");
        c.args(["-euo", "pipefail", "-c", script])
            .current_dir(cwd)
            .env_clear()
            .env("PATH", path)
            .envs(self.vars.iter().map(|(k, v)| (k, v)))
            .stdin(Stdio::null())
            .kill_on_drop(true);
        let run = tokio::time::timeout(COMMAND_TIMEOUT, c.output()).await;
        let o = match run {
            Err(_) => return Err(format!("timed out after {} s", COMMAND_TIMEOUT.as_secs())),
            Ok(Err(e)) => return Err(format!("cannot run bash: {e}")),
            Ok(Ok(o)) => o,
        };
        if o.status.success() {
            return Ok(());
        }
        let text = format!(
            "{}{}",
            String::from_utf8_lossy(&o.stdout),
            String::from_utf8_lossy(&o.stderr)
        );
        let tail: Vec<&str> = text.lines().rev().take(6).collect();
        Err(format!(
            "{} ({}): {}",
            script,
            o.status,
            tail.into_iter().rev().collect::<Vec<_>>().join(" | ")
        ))
    }
}

/// The rows of one environment: venv, index, each install line.
async fn one(e: &PythonEnv, s: &llmgw_mirror::EnvSettings, node: &Node) -> Vec<Check> {
    let mut out = Vec::new();
    let name = &e.name;
    let venv = format!("uv venv --python {} {}/venv", e.python, node.dir.display());
    match node.run(&venv, &node.dir).await {
        Ok(()) => out.push(Check::pass(AREA, format!("{name}: {venv}"))),
        Err(detail) if s.node_brings_python.is_some() => {
            out.push(Check::note(
                AREA,
                format!("{name}: {venv}"),
                format!(
                    "the bundle carries no interpreter and this host has no CPython {} either: \
                     nodes must bring it ({detail})",
                    e.python
                ),
            ));
            return out;
        }
        Err(detail) => {
            out.push(Check::fail(
                AREA,
                format!("{name}: {venv}"),
                detail,
                "make the bundle again with the interpreter carried (--python-interpreter \
                 carried, the default)",
            ));
            return out;
        }
    }
    // From the index, as `uv pip install vllm==…` on a node: only where the
    // node lines name the index.
    let index_named = s.variables.iter().any(|v| v.name == "UV_DEFAULT_INDEX");
    if index_named && !e.requirements.is_empty() && e.site_lock.is_none() {
        let reqs: Vec<String> = e.requirements.iter().map(|r| shell_quote(r)).collect();
        let cmd = format!("uv pip install --dry-run {}", reqs.join(" "));
        out.push(match node.run(&cmd, &node.dir).await {
            Ok(()) => Check::pass(AREA, format!("{name}: {cmd}")),
            Err(detail) => Check::fail(AREA, format!("{name}: {cmd}"), detail, index_fix(e)),
        });
    }
    for line in &s.install {
        let dry = dry_run(line);
        let cwd = node.dir.join(format!("install-{}", out.len()));
        out.push(match node.run(&dry, &cwd).await {
            Ok(()) => Check::pass(AREA, format!("{name}: {dry}")),
            Err(detail) => Check::fail(
                AREA,
                format!("{name}: {dry}"),
                detail,
                "the node line as `mirror env` prints it fails: report it, with this line, as \
                 a fault of llmgw",
            ),
        });
    }
    out
}

/// The fix on the connected side when the index cannot resolve what an
/// environment asks for, though its node lines name the index.
fn index_fix(e: &PythonEnv) -> String {
    if e.overrides.is_empty() {
        // The index holds what the lock resolved: an override the manifest
        // does not record (a bundle made before llmgw recorded them) is
        // what makes the two disagree.
        format!(
            "make the bundle again with this llmgw and the same flags: the index holds what \
             the lock resolved, which does not meet {}; a bundle made with --override by an \
             llmgw that did not record it says nothing of it, so its node lines name the \
             index instead of the lock alone",
            e.requirements.join(", ")
        )
    } else {
        "the environment was made with --override, so the node lines must name its lock \
         only: report it, with this line, as a fault of llmgw"
            .to_string()
    }
}

/// A node's install line as a dry run: `--dry-run` after `uv pip install`
/// and `uv sync`.
fn dry_run(line: &str) -> String {
    line.replace("uv pip install ", "uv pip install --dry-run ")
        .replace("uv sync ", "uv sync --dry-run ")
}

/// `s` quoted for bash.
fn shell_quote(s: &str) -> String {
    format!("'{}'", s.replace('\'', r"'\''"))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn install_lines_become_dry_runs() {
        assert_eq!(
            dry_run("uv pip install -r http://m/pypi/e/pylock.toml"),
            "uv pip install --dry-run -r http://m/pypi/e/pylock.toml"
        );
        assert_eq!(
            dry_run("curl -fsSO a -fsSO b && uv sync --frozen --no-install-project"),
            "curl -fsSO a -fsSO b && uv sync --dry-run --frozen --no-install-project"
        );
        assert_eq!(shell_quote("a'b"), r"'a'\''b'");
    }
}
