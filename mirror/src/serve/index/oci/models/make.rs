//! A commit's profile documents made from the index: at build, to learn
//! their digests (the bytes are then dropped), and on request, the same
//! bytes again ([`make`]).
//!
//! Invariant: build and request make a document through the same functions
//! ([`pack`], [`image`]) from the same inputs — the repository's kind and
//! id, the commit, its files in path order, `config.json`'s architecture,
//! the tar layers' digests — so the bytes made on request hash to the
//! digest the index names; the caller checks that they do before serving.

use llmgw_shared::{Sha256, shown};
use thiserror::Error;

use super::documents::{self, Layer, Source};
use super::{architecture, tar};
use crate::serve::index::Index;
use crate::serve::index::hub::snapshot::Snapshot;
use crate::serve::index::oci::made::{Doc, LAYER_TAR, MadeFrom, Which};
use crate::serve::index::oci::{MAX_MANIFEST_BYTES, ReadBlob};

/// The ModelPack artifact of one commit.
pub struct PackDocs {
    pub config: Vec<u8>,
    pub manifest: Vec<u8>,
}

/// The mountable image of one commit: a config and a manifest per platform
/// ([`documents::PLATFORMS`], in that order), and the index naming them.
pub struct ImageDocs {
    pub configs: Vec<Vec<u8>>,
    pub manifests: Vec<Vec<u8>>,
    pub index: Vec<u8>,
}

/// A manifest would pass the spec's 4 MiB: the profile is not served.
#[derive(Debug)]
pub struct TooLarge;

/// Why a document cannot be made again from this index.
#[derive(Debug, Error)]
pub enum MakeError {
    #[error("the repository {repo} at {commit} is not in the index")]
    NotHeld { repo: String, commit: String },
    #[error("the tar layer of {path} in {repo} has no known digest")]
    NoLayer { repo: String, path: String },
    #[error(
        "the {which:?} document of {repo} at {commit} makes no document (no file, or past 4 MiB)"
    )]
    None {
        which: Which,
        repo: String,
        commit: String,
    },
}

/// The ModelPack artifact: `None` when the commit has no file or its
/// manifest would pass the spec's 4 MiB.
pub fn pack(src: &Source<'_>, snap: &Snapshot) -> Result<Option<PackDocs>, TooLarge> {
    let layers: Vec<Layer> = snap
        .files()
        .map(|f| Layer {
            media_type: documents::media_type(src.kind, f.path),
            digest: f.blob.sha256.clone(),
            size: f.blob.size,
            path: f.path.to_string(),
        })
        .collect();
    if layers.is_empty() {
        return Ok(None);
    }
    let config = documents::modelpack_config(src, &layers);
    let manifest = documents::modelpack_manifest(src, &config, &layers);
    if manifest.len() as u64 > MAX_MANIFEST_BYTES {
        return Err(TooLarge);
    }
    Ok(Some(PackDocs { config, manifest }))
}

/// The mountable image of tar layers `(digest, size)` in path order: `None`
/// when there is none, `Err` when a manifest would pass 4 MiB.
pub fn image(src: &Source<'_>, tars: &[(Sha256, u64)]) -> Result<Option<ImageDocs>, TooLarge> {
    if tars.is_empty() {
        return Ok(None);
    }
    let layers: Vec<Layer> = tars
        .iter()
        .map(|(digest, size)| Layer {
            media_type: LAYER_TAR,
            digest: digest.clone(),
            size: *size,
            path: String::new(),
        })
        .collect();
    let (mut configs, mut manifests) = (Vec::new(), Vec::new());
    for arch in documents::PLATFORMS {
        let config = documents::image_config(arch, &layers);
        let manifest = documents::image_manifest(src, &config, &layers);
        if manifest.len() as u64 > MAX_MANIFEST_BYTES {
            return Err(TooLarge);
        }
        configs.push(config);
        manifests.push(manifest);
    }
    let named: Vec<(&str, Vec<u8>)> = documents::PLATFORMS
        .iter()
        .copied()
        .zip(manifests.iter().cloned())
        .collect();
    let index = documents::image_index(src, &named);
    Ok(Some(ImageDocs {
        configs,
        manifests,
        index,
    }))
}

/// The tar layer of a file of `size` bytes at `path` in the tar: its
/// headers' length and its zero tail's.
pub fn tar_lengths(path: &str, size: u64) -> (u64, u64) {
    (tar::head(path, size).len() as u64, tar::tail(size))
}

/// Every document of the profile `doc` is part of, made again from `index`
/// for `doc`'s commit of the repository `from` names: `(which, bytes)`.
/// `read` gives `config.json` (the architecture).
pub fn make(
    index: &Index,
    from: &MadeFrom,
    doc: &Doc,
    read: ReadBlob<'_>,
) -> Result<Vec<(Which, Vec<u8>)>, MakeError> {
    let commit = &*doc.commit;
    let not_held = || MakeError::NotHeld {
        repo: shown(&from.key).to_string(),
        commit: commit.to_string(),
    };
    let hub = index
        .repos
        .get(&(from.kind, from.key.clone()))
        .ok_or_else(not_held)?;
    let snap = hub.snapshots.get(commit).ok_or_else(not_held)?;
    let src = Source {
        kind: hub.kind,
        id: &hub.id,
        commit,
        architecture: architecture(snap, read),
    };
    let none = || MakeError::None {
        which: doc.which,
        repo: shown(&hub.id).to_string(),
        commit: commit.to_string(),
    };
    match doc.which {
        Which::PackConfig | Which::PackManifest => {
            let p = pack(&src, snap).ok().flatten().ok_or_else(none)?;
            Ok(vec![
                (Which::PackConfig, p.config),
                (Which::PackManifest, p.manifest),
            ])
        }
        Which::ImageConfig(_) | Which::ImageManifest(_) | Which::ImageIndex => {
            let mut tars = Vec::new();
            for (n, f) in snap.numbered_files() {
                let path = format!("models/{}", f.path);
                let digest = from.tars.get(&n).ok_or_else(|| MakeError::NoLayer {
                    repo: shown(&hub.id).to_string(),
                    path: shown(&path).to_string(),
                })?;
                let (head, tail) = tar_lengths(&path, f.blob.size);
                tars.push((digest.clone(), head + f.blob.size + tail));
            }
            let i = image(&src, &tars).ok().flatten().ok_or_else(none)?;
            let mut out = Vec::new();
            for (p, (config, manifest)) in i.configs.into_iter().zip(i.manifests).enumerate() {
                out.push((Which::ImageConfig(p), config));
                out.push((Which::ImageManifest(p), manifest));
            }
            out.push((Which::ImageIndex, i.index));
            Ok(out)
        }
    }
}
