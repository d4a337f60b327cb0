//! The checks every manifest passes before anything trusts it: safe names,
//! publisher digests that agree with the bytes' own (the bytes' own are
//! well formed by type: [`Sha256`], [`crate::GitOid`], checked as they
//! were read), no artifact listed
//! twice, one size per sha256, and the format-2 parts only in format 2.
//!
//! Invariant: a manifest that passes [`Manifest::validate`] names nothing
//! that could become a path outside its folder and claims nothing about a
//! blob that contradicts another claim in the same manifest. Whether the
//! bytes match is import's job; whether the claims are *true* is the
//! signature's and the carried hash's.

use std::collections::{BTreeMap, BTreeSet};

use super::artifacts::{BlobRef, HfFile, HfRepo, Release, RepoKind};
use super::claims::Claims;
use super::delivery::{Delta, Volumes};
use super::digests::check_digests;
use super::python::PythonEnv;
use super::{LLMGW_ENGINE, Manifest, ManifestError};
use crate::names;
use crate::time::parse_rfc3339_utc;

impl Manifest {
    /// Checks names, digests and consistency. Called by
    /// [`Manifest::from_json_bytes`]; the bundler calls it before writing.
    pub fn validate(&self) -> Result<(), ManifestError> {
        if self.format_version == 1 {
            self.refuse_format_2_parts()?;
        }
        self.check_declared_format()?;
        let mut claims = Claims::default();
        for arch in &self.arches {
            names::check_file_name("architecture", arch)?;
        }
        validate_releases(&self.releases, &mut claims)?;
        validate_repos(&self.repos, &mut claims)?;
        validate_python_envs(&self.python_envs, &self.releases, &mut claims)?;
        super::validate_oci::validate_oci(&self.images, &self.charts, &mut claims)?;
        super::extras::validate_extras(self.format_version, &self.extras, &mut claims)?;
        if let Some(e) = &self.evidence {
            claims.claim(&e.sbom.sha256, e.sbom.size, "the SBOM".to_string())?;
            e.validate(&self.repos)?;
            if let Some(s) = &e.signatures {
                let mut carried = self.blobs();
                for b in s.blobs() {
                    carried.remove(&b.sha256);
                }
                s.validate(&carried, &mut claims)?;
            }
        }
        if self.format_version >= 2 {
            check_time("created", &self.created)?;
            if let Some(expires) = &self.expires {
                check_time("expires", expires)?;
            }
            if let Some(channel) = &self.channel {
                names::check_file_name("channel", channel)?;
            }
        }
        if let Some(delta) = &self.delta {
            claim_repairs(self, delta, &mut claims)?;
            validate_delta(delta, &claims)?;
        }
        if let Some(volumes) = &self.volumes {
            validate_volumes(volumes, self.delta.as_ref(), &claims)?;
        }
        Ok(())
    }

    /// A format 1 manifest may not use anything format 2 added: an old
    /// reader would silently ignore it.
    fn refuse_format_2_parts(&self) -> Result<(), ManifestError> {
        let mut found = Vec::new();
        if self.channel.is_some() {
            found.push("channel");
        }
        if self.sequence.is_some() {
            found.push("sequence");
        }
        if self.expires.is_some() {
            found.push("expires");
        }
        if !self.python_envs.is_empty() {
            found.push("python_envs");
        }
        if self.delta.is_some() {
            found.push("delta");
        }
        if self.volumes.is_some() {
            found.push("volumes");
        }
        if self.repos.iter().any(|r| r.ref_kind.is_some()) {
            found.push("ref_kind");
        }
        let new_sources = self
            .releases
            .iter()
            .flat_map(|r| r.assets.iter().flat_map(|a| &a.publisher_digests))
            .chain(
                self.repos
                    .iter()
                    .flat_map(|r| r.files.iter().flat_map(|f| &f.publisher_digests)),
            )
            .any(|d| !d.source.in_format_1());
        if new_sources {
            found.push("a format 2 digest source");
        }
        if found.is_empty() {
            Ok(())
        } else {
            Err(ManifestError::Inconsistent(format!(
                "it says format 1 but uses {} of format 2",
                found.join(", ")
            )))
        }
    }
}

