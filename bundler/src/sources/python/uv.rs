//! Running the real uv as the resolver: `uv pip compile` on a generated
//! pyproject, for the node's platform rather than this machine's, into a
//! PEP 751 lock.
//!
//! uv runs with no configuration of the user's (`--no-config`, every `UV_*`
//! variable removed), never builds (`--no-build`), never downloads a Python
//! (`--no-python-downloads`), and keeps its cache under the bundler's. Its
//! answer is a claim: the caller checks every file it names.

use std::path::{Path, PathBuf};
use std::process::Stdio;

use crate::error::PythonError;

/// The uv found, and the version it says it is.
#[derive(Debug, Clone)]
pub struct Uv {
    pub path: PathBuf,
    pub version: String,
}

/// A stderr longer than this is cut (from the front) in messages.
const MAX_STDERR: usize = 4000;

/// `--uv PATH`, else `uv` on `PATH`, else `carried` (the uv the bundle
/// carries for this machine, unpacked).
pub async fn locate(flag: Option<&Path>, carried: Option<&Path>) -> Result<Uv, PythonError> {
    let mut tried = Vec::new();
    let path = if let Some(p) = flag {
        p.to_path_buf()
    } else if let Some(p) = on_path("uv") {
        p
    } else if let Some(p) = carried {
        tried.push("no uv on PATH".to_string());
        p.to_path_buf()
    } else {
        tried.push("no --uv given".to_string());
        tried.push("no uv on PATH".to_string());
        tried.push("the bundle carries no uv for this machine (--engine uv=VERSION)".to_string());
        return Err(PythonError::UvNotFound {
            tried: tried.join(", "),
        });
    };
    let out = tokio::process::Command::new(&path)
        .arg("--version")
        .stdin(Stdio::null())
        .output()
        .await
        .map_err(|error| PythonError::UvRun {
            uv: path.clone(),
            error,
        })?;
    let text = String::from_utf8_lossy(&out.stdout);
    let version = text
        .strip_prefix("uv ")
        .and_then(|r| r.split_whitespace().next())
        .filter(|v| out.status.success() && llmgw_shared::recipe::valid_version(v))
        .ok_or_else(|| PythonError::UvUnusable {
            uv: path.clone(),
            detail: format!(
                "`--version` printed {:?}, not `uv VERSION`",
                text.trim().chars().take(200).collect::<String>()
            ),
        })?;
    Ok(Uv {
        version: version.to_string(),
        path,
    })
}

fn on_path(name: &str) -> Option<PathBuf> {
    use std::os::unix::fs::PermissionsExt;
    let path = std::env::var_os("PATH")?;
    std::env::split_paths(&path)
        .map(|d| d.join(name))
        .find(|p| {
            p.metadata()
                .is_ok_and(|m| m.is_file() && m.permissions().mode() & 0o111 != 0)
        })
}

/// An index the environment takes some packages from, and only those.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ExplicitIndex {
    pub name: String,
    pub url: String,
    pub packages: Vec<String>,
}

/// One resolution: what to install, from where, for which node.
#[derive(Debug, Clone)]
pub struct Compile {
    /// The environment's name, for messages.
    pub env: String,
    /// PEP 508 requirements, a direct `NAME @ file:///…` among them.
    pub dependencies: Vec<String>,
    pub explicit: Option<ExplicitIndex>,
    /// The publishers' own indexes companion wheels come from
    /// (`flashinfer-jit-cache` from `https://flashinfer.ai/whl/cu130`),
    /// explicit like `explicit`.
    pub companion_indexes: Vec<ExplicitIndex>,
    /// The simple API every other package comes from.
    pub default_index: String,
    /// uv's `--python-platform`: `x86_64-manylinux_2_28`.
    pub platform: String,
    /// `3.12`.
    pub python: String,
    /// `--override`: requirements laid over every pin (uv's `--overrides`).
    pub overrides: Vec<String>,
    /// `--constraint`: bounds on versions (uv's `--constraints`).
    pub constraints: Vec<String>,
}

