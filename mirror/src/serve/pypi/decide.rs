//! What a `/pypi/{env}/…` request gets, decided from the index alone: one
//! function returning an [`Outcome`], turned into a response in `render`.
//!
//! Invariant: every name in the URL (environment, project, file) is only a
//! key into [`PypiIndex`]; anything not found there is a 404 — never a
//! 401/403, which some clients read as "try the next index" or "ask for
//! credentials" — so a node never falls through to another index by
//! accident.

use http::Method;
use llmgw_shared::manifest::SiteLockFormat;
use llmgw_shared::pep503_normalize;
use llmgw_shared::shown;

use super::accept::{self, Format};
use crate::serve::http::paths::{self, quote_path};
use crate::serve::index::Blob;
use crate::serve::index::pypi::{PyEnv, PyFile, PypiIndex};

/// What to answer.
#[derive(Debug)]
pub enum Outcome<'a> {
    /// `/pypi/{env}/simple/`: the project list.
    Root {
        env: &'a PyEnv,
        format: Format,
    },
    /// `/pypi/{env}/simple/{project}/`: the project's files.
    Project {
        project: &'a str,
        files: Vec<&'a PyFile>,
        format: Format,
    },
    /// A wheel or its `.metadata` file.
    File {
        blob: &'a Blob,
        filename: String,
    },
    /// `/pypi/{env}/pylock.toml`, or `/pypi/{env}/uv.lock` for a site's
    /// `uv.lock`.
    Lock {
        env: &'a PyEnv,
    },
    /// 301 to this path (absolute, no host): the trailing slash, the
    /// normalized project name.
    Redirect(String),
    NotFound(String),
    NotAcceptable,
    MethodNotAllowed,
}

/// Decides the answer for the segments after `/pypi/`, still percent-encoded.
pub fn decide<'a>(
    ix: &'a PypiIndex,
    method: &Method,
    segs: &[&str],
    accept: Option<&str>,
) -> Outcome<'a> {
    if method != Method::GET && method != Method::HEAD {
        return Outcome::MethodNotAllowed;
    }
    let Some((env_raw, rest)) = segs.split_first() else {
        return not_found("no environment named");
    };
    let Some(env) = paths::decode(env_raw).ok().and_then(|n| ix.env(&n)) else {
        return not_found(format!(
            "this mirror holds no Python environment \"{}\"; GET /v1/index lists the environments held",
            shown(env_raw)
        ));
    };
    let base = format!("/pypi/{}", quote_path(&env.name));
    match rest {
        ["simple"] => Outcome::Redirect(format!("{base}/simple/")),
        ["simple", ""] => match accept::choose(accept) {
            Some(format) => Outcome::Root { env, format },
            None => Outcome::NotAcceptable,
        },
        ["simple", raw] | ["simple", raw, ""] => {
            let Ok(asked) = paths::decode(raw) else {
                return not_found("the project name is not valid UTF-8");
            };
            let normalized = pep503_normalize(&asked);
            let Some((project, files)) = env
                .projects
                .get_key_value(&normalized)
                .and_then(|(k, _)| Some((k.as_str(), env.project_files(k)?)))
            else {
                return not_found(format!(
                    "environment {} has no project \"{}\"",
                    env.name,
                    shown(&asked)
                ));
            };
            if rest.len() == 2 || asked != normalized {
                return Outcome::Redirect(format!("{base}/simple/{}/", quote_path(project)));
            }
            match accept::choose(accept) {
                Some(format) => Outcome::Project {
                    project,
                    files,
                    format,
                },
                None => Outcome::NotAcceptable,
            }
        }
        ["files", raw] => {
            let Ok(name) = paths::decode(raw) else {
                return not_found("the file name is not valid UTF-8");
            };
            if let Some(f) = env.files.get(&name) {
                return Outcome::File {
                    blob: &f.blob,
                    filename: name,
                };
            }
            let metadata = name
                .strip_suffix(".metadata")
                .and_then(|wheel| env.files.get(wheel))
                .and_then(|f| f.metadata.as_ref());
            match metadata {
                Some(blob) => Outcome::File {
                    blob,
                    filename: name,
                },
                None => not_found(format!(
                    "environment {} has no file \"{}\"",
                    env.name,
                    shown(&name)
                )),
            }
        }
        [name @ ("pylock.toml" | "uv.lock" | "pyproject.toml")] => lock_route(env, name, &base),
        _ => not_found(format!(
            "not a route of environment {}: try {base}/simple/ or {base}/{}",
            env.name,
            lock_name(env)
        )),
    }
}

/// The name the environment's lock is served under: a site's `uv.lock`
/// as such, any other as `pylock.toml`.
fn lock_name(env: &PyEnv) -> &'static str {
    match env.site_lock.as_ref().map(|s| s.format) {
        Some(SiteLockFormat::UvLock) => "uv.lock",
        _ => "pylock.toml",
    }
}

/// `/pypi/{env}/pylock.toml`, `uv.lock` (whichever the environment holds)
/// and `pyproject.toml` (a site's uv.lock project's).
fn lock_route<'a>(env: &'a PyEnv, name: &str, base: &str) -> Outcome<'a> {
    let held = lock_name(env);
    if name == held {
        return Outcome::Lock { env };
    }
    if name == "pyproject.toml" {
        return match env.site_lock.as_ref().and_then(|s| s.project.as_ref()) {
            Some(blob) => Outcome::File {
                blob,
                filename: "pyproject.toml".into(),
            },
            None => not_found(format!(
                "environment {} is not a site's uv.lock project, so has no pyproject.toml",
                env.name
            )),
        };
    }
    not_found(format!(
        "environment {} holds a {held}, not a {name}: GET {base}/{held}",
        env.name
    ))
}