fn validate_releases(releases: &[Release], claims: &mut Claims) -> Result<(), ManifestError> {
    let mut seen = BTreeSet::new();
    for r in releases {
        names::check_ref_name("release tag", &r.tag)?;
        names::check_file_name("engine", &r.engine)?;
        if !seen.insert((r.repo.to_ascii_lowercase(), &r.tag)) {
            return Err(ManifestError::Inconsistent(format!(
                "release {} {} is listed twice",
                r.repo, r.tag
            )));
        }
        let mut asset_names = BTreeSet::new();
        for a in &r.assets {
            names::check_file_name("asset name", &a.name)?;
            let who = format!("{} {} {}", r.repo, r.tag, a.name);
            if !asset_names.insert(a.name.as_str()) {
                return Err(ManifestError::Inconsistent(format!(
                    "{who} is listed twice"
                )));
            }
            check_digests(&who, &a.publisher_digests, &a.sha256, None)?;
            claims.claim(&a.sha256, a.size, who)?;
        }
        for b in &r.builds {
            names::check_file_name("architecture", &b.arch)?;
            names::check_file_name("variant", &b.variant)?;
            for name in &b.assets {
                names::check_file_name("asset name", name)?;
            }
        }
        match (&r.signature, r.engine == LLMGW_ENGINE) {
            (None, true) => {
                return Err(ManifestError::Inconsistent(format!(
                    "llmgw release {} {} carries no signature; an llmgw release is only \
                     accepted with its signed SHA256SUMS",
                    r.repo, r.tag
                )));
            }
            (Some(s), _) => {
                for name in [&s.sums, &s.minisig] {
                    if !asset_names.contains(name.as_str()) {
                        return Err(ManifestError::Inconsistent(format!(
                            "release {} {} names {name} as its signature file but does not carry it",
                            r.repo, r.tag
                        )));
                    }
                }
            }
            (None, false) => {}
        }
    }
    Ok(())
}

/// Each Hub repository entry: a safe revision, a 40-hex commit, safe paths
/// listed once, digests that agree with the bytes'. One commit may be
/// carried under several revisions (`main` and the tag `v1` naming the
/// same commit: an entry each, so that both names are served), never
/// twice under one; see [`one_tree`] for what its entries must agree on.
fn validate_repos(repos: &[HfRepo], claims: &mut Claims) -> Result<(), ManifestError> {
    let mut seen = BTreeSet::new();
    for repo in repos {
        names::check_ref_name("revision", &repo.revision)?;
        if !names::is_sha1_hex(&repo.commit) {
            return Err(ManifestError::BadValue {
                what: format!("commit of {}", repo.id),
                expected: "40 lower-case hex digits",
                found: repo.commit.clone(),
            });
        }
        let key = (repo.kind, repo.id.to_ascii_lowercase(), &repo.commit);
        if !seen.insert((key, &repo.revision)) {
            return Err(ManifestError::Inconsistent(format!(
                "repository {} at {} is listed twice as revision {}",
                repo.id,
                repo.commit,
                crate::shown(&repo.revision)
            )));
        }
        let mut paths = BTreeSet::new();
        for f in &repo.files {
            names::check_relative_path("file path", &f.path)?;
            let who = format!("{} {}", repo.id, f.path);
            if !paths.insert(f.path.as_str()) {
                return Err(ManifestError::Inconsistent(format!(
                    "{who} is listed twice"
                )));
            }
            let git = (!f.lfs).then_some(f.git_oid.as_str());
            check_digests(&who, &f.publisher_digests, &f.sha256, git)?;
            claims.claim(&f.sha256, f.size, who)?;
        }
        super::kernel_repo::check_kernel_repo(repo)?;
    }
    one_tree(repos)
}

