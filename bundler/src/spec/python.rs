//! What the operator asks for of Python beyond the recipe: site
//! environments (`--python-env NAME=REQ,…` or `NAME=PATH/uv.lock`), the
//! default index (`--pypi`), where the nodes' interpreter comes from
//! (`--python-interpreter carried|none`), requirements laid over the
//! upstream pins (`--override ENV=REQ`, `--constraint ENV=REQ`), and a site
//! environment's Python (`--python 3.11`).
//!
//! Invariant: every value is checked here, before any network; which
//! environments an `--override`/`--constraint` names is checked with the
//! request (`sources::python::choices`).

use crate::error::{CreateError, FlagError};

/// The simple API every package comes from unless the recipe says else.
pub const DEFAULT_PYPI: &str = "https://pypi.org/simple";
/// A site environment as given: `NAME=REQ[,REQ…]`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SiteEnv {
    pub name: String,
    pub requirements: Vec<String>,
    /// `NAME=PATH` of a `uv.lock` or `pylock.toml`: the site's own lock,
    /// carried as it is (then `requirements` is empty).
    pub lock: Option<std::path::PathBuf>,
}

/// The lock format a `--python-env` value names by its file name
/// (`uv.lock`; `pylock.toml` or `pylock.NAME.toml`, PEP 751's names), or
/// `None` for requirements.
pub fn lock_format_of(value: &str) -> Option<llmgw_shared::manifest::SiteLockFormat> {
    let name = std::path::Path::new(value).file_name()?.to_str()?;
    if name == "uv.lock" {
        Some(llmgw_shared::manifest::SiteLockFormat::UvLock)
    } else if name.starts_with("pylock.") && name.ends_with(".toml") && !value.contains(',') {
        Some(llmgw_shared::manifest::SiteLockFormat::Pylock)
    } else {
        None
    }
}

/// `NAME=REQ[,REQ…]`: a name safe in a URL path segment, and at least one
/// requirement.
pub fn parse_site_env(text: &str) -> Result<SiteEnv, CreateError> {
    let bad = |why: &'static str| {
        CreateError::from(FlagError::SiteEnv {
            text: text.to_string(),
            why,
        })
    };
    let (name, reqs) = text.split_once('=').ok_or_else(|| bad("no '='"))?;
    let name = name.trim();
    let name_ok = !name.is_empty()
        && name.len() <= 64
        && name.starts_with(|c: char| c.is_ascii_alphanumeric())
        && name
            .chars()
            .all(|c| c.is_ascii_alphanumeric() || matches!(c, '-' | '_' | '.'));
    if !name_ok {
        return Err(bad(
            "the name must be letters, digits, '-', '_' or '.', starting with a letter or digit",
        ));
    }
    if lock_format_of(reqs.trim()).is_some() {
        return Ok(SiteEnv {
            name: name.to_string(),
            requirements: Vec::new(),
            lock: Some(std::path::PathBuf::from(reqs.trim())),
        });
    }
    // Commas inside brackets belong to extras: huggingface_hub[cli,torch].
    let mut requirements = Vec::new();
    let (mut depth, mut cur) = (0i32, String::new());
    for c in reqs.chars() {
        match c {
            '[' | '(' => depth += 1,
            ']' | ')' => depth -= 1,
            _ => {}
        }
        if c == ',' && depth == 0 {
            requirements.push(std::mem::take(&mut cur));
        } else {
            cur.push(c);
        }
    }
    requirements.push(cur);
    let requirements: Vec<String> = requirements
        .into_iter()
        .map(|r| r.trim().to_string())
        .collect();
    if requirements.iter().any(|r| r.is_empty()) {
        return Err(bad("an empty requirement"));
    }
    if requirements
        .iter()
        .any(|r| r.starts_with('-') || r.chars().any(|c| c.is_control()))
    {
        return Err(bad("a requirement is not a PEP 508 requirement"));
    }
    Ok(SiteEnv {
        name: name.to_string(),
        requirements,
        lock: None,
    })
}

/// Where the nodes' interpreter comes from.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum InterpreterChoice {
    /// The python-build-standalone build the carried uv installs, carried
    /// as a release asset (the default).
    #[default]
    Carried,
    /// None is carried: the nodes bring their own CPython of each
    /// environment's version (recorded in the manifest).
    None,
}