fn not_found(why: impl Into<String>) -> Outcome<'static> {
    Outcome::NotFound(why.into())
}

#[cfg(test)]
mod tests {
    use super::*;
    use llmgw_shared::manifest::*;

    fn index() -> PypiIndex {
        let file = |project: &str, version: &str, filename: &str, seed: u8| PythonFile {
            project: project.into(),
            version: version.into(),
            filename: filename.into(),
            size: 10,
            sha256: format!("{seed:02x}").repeat(32).parse().unwrap(),
            requires_python: None,
            yanked: None,
            upload_time: None,
            metadata: Some(MetadataFile {
                sha256: format!("{:02x}", seed + 100).repeat(32).parse().unwrap(),
                size: 5,
                publisher_digests: vec![],
            }),
            origin: "https://example/".into(),
            publisher_digests: vec![],
        };
        let env = PythonEnv {
            name: "site-amd64".into(),
            engine: None,
            version: None,
            variant: None,
            arch: "amd64".into(),
            python: "3.12".into(),
            platform: "x86_64-manylinux_2_28".into(),
            requirements: vec![],
            indexes: vec![],
            resolver: Resolver {
                name: "uv".into(),
                version: "0.13.9".into(),
            },
            lock: BlobRef {
                sha256: "ff".repeat(32).parse().unwrap(),
                size: 3,
            },
            interpreter: None,
            os_packages: vec![],
            free_gb: None,
            note: None,
            node_interpreter: None,
            site_lock: None,
            overrides: Vec::new(),
            constraints: Vec::new(),
            files: vec![
                file(
                    "torch",
                    "2.11.0+cu129",
                    "torch-2.11.0+cu129-cp312-cp312-linux_x86_64.whl",
                    1,
                ),
                file(
                    "huggingface-hub",
                    "1.0",
                    "huggingface_hub-1.0-py3-none-any.whl",
                    2,
                ),
            ],
        };
        let mut m = Manifest::new(vec!["amd64".into()], 0);
        m.python_envs.push(env);
        PypiIndex::build(&[crate::test_ids::held("b", m)], &Default::default())
    }

    fn get<'a>(ix: &'a PypiIndex, path: &str) -> Outcome<'a> {
        let segs: Vec<&str> = path.split('/').collect();
        decide(
            ix,
            &Method::GET,
            &segs,
            Some("application/vnd.pypi.simple.v1+json"),
        )
    }

    #[test]
    fn names_slashes_and_misses() {
        let ix = index();
        assert!(
            matches!(get(&ix, "site-amd64/simple"), Outcome::Redirect(p) if p == "/pypi/site-amd64/simple/")
        );
        assert!(matches!(
            get(&ix, "SITE-amd64/simple/"),
            Outcome::Root { .. }
        ));
        assert!(
            matches!(get(&ix, "site-amd64/simple/Huggingface_Hub/"), Outcome::Redirect(p) if p == "/pypi/site-amd64/simple/huggingface-hub/")
        );
        assert!(
            matches!(get(&ix, "site-amd64/simple/huggingface-hub"), Outcome::Redirect(p) if p == "/pypi/site-amd64/simple/huggingface-hub/")
        );
        assert!(
            matches!(get(&ix, "site-amd64/simple/huggingface-hub/"), Outcome::Project { files, .. } if files.len() == 1)
        );
        assert!(matches!(
            get(&ix, "site-amd64/simple/numpy/"),
            Outcome::NotFound(_)
        ));
        assert!(matches!(
            get(&ix, "other-amd64/simple/"),
            Outcome::NotFound(_)
        ));
        assert!(matches!(
            get(&ix, "site-amd64/simple/torch/x"),
            Outcome::NotFound(_)
        ));
        assert!(matches!(get(&ix, "site-amd64"), Outcome::NotFound(_)));
        assert!(matches!(
            decide(&ix, &Method::POST, &["site-amd64", "simple", ""], None),
            Outcome::MethodNotAllowed
        ));
        assert!(matches!(
            decide(
                &ix,
                &Method::GET,
                &["site-amd64", "simple", ""],
                Some("application/json")
            ),
            Outcome::NotAcceptable
        ));
    }

    #[test]
    fn files_with_plus_either_way_and_metadata() {
        let ix = index();
        for raw in [
            "torch-2.11.0+cu129-cp312-cp312-linux_x86_64.whl",
            "torch-2.11.0%2Bcu129-cp312-cp312-linux_x86_64.whl",
            "torch-2.11.0%2bcu129-cp312-cp312-linux_x86_64.whl",
        ] {
            match get(&ix, &format!("site-amd64/files/{raw}")) {
                Outcome::File { blob, .. } => assert_eq!(blob.sha256, "01".repeat(32)),
                other => panic!("{raw}: {other:?}"),
            }
        }
        match get(
            &ix,
            "site-amd64/files/torch-2.11.0%2Bcu129-cp312-cp312-linux_x86_64.whl.metadata",
        ) {
            Outcome::File { blob, .. } => assert_eq!(blob.sha256, "65".repeat(32)),
            other => panic!("{other:?}"),
        }
        assert!(matches!(
            get(
                &ix,
                "site-amd64/files/torch-2.11.0 cu129-cp312-cp312-linux_x86_64.whl"
            ),
            Outcome::NotFound(_)
        ));
        assert!(matches!(
            get(&ix, "site-amd64/files/..%2F..%2Fetc%2Fpasswd"),
            Outcome::NotFound(_)
        ));
        assert!(matches!(
            get(&ix, "site-amd64/pylock.toml"),
            Outcome::Lock { .. }
        ));
    }
}
