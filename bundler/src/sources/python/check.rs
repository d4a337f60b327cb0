//! Trusting no resolver: every file a lock names is looked up at the
//! publisher it comes from — PyPI's simple JSON API, the extra index's
//! `#sha256=` fragment, GitHub's asset digest — and carried only if that
//! publisher gives a sha256 and it agrees with the lock's (and the size,
//! where both give one). The download then comes from the publisher's URL,
//! not the lock's, and is hashed as it streams against the publisher's
//! sha256. A `.metadata` file is carried when the index advertises one with
//! a sha256, checked against it.

use std::collections::BTreeMap;

use llmgw_shared::Sha256;
use llmgw_shared::manifest::DigestSource;

use super::lock::{LockedFile, LockedPackage};
use super::simple::{IndexFile, ProjectPage, ProvenanceRef, normalize};
use crate::error::PythonError;

/// Where one package comes from.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Origin {
    /// A simple-API index by its base URL (`https://pypi.org/simple`).
    Index(String),
    /// A GitHub release asset, already fetched and verified: its file name,
    /// size and GitHub's sha256.
    Github {
        repo: String,
        tag: String,
        filename: String,
        url: String,
        size: u64,
        sha256: Sha256,
    },
}

/// One file checked against its publisher, ready to plan.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct CheckedFile {
    pub project: String,
    pub version: String,
    pub filename: String,
    /// The publisher's URL: what is downloaded.
    pub url: String,
    /// `None` when neither the publisher nor the lock gives one; the caller
    /// asks the server.
    pub size: Option<u64>,
    pub sha256: Sha256,
    pub requires_python: Option<String>,
    pub yanked: Option<String>,
    pub upload_time: Option<String>,
    /// The `.metadata` file's URL and the publisher's sha256 of it.
    pub metadata: Option<(String, Sha256)>,
    /// The index URL, or `github:owner/repo@tag` (audit only).
    pub origin: String,
    pub digest_source: DigestSource,
    /// Whether a site's own lock gave the same sha256 besides the index
    /// (recorded as a second publisher digest).
    pub also_lock: bool,
    /// The simple API base the file is listed on (`None`: a GitHub
    /// release asset, or a site lock's URL with no index).
    pub index: Option<String>,
    /// What that index says of its PEP 740 provenance.
    pub provenance: ProvenanceRef,
}

/// What checking a lock gives: the files to carry, and the gaps (files
/// without a publisher hash, under `--allow-missing`).
#[derive(Debug, Default)]
pub struct Checked {
    pub files: Vec<CheckedFile>,
    pub gaps: Vec<(String, String)>,
}

/// Checks every file of `packages`. `origin_of` says where a package comes
/// from; `pages` holds every index page needed, by (index, normalized
/// project).
pub fn check(
    env: &str,
    packages: &[LockedPackage],
    origin_of: &dyn Fn(&str) -> Origin,
    pages: &BTreeMap<(String, String), Option<ProjectPage>>,
    allow_missing: bool,
) -> Result<Checked, PythonError> {
    let mut out = Checked::default();
    for p in packages {
        let origin = origin_of(&p.name);
        for f in &p.files {
            llmgw_shared::check_file_name("wheel file name", &f.filename)
                .map_err(|e| PythonError::UnsafeName(Box::new(e)))?;
            let pf = at_publisher(env, p, f, &origin, pages)?;
            let index_label = match &origin {
                Origin::Index(i) => format!("{i}/{}/", normalize(&p.name)),
                Origin::Github { repo, tag, .. } => format!("GitHub's release {tag} of {repo}"),
            };
            let publisher_sha256 = pf
                .sha256
                .as_deref()
                .and_then(|h| Sha256::parse_exact("sha256", h).ok());
            let Some(sha) = publisher_sha256 else {
                if allow_missing {
                    out.gaps.push((
                        format!("{env} {}", f.filename),
                        format!("{index_label} gives no sha256 for it"),
                    ));
                    continue;
                }
                return Err(PythonError::NoPublisherHash {
                    env: env.to_string(),
                    filename: f.filename.clone(),
                    index: index_label,
                });
            };
            let mut file = agreed(env, p, f, pf, sha, index_label)?;
            if let Origin::Index(i) = &origin {
                file.index = Some(i.clone());
            }
            out.files.push(file);
        }
    }
    Ok(out)
}