impl InterpreterChoice {
    /// `--python-interpreter carried|none`.
    pub fn parse(text: &str) -> Result<Self, CreateError> {
        match text.trim() {
            "carried" => Ok(Self::Carried),
            "none" => Ok(Self::None),
            other => Err(FlagError::Interpreter {
                text: other.to_string(),
            }
            .into()),
        }
    }
}

/// `--override ENV=REQ` or `--constraint ENV=REQ`: a requirement for the
/// environments `env` names.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct EnvEdit {
    /// An environment's name (`vllm-0.34.0-cu13-amd64`), that name without
    /// its arch (`vllm-0.34.0-cu13`), an engine (`vllm`), or a site
    /// environment's NAME.
    pub env: String,
    /// A PEP 508 requirement: `flashinfer-python==0.7.4`.
    pub requirement: String,
}

impl EnvEdit {
    /// `ENV=REQ`; `flag` names the flag in the refusal.
    pub fn parse(flag: &'static str, text: &str) -> Result<Self, CreateError> {
        let bad = |why: &'static str| {
            CreateError::from(FlagError::EnvEdit {
                flag,
                text: text.to_string(),
                why,
            })
        };
        let (env, req) = text.split_once('=').ok_or_else(|| bad("no '='"))?;
        let (env, req) = (env.trim(), req.trim());
        if env.is_empty()
            || !env
                .chars()
                .all(|c| c.is_ascii_alphanumeric() || "-_.".contains(c))
        {
            return Err(bad("ENV must be letters, digits, '-', '_' or '.'"));
        }
        let starts_ok = req.starts_with(|c: char| c.is_ascii_alphanumeric());
        if !starts_ok || req.chars().any(char::is_control) {
            return Err(bad("REQ is not a PEP 508 requirement"));
        }
        Ok(Self {
            env: env.to_string(),
            requirement: req.to_string(),
        })
    }
}

/// `--python 3.11`: a CPython minor version a site environment is
/// resolved for and its nodes run.
pub fn check_python(text: &str) -> Result<String, CreateError> {
    let t = text.trim();
    let ok = t.split_once('.').is_some_and(|(a, b)| {
        a == "3" && !b.is_empty() && b.len() <= 2 && b.bytes().all(|c| c.is_ascii_digit())
    });
    if !ok {
        return Err(FlagError::Python {
            text: text.to_string(),
        }
        .into());
    }
    Ok(t.to_string())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn site_envs_split_on_commas_outside_extras() {
        let s = parse_site_env("tools=transformers, huggingface_hub[cli,torch]>=1.0").unwrap();
        assert_eq!(s.name, "tools");
        assert_eq!(
            s.requirements,
            ["transformers", "huggingface_hub[cli,torch]>=1.0"]
        );
        for (bad, why) in [
            ("tools", "no '='"),
            ("=x", "the name"),
            ("../x=y", "the name"),
            ("t=a,,b", "empty requirement"),
            ("t=--index-url=http://evil", "not a PEP 508"),
        ] {
            let e = parse_site_env(bad).unwrap_err().to_string();
            assert!(e.contains(why), "{bad}: {e}");
            assert!(e.starts_with("--python-env "), "{e}");
        }
    }

    #[test]
    fn edits_parse_and_name_their_environments() {
        let e = EnvEdit::parse("--override", "vllm=flashinfer-python==0.7.4").unwrap();
        assert_eq!(e.env, "vllm");
        assert_eq!(e.requirement, "flashinfer-python==0.7.4");
        for bad in ["vllm", "=x==1", "a b=x", "vllm=--index-url=http://x"] {
            let err = EnvEdit::parse("--constraint", bad).unwrap_err().to_string();
            assert!(err.starts_with(&format!("--constraint {bad:?}: ")), "{err}");
        }
        assert_eq!(check_python(" 3.11").unwrap(), "3.11");
        assert!(check_python("3").is_err() && check_python("2.7").is_err());
        assert_eq!(
            InterpreterChoice::parse("none").unwrap(),
            InterpreterChoice::None
        );
        assert!(InterpreterChoice::parse("host").is_err());
    }
}
