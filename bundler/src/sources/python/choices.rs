//! The requirements an operator lays over the upstream pins
//! (`--override ENV=REQ`, `--constraint ENV=REQ`, read in
//! `spec::python`), given to the environments of the run they name.
//!
//! Invariant: each `--override`/`--constraint` names at least one
//! environment of the run: one that would change nothing is refused, not
//! silently dropped.

use super::request::EnvRequest;
use crate::error::{CreateError, RequestError};
use crate::spec::python::EnvEdit;

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
            for r in requests.iter_mut().filter(|r| applies_to(edit, r)) {
                used = true;
                let list = if overriding {
                    &mut r.overrides
                } else {
                    &mut r.constraints
                };
                list.push(edit.requirement.clone());
            }
            if !used {
                let names: Vec<String> = requests.iter().map(|r| r.name.clone()).collect();
                return Err(RequestError::EditNamesNothing {
                    flag,
                    env: edit.env.clone(),
                    requirement: edit.requirement.clone(),
                    envs: names,
                }
                .into());
            }
        }
    }
    Ok(())
}

/// Whether `edit` is for `r`.
fn applies_to(edit: &EnvEdit, r: &EnvRequest) -> bool {
    let e = edit.env.as_str();
    r.name == e
        || r.name.strip_suffix(&format!("-{}", r.arch)) == Some(e)
        || r.engine.as_deref() == Some(e)
}