/// The entries carrying one commit under several revisions describe one
/// tree: a path listed by two of them has the same content (sha256, size,
/// git oid, LFS or not) in both. Only a commit carried more than once is
/// gathered, so a manifest of one large repository costs nothing here.
fn one_tree(repos: &[HfRepo]) -> Result<(), ManifestError> {
    type Key<'a> = (RepoKind, String, &'a str);
    fn key(r: &HfRepo) -> Key<'_> {
        (r.kind, r.id.to_ascii_lowercase(), r.commit.as_str())
    }
    let mut first: BTreeMap<Key, &HfRepo> = BTreeMap::new();
    let mut trees: BTreeMap<Key, BTreeMap<&str, (&HfFile, &str)>> = BTreeMap::new();
    for repo in repos {
        let Some(earlier) = first.get(&key(repo)).copied() else {
            first.insert(key(repo), repo);
            continue;
        };
        let tree = trees.entry(key(repo)).or_insert_with(|| {
            let rev = earlier.revision.as_str();
            earlier
                .files
                .iter()
                .map(|f| (f.path.as_str(), (f, rev)))
                .collect()
        });
        for f in &repo.files {
            let (e, rev) = *tree.entry(&f.path).or_insert((f, &repo.revision));
            let same = e.sha256 == f.sha256 && e.size == f.size;
            if !(same && e.git_oid == f.git_oid && e.lfs == f.lfs) {
                return Err(ManifestError::Inconsistent(format!(
                    "{} {} at commit {} is listed under revisions {} and {} with different \
                     contents (sha256 {} and {}); one commit has one content per path: make \
                     the bundle again",
                    repo.id,
                    crate::shown(&f.path),
                    repo.commit,
                    crate::shown(rev),
                    crate::shown(&repo.revision),
                    e.sha256,
                    f.sha256
                )));
            }
        }
    }
    Ok(())
}

fn validate_python_envs(
    envs: &[PythonEnv],
    releases: &[Release],
    claims: &mut Claims,
) -> Result<(), ManifestError> {
    let mut seen = BTreeSet::new();
    for env in envs {
        names::check_file_name("python environment name", &env.name)?;
        if !seen.insert(env.name.to_ascii_lowercase()) {
            return Err(ManifestError::Inconsistent(format!(
                "python environment {} is listed twice",
                env.name
            )));
        }
        names::check_file_name("architecture", &env.arch)?;
        for part in [&env.engine, &env.version, &env.variant]
            .into_iter()
            .flatten()
        {
            names::check_file_name("python environment part", part)?;
        }
        claims.claim(
            &env.lock.sha256,
            env.lock.size,
            format!("the lock of {}", env.name),
        )?;
        if let Some(s) = &env.site_lock {
            names::check_file_name("site lock file name", &s.file_name)?;
            if let Some(p) = &s.project {
                claims.claim(
                    &p.sha256,
                    p.size,
                    format!("the pyproject.toml of {}", env.name),
                )?;
            }
        }
        if let Some(i) = &env.interpreter {
            let held = releases.iter().any(|r| {
                r.repo.eq_ignore_ascii_case(&i.repo)
                    && r.tag == i.tag
                    && r.assets.iter().any(|a| a.name == i.name)
            });
            if !held {
                return Err(ManifestError::Inconsistent(format!(
                    "python environment {} names interpreter {} {} {}, which no release \
                     entry of the manifest carries",
                    env.name, i.repo, i.tag, i.name
                )));
            }
        }
        let mut filenames = BTreeSet::new();
        for f in &env.files {
            names::check_file_name("python file name", &f.filename)?;
            names::check_file_name("python project name", &f.project)?;
            let who = format!("{} {}", env.name, f.filename);
            if !filenames.insert(f.filename.as_str()) {
                return Err(ManifestError::Inconsistent(format!(
                    "{who} is listed twice"
                )));
            }
            check_digests(&who, &f.publisher_digests, &f.sha256, None)?;
            claims.claim(&f.sha256, f.size, who.clone())?;
            if let Some(m) = &f.metadata {
                let who = format!("{who}.metadata");
                check_digests(&who, &m.publisher_digests, &m.sha256, None)?;
                claims.claim(&m.sha256, m.size, who)?;
            }
        }
    }
    Ok(())
}

/// The most uses a repair blob may list, and the longest one: a repair
/// names blobs for people, and its text is printed.
const MAX_USES: usize = 64;
const MAX_USE_CHARS: usize = 1024;

/// A repair bundle's blobs: named nowhere else (it serves nothing), each
/// once, with short descriptions.
fn claim_repairs(m: &Manifest, delta: &Delta, claims: &mut Claims) -> Result<(), ManifestError> {
    if delta.repairs.is_empty() {
        return Ok(());
    }
    if !m.releases.is_empty()
        || !m.repos.is_empty()
        || !m.python_envs.is_empty()
        || !m.images.is_empty()
        || !m.charts.is_empty()
    {
        return Err(ManifestError::Inconsistent(
            "a repair bundle (delta.repairs) names no releases, repos, Python environments, \
             images or charts"
                .into(),
        ));
    }
    let mut seen = BTreeSet::new();
    for r in &delta.repairs {
        if !seen.insert(&r.sha256) {
            return Err(ManifestError::Inconsistent(format!(
                "repair blob {} is listed twice",
                r.sha256
            )));
        }
        if r.uses.len() > MAX_USES || r.uses.iter().any(|u| u.chars().count() > MAX_USE_CHARS) {
            return Err(ManifestError::Inconsistent(format!(
                "repair blob {}: at most {MAX_USES} uses of at most {MAX_USE_CHARS} characters",
                r.sha256
            )));
        }
        claims.claim(&r.sha256, r.size, format!("repair blob {}", r.sha256))?;
    }
    Ok(())
}