/// The pyproject uv resolves: the requirements as a project's
/// dependencies, and the explicit index with the packages pinned to it (as
/// direct dependencies, since uv applies sources to those only).
pub fn pyproject(c: &Compile) -> String {
    use toml::{Table, Value};
    let mut deps: Vec<Value> = c.dependencies.iter().cloned().map(Value::from).collect();
    let mut tool_uv = Table::new();
    let mut indexes = Vec::new();
    let mut sources = Table::new();
    for x in c.explicit.iter().chain(&c.companion_indexes) {
        for p in &x.packages {
            deps.push(Value::from(p.clone()));
        }
        let mut index = Table::new();
        index.insert("name".into(), x.name.clone().into());
        index.insert("url".into(), x.url.clone().into());
        index.insert("explicit".into(), true.into());
        indexes.push(Value::Table(index));
        for p in &x.packages {
            let mut s = Table::new();
            s.insert("index".into(), x.name.clone().into());
            sources.insert(p.clone(), Value::Table(s));
        }
    }
    if !indexes.is_empty() {
        tool_uv.insert("index".into(), Value::Array(indexes));
        tool_uv.insert("sources".into(), Value::Table(sources));
    }
    let mut project = Table::new();
    project.insert("name".into(), "llmgw-environment".into());
    project.insert("version".into(), "0".into());
    project.insert("requires-python".into(), format!("=={}.*", c.python).into());
    project.insert("dependencies".into(), Value::Array(deps));
    let mut root = Table::new();
    root.insert("project".into(), Value::Table(project));
    if !tool_uv.is_empty() {
        let mut tool = Table::new();
        tool.insert("uv".into(), Value::Table(tool_uv));
        root.insert("tool".into(), Value::Table(tool));
    }
    toml::to_string(&root).unwrap_or_default()
}

/// Resolves in `scratch` (which must exist and be empty of a previous
/// lock) and returns the lock's text.
pub async fn compile(
    uv: &Uv,
    c: &Compile,
    scratch: &Path,
    cache_dir: &Path,
) -> Result<String, PythonError> {
    let pyproject_path = scratch.join("pyproject.toml");
    std::fs::write(&pyproject_path, pyproject(c))
        .map_err(|e| PythonError::io(&pyproject_path, e))?;
    let lock_path = scratch.join("pylock.toml");
    let _ = std::fs::remove_file(&lock_path);
    let mut cmd = tokio::process::Command::new(&uv.path);
    cmd.current_dir(scratch)
        .args(["pip", "compile", "pyproject.toml"])
        .args(["--format", "pylock.toml", "-o", "pylock.toml"])
        .args(["--python-platform", &c.platform])
        .args(["--python-version", &c.python])
        .args(["--default-index", &c.default_index])
        .args([
            "--no-build",
            "--no-python-downloads",
            "--no-config",
            "--no-header",
            "--quiet",
        ])
        .args(["--color", "never"])
        .arg("--cache-dir")
        .arg(cache_dir)
        .args(requirement_files(scratch, c)?)
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .kill_on_drop(true);
    for (k, _) in std::env::vars_os() {
        if k.to_str().is_some_and(|k| k.starts_with("UV_")) {
            cmd.env_remove(k);
        }
    }
    let out = cmd.output().await.map_err(|error| PythonError::UvRun {
        uv: uv.path.clone(),
        error,
    })?;
    let stderr = String::from_utf8_lossy(&out.stderr);
    if !out.status.success() {
        if let Some(project) = no_wheel_project(&stderr) {
            return Err(PythonError::NoWheel {
                env: c.env.clone(),
                project,
                platform: c.platform.clone(),
                hint: String::new(),
            });
        }
        return Err(PythonError::UvFailed {
            env: c.env.clone(),
            status: out.status.to_string(),
            stderr: tail(stderr.trim()),
            hint: String::new(),
        });
    }
    let text = read_bounded(&lock_path)?;
    Ok(text)
}

/// The operator's overrides and constraints as requirements files in
/// `scratch`, and uv's flags naming them.
fn requirement_files(scratch: &Path, c: &Compile) -> Result<Vec<std::ffi::OsString>, PythonError> {
    let mut args = Vec::new();
    for (flag, file, list) in [
        ("--overrides", "overrides.txt", &c.overrides),
        ("--constraints", "constraints.txt", &c.constraints),
    ] {
        if list.is_empty() {
            continue;
        }
        let path = scratch.join(file);
        let mut text = list.join("\n");
        text.push('\n');
        std::fs::write(&path, text).map_err(|e| PythonError::io(&path, e))?;
        args.push(flag.into());
        args.push(path.into_os_string());
    }
    Ok(args)
}