/// What the publisher lists of file `f` of package `p`: the GitHub
/// release asset the recipe names, or the file on its index's page.
fn at_publisher(
    env: &str,
    p: &LockedPackage,
    f: &LockedFile,
    origin: &Origin,
    pages: &BTreeMap<(String, String), Option<ProjectPage>>,
) -> Result<IndexFile, PythonError> {
    let not_there = |index: String| PythonError::NotAtPublisher {
        env: env.to_string(),
        project: p.name.clone(),
        version: p.version.clone(),
        filename: f.filename.clone(),
        index,
    };
    match origin {
        Origin::Github {
            filename,
            url,
            size,
            sha256,
            ..
        } if *filename == f.filename => Ok(IndexFile {
            source: DigestSource::GithubAssetDigest,
            filename: filename.clone(),
            url: url.clone(),
            sha256: Some(sha256.to_string()),
            size: Some(*size),
            requires_python: None,
            yanked: None,
            upload_time: None,
            core_metadata: None,
            provenance: ProvenanceRef::None,
        }),
        Origin::Github { repo, tag, .. } => Err(not_there(format!("the release {tag} of {repo}"))),
        Origin::Index(index) => pages
            .get(&(index.clone(), normalize(&p.name)))
            .and_then(Option::as_ref)
            .and_then(|pg| pg.file(&f.filename))
            .cloned()
            .ok_or_else(|| not_there(format!("{index}/{}/", normalize(&p.name)))),
    }
}