/// Every prerequisite is a blob the manifest names, with the size it names.
fn validate_delta(delta: &Delta, claims: &Claims) -> Result<(), ManifestError> {
    let mut seen = BTreeSet::new();
    for p in &delta.prerequisites {
        check_named(p, claims, "prerequisite")?;
        if !seen.insert(&p.sha256) {
            return Err(ManifestError::Inconsistent(format!(
                "prerequisite {} is listed twice",
                p.sha256
            )));
        }
    }
    Ok(())
}

/// Every carried blob is placed exactly once, its pieces cover it exactly,
/// and every piece is in a volume that exists.
fn validate_volumes(
    volumes: &Volumes,
    delta: Option<&Delta>,
    claims: &Claims,
) -> Result<(), ManifestError> {
    let prerequisites: BTreeSet<&str> = delta
        .map(|d| d.prerequisites.iter().map(|p| p.sha256.as_str()).collect())
        .unwrap_or_default();
    if volumes.count == 0 || volumes.chunk_size == 0 || volumes.volume_size == 0 {
        return Err(ManifestError::Inconsistent(
            "volumes: count, volume_size and chunk_size must be above zero".into(),
        ));
    }
    let mut placed = BTreeSet::new();
    for p in &volumes.placements {
        let blob = BlobRef {
            sha256: p.sha256.clone(),
            size: p.size,
        };
        check_named(&blob, claims, "placed blob")?;
        if prerequisites.contains(p.sha256.as_str()) || !placed.insert(p.sha256.as_str()) {
            return Err(ManifestError::Inconsistent(format!(
                "blob {} is placed twice, or placed although it is a prerequisite",
                p.sha256
            )));
        }
        let mut offset = 0u64;
        for piece in &p.pieces {
            if piece.offset != offset || piece.size == 0 {
                return Err(ManifestError::Inconsistent(format!(
                    "the pieces of blob {} do not cover it in order (a piece at {} where {} was due)",
                    p.sha256, piece.offset, offset
                )));
            }
            if piece.volume == 0 || piece.volume > volumes.count {
                return Err(ManifestError::Inconsistent(format!(
                    "a piece of blob {} is in volume {}, but the set has {}",
                    p.sha256,
                    piece.volume,
                    crate::plural(volumes.count as usize, "volume", "volumes")
                )));
            }
            offset = offset.saturating_add(piece.size);
        }
        if offset != p.size {
            return Err(ManifestError::Inconsistent(format!(
                "the pieces of blob {} add up to {offset} bytes, not {}",
                p.sha256, p.size
            )));
        }
    }
    for (sha, _) in claims.0.iter() {
        if !placed.contains(sha.as_str()) && !prerequisites.contains(sha.as_str()) {
            return Err(ManifestError::Inconsistent(format!(
                "blob {sha} is neither placed in a volume nor a prerequisite: it would be left out"
            )));
        }
    }
    Ok(())
}

fn check_named(blob: &BlobRef, claims: &Claims, what: &str) -> Result<(), ManifestError> {
    match claims.0.get(&blob.sha256) {
        Some((size, _)) if *size == blob.size => Ok(()),
        Some((size, who)) => Err(ManifestError::Inconsistent(format!(
            "{what} {} is {} bytes, but {who} says {size}",
            blob.sha256, blob.size
        ))),
        None => Err(ManifestError::Inconsistent(format!(
            "{what} {} is not a blob any artifact of the manifest names",
            blob.sha256
        ))),
    }
}

fn check_time(what: &str, value: &str) -> Result<(), ManifestError> {
    match parse_rfc3339_utc(value) {
        Some(_) => Ok(()),
        None => Err(ManifestError::BadValue {
            what: what.to_string(),
            expected: "a UTC time like 2026-12-03T08:19:47Z",
            found: value.to_string(),
        }),
    }
}

#[cfg(test)]
#[path = "validate_tests.rs"]
mod tests;