fn read_bounded(path: &Path) -> Result<String, PythonError> {
    use std::io::Read;
    let f = std::fs::File::open(path).map_err(|e| PythonError::io(path, e))?;
    let mut buf = String::new();
    f.take(crate::limits::MAX_LOCK_BYTES as u64 + 1)
        .read_to_string(&mut buf)
        .map_err(|e| PythonError::io(path, e))?;
    Ok(buf)
}

/// The project uv's `--no-build` hint names: "Wheels are required for
/// `pycrypto` because building from source is disabled".
fn no_wheel_project(stderr: &str) -> Option<String> {
    let rest = stderr.split("Wheels are required for `").nth(1)?;
    let name = rest.split('`').next()?;
    (!name.is_empty() && name.len() < 200).then(|| name.to_string())
}

fn tail(s: &str) -> String {
    if s.len() <= MAX_STDERR {
        return s.to_string();
    }
    let mut start = s.len() - MAX_STDERR;
    while !s.is_char_boundary(start) {
        start += 1;
    }
    format!("…{}", &s[start..])
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn pyproject_pins_the_index_packages_to_the_explicit_index() {
        let c = Compile {
            env: "vllm-0.20.1-cu129-amd64".into(),
            dependencies: vec!["vllm @ file:///w/vllm-0.20.1+cu129-x.whl".into()],
            explicit: Some(ExplicitIndex {
                name: "pytorch-cu129".into(),
                url: "https://download.example/whl/cu129".into(),
                packages: vec!["torch".into(), "torchvision".into()],
            }),
            companion_indexes: vec![ExplicitIndex {
                name: "flashinfer-cu129".into(),
                url: "https://fi.example/whl/cu129".into(),
                packages: vec!["flashinfer-jit-cache".into()],
            }],
            default_index: "https://pypi.example/simple".into(),
            platform: "x86_64-manylinux_2_28".into(),
            python: "3.12".into(),
            overrides: Vec::new(),
            constraints: Vec::new(),
        };
        let v: toml::Table = toml::from_str(&pyproject(&c)).unwrap();
        assert_eq!(
            v["project"]["dependencies"],
            toml::Value::Array(vec![
                "vllm @ file:///w/vllm-0.20.1+cu129-x.whl".into(),
                "torch".into(),
                "torchvision".into(),
                "flashinfer-jit-cache".into()
            ])
        );
        assert_eq!(v["project"]["requires-python"].as_str(), Some("==3.12.*"));
        assert_eq!(
            v["tool"]["uv"]["index"][0]["explicit"].as_bool(),
            Some(true)
        );
        assert_eq!(
            v["tool"]["uv"]["sources"]["torchvision"]["index"].as_str(),
            Some("pytorch-cu129")
        );
        assert_eq!(
            v["tool"]["uv"]["sources"]["flashinfer-jit-cache"]["index"].as_str(),
            Some("flashinfer-cu129")
        );
        assert_eq!(
            v["tool"]["uv"]["index"][1]["url"].as_str(),
            Some("https://fi.example/whl/cu129")
        );
        let plain = Compile {
            explicit: None,
            companion_indexes: Vec::new(),
            dependencies: vec!["a\"b".into()],
            ..c
        };
        let v: toml::Table = toml::from_str(&pyproject(&plain)).unwrap();
        assert!(v.get("tool").is_none());
        assert_eq!(v["project"]["dependencies"][0].as_str(), Some("a\"b"));
    }

    #[test]
    fn the_no_build_hint_names_the_project() {
        let e = "error: No solution found when resolving dependencies\n  cause: Because all \
                 versions of pycrypto have no usable wheels…\n\nhint: Wheels are required for \
                 `pycrypto` because building from source is disabled for all packages";
        assert_eq!(no_wheel_project(e).as_deref(), Some("pycrypto"));
        assert_eq!(no_wheel_project("error: network"), None);
    }
}
