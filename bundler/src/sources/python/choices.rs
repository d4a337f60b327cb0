//! What an operator chooses of a Python environment beyond the recipe:
//! where the interpreter comes from (`--python-interpreter carried|none`),
//! requirements laid over the upstream pins (`--override ENV=REQ`,
//! `--constraint ENV=REQ`), and a site environment's Python
//! (`--python 3.11`).
//!
//! Invariant: every choice is checked before any network, and each
//! `--override`/`--constraint` names at least one environment of the run:
//! one that would change nothing is refused, not silently dropped.

use super::request::EnvRequest;
use crate::error::CreateError;

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
            other => Err(CreateError::Usage(format!(
                "--python-interpreter {other:?}: expected carried (the bundle carries the \
                 CPython uv installs) or none (the nodes bring their own CPython of each \
                 environment's version)"
            ))),
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
    pub fn parse(flag: &str, text: &str) -> Result<Self, CreateError> {
        let bad = |why: &str| {
            CreateError::Usage(format!(
                "{flag} {text:?}: {why}; expected ENV=REQ, e.g. {flag} \
                 vllm=flashinfer-python==0.7.4 (ENV: an environment's name, with or without \
                 its -ARCH, or its engine)"
            ))
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

    /// Whether this edit is for `r`.
    fn applies_to(&self, r: &EnvRequest) -> bool {
        let e = self.env.as_str();
        r.name == e
            || r.name.strip_suffix(&format!("-{}", r.arch)) == Some(e)
            || r.engine.as_deref() == Some(e)
    }
}

/// Gives each environment the overrides and constraints that name it;
/// refuses one that names none.
pub fn apply(
    requests: &mut [EnvRequest],
    overrides: &[EnvEdit],
    constraints: &[EnvEdit],
) -> Result<(), CreateError> {
    for (flag, edits, overriding) in [
        ("--override", overrides, true),
        ("--constraint", constraints, false),
    ] {
        for edit in edits {
            let mut used = false;
            for r in requests.iter_mut().filter(|r| edit.applies_to(r)) {
                used = true;
                let list = if overriding {
                    &mut r.overrides
                } else {
                    &mut r.constraints
                };
                list.push(edit.requirement.clone());
            }
            if !used {
                let names: Vec<&str> = requests.iter().map(|r| r.name.as_str()).collect();
                return Err(CreateError::Usage(format!(
                    "{flag} {}={}: no Python environment of this bundle is {:?}; they are {}",
                    edit.env,
                    edit.requirement,
                    edit.env,
                    if names.is_empty() {
                        "none".to_string()
                    } else {
                        names.join(", ")
                    }
                )));
            }
        }
    }
    Ok(())
}

/// `--python 3.11`: a CPython minor version a site environment is
/// resolved for and its nodes run.
pub fn check_python(text: &str) -> Result<String, CreateError> {
    let t = text.trim();
    let ok = t.split_once('.').is_some_and(|(a, b)| {
        a == "3" && !b.is_empty() && b.len() <= 2 && b.bytes().all(|c| c.is_ascii_digit())
    });
    if !ok {
        return Err(CreateError::Usage(format!(
            "--python {text:?}: expected a CPython version such as 3.11 or 3.12"
        )));
    }
    Ok(t.to_string())
}

#[cfg(test)]
mod tests {
    use super::*;

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
