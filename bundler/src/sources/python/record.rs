//! What the manifest records of a planned environment (format 2's
//! `python_envs[]`): written in this one place from what was checked, so
//! the manifest says exactly what the publishers said.

use llmgw_shared::manifest::{
    AssetRef, BlobRef, DigestSource, MetadataFile, PublisherDigest, PythonEnv, PythonFile,
    PythonIndex, Resolver, Yanked,
};

use super::PlannedEnv;
use super::interpreter::PBS_REPO;

/// The name the default index has in a manifest.
const PYPI_NAME: &str = "pypi";

pub fn python_env(e: &PlannedEnv, pypi: &str) -> PythonEnv {
    let r = &e.request;
    let mut indexes = vec![PythonIndex {
        name: PYPI_NAME.to_string(),
        url: pypi.to_string(),
        explicit: false,
        packages: Vec::new(),
    }];
    for x in r.explicit.iter().chain(&e.companion_indexes) {
        indexes.push(PythonIndex {
            name: x.name.clone(),
            url: x.url.clone(),
            explicit: true,
            packages: x.packages.clone(),
        });
    }
    // The engine's GitHub wheel is given to the resolver as a direct
    // reference; recorded by the URL it came from.
    let mut requirements = r.requirements.clone();
    if let Some(w) = &r.wheel {
        for f in &e.files {
            if f.file.digest_source == DigestSource::GithubAssetDigest {
                requirements.push(format!("{} @ {}", w.project, f.file.origin));
            }
        }
    }
    let mut os_packages: Vec<String> = r.os_packages.values().flatten().cloned().collect();
    os_packages.sort();
    os_packages.dedup();
    let nonempty = |s: &str| (!s.is_empty()).then(|| s.to_string());
    PythonEnv {
        name: r.name.clone(),
        engine: r.engine.clone(),
        version: nonempty(&r.version),
        variant: nonempty(&r.variant),
        arch: r.arch.clone(),
        python: r.python.clone(),
        platform: e.platform.clone(),
        requirements,
        indexes,
        resolver: Resolver {
            name: if e.site_lock.is_some() {
                "site lock"
            } else {
                "uv"
            }
            .to_string(),
            version: e.resolver_version.clone(),
        },
        lock: BlobRef {
            sha256: e.lock.0.clone(),
            size: e.lock.1,
        },
        interpreter: e.interpreter.as_ref().map(|i| AssetRef {
            repo: PBS_REPO.to_string(),
            tag: i.tag.clone(),
            name: i.asset.clone(),
        }),
        os_packages,
        free_gb: r.free_gb,
        note: nonempty(&r.note),
        node_interpreter: e.node_interpreter,
        overrides: r.overrides.clone(),
        constraints: r.constraints.clone(),
        site_lock: e.site_lock.clone(),
        files: e
            .files
            .iter()
            .map(|f| {
                let c = &f.file;
                PythonFile {
                    project: c.project.clone(),
                    version: c.version.clone(),
                    filename: c.filename.clone(),
                    size: f.size,
                    sha256: c.sha256.clone(),
                    requires_python: c.requires_python.clone(),
                    yanked: c.yanked.as_ref().map(|reason| Yanked {
                        reason: nonempty(reason),
                    }),
                    upload_time: c.upload_time.clone(),
                    metadata: f.metadata_blob.as_ref().map(|(sha, size)| MetadataFile {
                        sha256: sha.clone(),
                        size: *size,
                        publisher_digests: vec![PublisherDigest {
                            source: DigestSource::PypiCoreMetadata,
                            value: sha.to_string(),
                        }],
                    }),
                    origin: c.origin.clone(),
                    publisher_digests: publisher_digests(c),
                }
            })
            .collect(),
    }
}

/// What the index said of a file, and the site's lock where it said the
/// same.
fn publisher_digests(c: &super::check::CheckedFile) -> Vec<PublisherDigest> {
    let mut out = vec![PublisherDigest {
        source: c.digest_source,
        value: c.sha256.to_string(),
    }];
    if c.also_lock {
        out.push(PublisherDigest {
            source: DigestSource::SiteLockSha256,
            value: c.sha256.to_string(),
        });
    }
    out
}