/// File `f` as carried, once the lock and the publisher (`pf`, hashing to
/// `sha`) agree on its sha256 and size.
fn agreed(
    env: &str,
    p: &LockedPackage,
    f: &LockedFile,
    pf: IndexFile,
    sha: Sha256,
    index_label: String,
) -> Result<CheckedFile, PythonError> {
    let disagree = |what, lock: String, publisher: String| PythonError::Disagree {
        file: format!("{env}: {}", f.filename),
        what,
        lock,
        publisher,
        index: index_label.clone(),
    };
    if let Some(l) = &f.sha256
        && *l != sha
    {
        return Err(disagree("sha256", l.clone(), sha.into()));
    }
    if let (Some(l), Some(s)) = (f.size, pf.size)
        && l != s
    {
        return Err(disagree("size", l.to_string(), s.to_string()));
    }
    let metadata = match &pf.core_metadata {
        Some(Some(h)) => Sha256::parse_exact("core-metadata sha256", h)
            .ok()
            .map(|h| (format!("{}.metadata", pf.url), h)),
        _ => None,
    };
    Ok(CheckedFile {
        project: normalize(&p.name),
        version: p.version.clone(),
        filename: f.filename.clone(),
        url: pf.url.clone(),
        size: pf.size.or(f.size),
        sha256: sha,
        requires_python: pf.requires_python.clone(),
        yanked: pf.yanked.clone(),
        upload_time: pf.upload_time.clone().or(f.upload_time.clone()),
        metadata,
        origin: pf.url,
        digest_source: pf.source,
        also_lock: false,
        index: None,
        provenance: pf.provenance,
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::sources::python::lock::LockedFile;

    const PYPI: &str = "https://pypi.example/simple";
    const TORCH: &str = "https://torch.example/whl/cu129";

    fn locked(name: &str, filename: &str, sha: Option<&str>, size: Option<u64>) -> LockedPackage {
        LockedPackage {
            name: name.into(),
            version: "1.0".into(),
            files: vec![LockedFile {
                url: format!("https://anywhere.example/{filename}"),
                filename: filename.into(),
                size,
                sha256: sha.map(String::from),
                upload_time: None,
            }],
        }
    }

    fn page(filename: &str, sha: Option<&str>, source: DigestSource) -> ProjectPage {
        ProjectPage {
            files: vec![IndexFile {
                source,
                filename: filename.into(),
                url: format!("https://files.example/{filename}"),
                sha256: sha.map(String::from),
                size: Some(5),
                requires_python: Some(">=3.9".into()),
                yanked: None,
                upload_time: Some("2026-01-01T00:00:00Z".into()),
                core_metadata: Some(Some("c".repeat(64))),
                provenance: ProvenanceRef::Unsaid,
            }],
        }
    }

    fn origin(name: &str) -> Origin {
        if name == "torch" {
            Origin::Index(TORCH.into())
        } else {
            Origin::Index(PYPI.into())
        }
    }

    #[test]
    fn a_file_is_carried_from_its_publishers_url_with_its_digest_source() {
        let (a, t) = ("a".repeat(64), "b".repeat(64));
        let mut pages = BTreeMap::new();
        pages.insert(
            (PYPI.to_string(), "six".to_string()),
            Some(page(
                "six-1.0-py3-none-any.whl",
                Some(&a),
                DigestSource::PypiSimpleSha256,
            )),
        );
        pages.insert(
            (TORCH.to_string(), "torch".to_string()),
            Some(page(
                "torch-1.0+cu129-x.whl",
                Some(&t),
                DigestSource::IndexUrlFragment,
            )),
        );
        let pkgs = [
            locked("six", "six-1.0-py3-none-any.whl", Some(&a), Some(5)),
            locked("torch", "torch-1.0+cu129-x.whl", None, None),
        ];
        let c = check("env", &pkgs, &origin, &pages, false).unwrap();
        assert_eq!(c.files.len(), 2);
        assert_eq!(
            c.files[0].url,
            "https://files.example/six-1.0-py3-none-any.whl"
        );
        assert_eq!(c.files[0].digest_source, DigestSource::PypiSimpleSha256);
        assert_eq!(
            c.files[0].metadata,
            Some((
                "https://files.example/six-1.0-py3-none-any.whl.metadata".into(),
                "c".repeat(64).parse().unwrap()
            ))
        );
        assert_eq!(c.files[1].digest_source, DigestSource::IndexUrlFragment);
        assert_eq!(c.files[1].sha256, t);
    }

    #[test]
    fn refusals_name_the_file_the_index_and_both_values() {
        let (a, b) = ("a".repeat(64), "b".repeat(64));
        let f = "six-1.0-py3-none-any.whl";
        let mut pages = BTreeMap::new();
        pages.insert(
            (PYPI.to_string(), "six".to_string()),
            Some(page(f, Some(&a), DigestSource::PypiSimpleSha256)),
        );
        // Every case here is one locked file that the check must refuse.
        let refused =
            |file: LockedPackage| check("env", &[file], &origin, &pages, false).unwrap_err();
        let e = refused(locked("six", f, Some(&b), None));
        assert_eq!(
            e.to_string(),
            format!(
                "env: {f}: the lock uv wrote says sha256 {b} but \
                 https://pypi.example/simple/six/ says {a}; refusing it"
            )
        );
        let e = refused(locked("six", f, Some(&a), Some(6)));
        assert!(e.to_string().contains("says size 6 but"), "{e}");
        let e = refused(locked("six", "six-2.0-x.whl", None, None));
        assert_eq!(
            e.to_string(),
            "env: the lock names six-2.0-x.whl (six 1.0), which \
             https://pypi.example/simple/six/ does not list; refusing a file its publisher does \
             not vouch for"
        );
        let e = refused(locked("six", "../x.whl", None, None));
        assert!(e.to_string().contains("not a safe name"), "{e}");
    }

    #[test]
    fn no_publisher_hash_is_refused_or_a_gap() {
        let f = "torch-1.0+cu129-x.whl";
        let mut pages = BTreeMap::new();
        pages.insert(
            (TORCH.to_string(), "torch".to_string()),
            Some(page(f, None, DigestSource::IndexUrlFragment)),
        );
        let pkgs = [locked("torch", f, Some(&"a".repeat(64)), None)];
        let e = check("env", &pkgs, &origin, &pages, false).unwrap_err();
        assert_eq!(
            e.to_string(),
            format!(
                "env: https://torch.example/whl/cu129/torch/ gives no sha256 for {f}, so it \
                 cannot be verified and is not carried; pass --allow-missing to make the bundle \
                 without it (recorded as a gap)"
            )
        );
        let c = check("env", &pkgs, &origin, &pages, true).unwrap();
        assert!(c.files.is_empty());
        assert_eq!(c.gaps[0].0, format!("env {f}"));
    }
}
