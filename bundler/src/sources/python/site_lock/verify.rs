//! Checking the wheels a site lock names: against the lock's own sha256,
//! and, where the lock names an index, against what that index says of the
//! same file (sha256, and size where both give one). The download then
//! comes from the index's URL and is hashed as it streams.
//!
//! Invariant: a file enters the plan only with the lock's sha256, and with
//! its index's equal to it wherever the lock names an index.

use std::collections::BTreeMap;
use std::path::Path;

use llmgw_shared::Sha256;
use llmgw_shared::manifest::DigestSource;

use super::super::Ctx;
use super::super::check::{Checked, CheckedFile};
use super::super::simple::{self, IndexFile, ProjectPage, normalize};
use super::SitePackage;
use crate::error::{CreateError, SiteLockError};

/// Why a check failed: the lock (named), or reaching an index.
#[derive(Debug)]
pub enum Failed {
    Lock(Box<SiteLockError>),
    Other(CreateError),
}

/// The checked files of `packages`, every index page fetched once.
pub async fn verify(
    ctx: &Ctx<'_>,
    lock: &Path,
    packages: &[SitePackage],
    pages: &mut BTreeMap<(String, String), Option<ProjectPage>>,
) -> Result<Checked, Failed> {
    let wanted = packages
        .iter()
        .filter_map(|p| Some((p.index.clone()?, normalize(&p.name))));
    simple::fetch_pages(ctx.http, ctx.jobs, wanted, pages)
        .await
        .map_err(Failed::Other)?;
    let mut out = Checked::default();
    for p in packages {
        for w in &p.wheels {
            out.files
                .push(check_one(lock, p, w, pages).map_err(Failed::Lock)?);
        }
    }
    Ok(out)
}

fn check_one(
    lock: &Path,
    p: &SitePackage,
    w: &super::SiteFile,
    pages: &BTreeMap<(String, String), Option<ProjectPage>>,
) -> Result<CheckedFile, Box<SiteLockError>> {
    llmgw_shared::check_file_name("wheel file name", &w.filename).map_err(|_| {
        Box::new(SiteLockError::NoFileName {
            lock: lock.to_path_buf(),
            package: p.name.clone(),
            version: p.version.clone(),
            file: w.filename.clone(),
        })
    })?;
    let sha = Sha256::parse_exact("sha256", &w.sha256).map_err(|_| {
        Box::new(SiteLockError::Hash {
            lock: lock.to_path_buf(),
            package: p.name.clone(),
            version: p.version.clone(),
            file: w.filename.clone(),
            problem: "a sha256 that is not one".into(),
        })
    })?;
    let project = normalize(&p.name);
    let mut file = CheckedFile {
        project: project.clone(),
        version: p.version.clone(),
        filename: w.filename.clone(),
        url: w.url.clone(),
        size: w.size,
        sha256: sha.clone(),
        requires_python: None,
        yanked: None,
        upload_time: None,
        metadata: None,
        origin: w.url.clone(),
        digest_source: DigestSource::SiteLockSha256,
        also_lock: false,
        index: None,
        provenance: Default::default(),
    };
    let Some(index) = &p.index else {
        return Ok(file);
    };
    let label = format!("{}/{project}/", index.trim_end_matches('/'));
    let listed = pages
        .get(&(index.clone(), project.clone()))
        .and_then(Option::as_ref)
        .and_then(|pg| pg.file(&w.filename));
    let Some(at) = listed else {
        return Err(Box::new(SiteLockError::NotAtIndex {
            lock: lock.to_path_buf(),
            package: p.name.clone(),
            version: p.version.clone(),
            file: w.filename.clone(),
            index: label,
        }));
    };
    let disagree = |what, in_lock: String, at_index: String| {
        Box::new(SiteLockError::Disagree {
            lock: lock.to_path_buf(),
            file: w.filename.clone(),
            what,
            in_lock,
            at_index,
            index: label.clone(),
        })
    };
    let Some(index_sha) = at.sha256.as_deref() else {
        return Err(Box::new(SiteLockError::IndexNoHash {
            lock: lock.to_path_buf(),
            file: w.filename.clone(),
            index: label,
        }));
    };
    if !index_sha.eq_ignore_ascii_case(&w.sha256) {
        return Err(disagree("sha256", w.sha256.clone(), index_sha.to_string()));
    }
    if let (Some(l), Some(i)) = (w.size, at.size)
        && l != i
    {
        return Err(disagree("size", l.to_string(), i.to_string()));
    }
    as_listed(&mut file, at, index);
    Ok(file)
}

/// `file` as its index lists it, the lock agreeing: the index's URL,
/// size, metadata and provenance, its digest recorded from both.
fn as_listed(file: &mut CheckedFile, at: &IndexFile, index: &str) {
    file.url = at.url.clone();
    file.origin = at.url.clone();
    file.index = Some(index.to_string());
    file.provenance = at.provenance.clone();
    file.size = at.size.or(file.size);
    file.requires_python = at.requires_python.clone();
    file.yanked = at.yanked.clone();
    file.upload_time = at.upload_time.clone();
    file.metadata = match &at.core_metadata {
        Some(Some(h)) => Sha256::parse_exact("core-metadata sha256", h)
            .ok()
            .map(|h| (format!("{}.metadata", at.url), h)),
        _ => None,
    };
    file.digest_source = at.source;
    file.also_lock = true;
}
