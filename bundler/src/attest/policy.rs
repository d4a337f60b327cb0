//! Who may sign what, for one run: the recipe table's signers, the site's
//! own (`--identity github:…` for release assets, `--identity pypi:…` for
//! a PyPI project's files), the trusted root (`--trusted-root`, else the one
//! the binary embeds), and whether an artifact whose policy expects a
//! signature may be carried without one (`--allow-unsigned-upstream`).

use std::path::Path;
use std::sync::Arc;

use llmgw_shared::manifest::AdmittedBy;
use llmgw_shared::provenance::{Identity, MAX_TRUSTED_ROOT, TrustedRoot};
use llmgw_shared::recipe::{pypi_signers_of, signers_of};

use crate::error::{CreateError, SignatureError};

/// The run's signature policy.
#[derive(Debug, Clone)]
pub struct SignaturePolicy {
    /// The site's rows: (source, who may sign).
    site: Vec<(Source, Identity)>,
    root: Arc<TrustedRoot>,
    root_from: String,
    allow_unsigned: bool,
}

impl SignaturePolicy {
    /// The policy from the flags (or the spec file's keys).
    pub fn from_flags(
        identities: &[String],
        trusted_root: Option<&Path>,
        allow_unsigned: bool,
    ) -> Result<Self, CreateError> {
        let site = identities
            .iter()
            .map(|text| parse_identity(text))
            .collect::<Result<Vec<_>, _>>()?;
        let (root, root_from) = match trusted_root {
            None => (
                TrustedRoot::embedded(),
                llmgw_shared::provenance::EMBEDDED_ROOT_FROM.to_string(),
            ),
            Some(path) => {
                let bytes = read_bounded(path)?;
                let from = format!("--trusted-root {}", path.display());
                let root = TrustedRoot::parse(&bytes, &from).map_err(|source| {
                    SignatureError::TrustedRoot {
                        path: path.to_path_buf(),
                        source,
                    }
                })?;
                let name = path.file_name().map_or_else(
                    || path.display().to_string(),
                    |n| n.to_string_lossy().into_owned(),
                );
                (root, format!("site's own ({name})"))
            }
        };
        Ok(Self {
            site,
            root: Arc::new(root),
            root_from,
            allow_unsigned,
        })
    }

    /// Who may sign release assets of `repo`, and whether a signature is
    /// required; `None` when nobody is named (nothing is looked up).
    pub fn signers_for_release(&self, repo: &str) -> Option<(Vec<Identity>, bool)> {
        let mut required = false;
        let mut who: Vec<Identity> = Vec::new();
        for s in signers_of(repo) {
            required |= s.always_signs;
            who.push(Identity {
                issuer: s.issuer.to_string(),
                identity: s.identity.to_string(),
            });
        }
        for (source, identity) in &self.site {
            if matches!(source, Source::Github(r) if r.eq_ignore_ascii_case(repo)) {
                // A site that names a signer expects the signature.
                required = true;
                who.push(identity.clone());
            }
        }
        (!who.is_empty()).then_some((who, required))
    }

    /// Who may attest the files of PyPI project `project` (normalized),
    /// whether every file must be attested, and which policy said so;
    /// `None` when neither the table nor the site names anyone (the
    /// publisher PyPI names is then held against the certificate). The
    /// site's rows replace the table's: a site that names a signer
    /// expects the signature.
    pub fn signers_for_pypi(&self, project: &str) -> Option<(Vec<Identity>, bool, AdmittedBy)> {
        let site: Vec<Identity> = self
            .site
            .iter()
            .filter(|(s, _)| matches!(s, Source::Pypi(p) if p == project))
            .map(|(_, id)| id.clone())
            .collect();
        if !site.is_empty() {
            return Some((site, true, AdmittedBy::Site));
        }
        let mut required = false;
        let table: Vec<Identity> = pypi_signers_of(project)
            .map(|s| {
                required |= s.always_signs;
                Identity {
                    issuer: s.issuer.to_string(),
                    identity: s.identity.to_string(),
                }
            })
            .collect();
        (!table.is_empty()).then_some((table, required, AdmittedBy::RecipeTable))
    }

    /// The trusted root every bundle is verified against.
    pub fn root(&self) -> &TrustedRoot {
        &self.root
    }

    /// Where the root came from, as recorded.
    pub fn root_from(&self) -> &str {
        &self.root_from
    }

    /// Whether `--allow-unsigned-upstream` was given.
    pub fn allow_unsigned(&self) -> bool {
        self.allow_unsigned
    }
}

impl Default for SignaturePolicy {
    fn default() -> Self {
        Self {
            site: Vec::new(),
            root: Arc::new(TrustedRoot::embedded()),
            root_from: llmgw_shared::provenance::EMBEDDED_ROOT_FROM.to_string(),
            allow_unsigned: false,
        }
    }
}

/// What a site's `--identity` row is for.
#[derive(Debug, Clone, PartialEq, Eq)]
enum Source {
    /// A GitHub release repository, `owner/name`.
    Github(String),
    /// A PyPI project, PEP 503 normalized.
    Pypi(String),
}

/// `github:OWNER/REPO=ISSUER,IDENTITY` or `pypi:PROJECT=ISSUER,IDENTITY`.
fn parse_identity(text: &str) -> Result<(Source, Identity), SignatureError> {
    let bad = |reason| SignatureError::IdentityFlag {
        text: text.to_string(),
        reason,
    };
    let (source, rest) = text.split_once('=').ok_or_else(|| bad("no `=`"))?;
    let source = if let Some(repo) = source.strip_prefix("github:") {
        llmgw_shared::check_repo_id("--identity repository", repo)
            .map_err(|_| bad("the repository is not OWNER/REPO"))?;
        Source::Github(repo.to_string())
    } else if let Some(project) = source.strip_prefix("pypi:") {
        // PEP 508 names: letters, digits, `-`, `_`, `.`.
        let ok = !project.is_empty()
            && project.len() <= 200
            && project
                .chars()
                .all(|c| c.is_ascii_alphanumeric() || matches!(c, '-' | '_' | '.'));
        if !ok {
            return Err(bad("the project is not a PyPI project name"));
        }
        Source::Pypi(llmgw_shared::pep503_normalize(project))
    } else {
        return Err(bad("the source must start with github: or pypi:"));
    };
    let (issuer, identity) = rest
        .split_once(',')
        .ok_or_else(|| bad("no `,` between the issuer and the identity"))?;
    for v in [issuer, identity] {
        if !(v.starts_with("https://") || v.contains('@'))
            || v.len() > 2000
            || v.chars().any(char::is_control)
        {
            return Err(bad(
                "the issuer and the identity must be URLs (or an email identity)",
            ));
        }
    }
    Ok((
        source,
        Identity {
            issuer: issuer.to_string(),
            identity: identity.to_string(),
        },
    ))
}

/// The file at `path`, refused past [`MAX_TRUSTED_ROOT`] unread.
fn read_bounded(path: &Path) -> Result<Vec<u8>, CreateError> {
    use std::io::Read;
    let file = std::fs::File::open(path).map_err(|e| CreateError::io(path, e))?;
    let mut bytes = Vec::new();
    file.take(MAX_TRUSTED_ROOT as u64 + 1)
        .read_to_end(&mut bytes)
        .map_err(|e| CreateError::io(path, e))?;
    Ok(bytes)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn identity_flags() {
        let (repo, id) = parse_identity(
            "github:ggml-org/llama.cpp=https://token.actions.githubusercontent.com,\
             https://github.com/acme/fork/.github/workflows/release.yml@",
        )
        .unwrap();
        assert_eq!(repo, Source::Github("ggml-org/llama.cpp".into()));
        assert!(id.identity.ends_with("release.yml@"));
        let (project, id) =
            parse_identity("pypi:RFC8785=https://github.com/login/oauth,william@yossarian.net")
                .unwrap();
        assert_eq!(project, Source::Pypi("rfc8785".into()));
        assert_eq!(id.identity, "william@yossarian.net");
        for bad in [
            "ggml-org/llama.cpp=https://a,https://b",
            "github:ggml-org/llama.cpp",
            "github:ggml-org/llama.cpp=https://a",
            "github:../x=https://a,https://b",
            "github:a/b=ftp://a,https://b",
            "pypi:=https://a,https://b",
            "pypi:a/b=https://a,https://b",
            "npm:a=https://a,https://b",
        ] {
            let err = parse_identity(bad).unwrap_err().to_string();
            assert!(err.starts_with("--identity"), "{bad}: {err}");
        }
    }

    #[test]
    fn the_table_and_the_site_name_signers() {
        let p = SignaturePolicy::default();
        let (who, required) = p.signers_for_release("ggml-org/llama.cpp").unwrap();
        assert_eq!(who.len(), 1);
        assert!(!required);
        assert!(p.signers_for_release("acme/bigrel").is_none());
        let site = SignaturePolicy::from_flags(
            &["github:acme/bigrel=https://issuer.example,https://id.example/w@".into()],
            None,
            false,
        )
        .unwrap();
        let (who, required) = site.signers_for_release("acme/bigrel").unwrap();
        assert_eq!(who.len(), 1);
        assert!(required);
        // The PyPI table names nobody (PYPI_SIGNERS); a site does.
        assert!(p.signers_for_pypi("rfc8785").is_none());
        let site = SignaturePolicy::from_flags(
            &["pypi:rfc8785=https://github.com/login/oauth,william@yossarian.net".into()],
            None,
            false,
        )
        .unwrap();
        let (who, required, by) = site.signers_for_pypi("rfc8785").unwrap();
        assert_eq!((who.len(), required, by), (1, true, AdmittedBy::Site));
        assert!(site.signers_for_release("rfc8785").is_none());
    }
}
