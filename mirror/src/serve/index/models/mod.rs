//! Every held Hugging Face repository at every held commit, as two OCI
//! profiles computed from the Hub part of the index (never stored):
//!
//! - `modelpack/<id>` (`modelpack/datasets/<id>` for a dataset): a
//!   ModelPack artifact, one raw layer per file whose digest is the file's
//!   own sha256, so the layer blob is the stored blob;
//! - `models/<id>` (`models/datasets/<id>`): a mountable image (an index of
//!   linux/amd64 and linux/arm64 manifests sharing their layers), one
//!   uncompressed tar per file at `models/<path>`, made around the stored
//!   blob ([`super::made::TarLayer`]).
//!
//! `<id>` is the repository id in lower case (OCI names are; the Hub's ids
//! are matched without case). Datasets sit under `datasets/` as on the Hub
//! (`huggingface.co/datasets/<id>`), where no model id can: `datasets` is
//! a path of the Hub, not an organization.
//!
//! Invariant: the tags are exactly the revisions the Hub routes serve for
//! the repository (its `refs`, which [`super::Index::build`] decided by
//! the store's trusted order, [`crate::store::series::follow::Authority`])
//! and every held commit; no second rule decides what a name points at. A
//! commit whose tar layers' digests are not all known yet has its
//! ModelPack artifact but no image until they are hashed ([`Pending`]).

mod digests;
mod documents;
pub mod tar;

use std::collections::{BTreeMap, HashMap};

use llmgw_shared::manifest::RepoKind;
use llmgw_shared::{Sha256, shown};
use serde_json::Value;

use super::entries::Blob;
use super::made::{LAYER_TAR, Made, TarLayer};
use super::oci::{MAX_MANIFEST_BYTES, ManifestEntry, OciIndex, OciRepo, ReadBlob};
use super::snapshot::{HubRepo, Snapshot};
pub use digests::{FILE, LayerDigests, learn, merge_files as merge_layer_digests};
use documents::{Layer, Source};
use llmgw_shared::manifest::{is_repository as is_name, is_tag};

/// Largest `config.json` read for the architecture.
const MAX_CONFIG_JSON: u64 = 1 << 20;

/// The fewest bytes one layer's descriptor takes in a manifest of either
/// profile (`{"mediaType":"application/vnd.oci.image.layer.v1.tar",
/// "digest":"sha256:<64>","size":N}` and a comma is 147).
const MIN_DESCRIPTOR_BYTES: u64 = 140;

/// The most files a commit can have and still be listed in a manifest of
/// at most 4 MiB. A commit with more (a dataset of 100 000 files) is left
/// out of both profiles before anything is built or hashed: its manifest
/// could not be pulled, and building it cost hundreds of MB and hashing
/// every file's tar layer for nothing.
pub const MAX_FILES: usize = (MAX_MANIFEST_BYTES / MIN_DESCRIPTOR_BYTES) as usize;

/// A tar layer whose digest is not known yet: the file and its path in
/// the tar.
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord)]
pub struct Pending {
    pub file: Blob,
    pub path: String,
}

/// Adds both profiles of every repository to `oci`; gives the tar layers
/// whose digests `digests` does not know (their images are left out).
pub fn add(
    oci: &mut OciIndex,
    repos: &HashMap<(RepoKind, String), HubRepo>,
    digests: &LayerDigests,
    read: ReadBlob<'_>,
) -> Vec<Pending> {
    let mut pending = std::collections::BTreeSet::new();
    let mut sorted: Vec<&HubRepo> = repos.values().collect();
    sorted.sort_by_key(|r| (r.kind == RepoKind::Dataset, r.id.to_ascii_lowercase()));
    for repo in sorted {
        let base = match repo.kind {
            RepoKind::Model => repo.id.to_ascii_lowercase(),
            RepoKind::Dataset => format!("datasets/{}", repo.id.to_ascii_lowercase()),
        };
        let (pack_name, image_name) = (format!("modelpack/{base}"), format!("models/{base}"));
        if !is_name(&pack_name) || !is_name(&image_name) {
            tracing::warn!(repo = %shown(&repo.id), "repository id is not an OCI name: not served as OCI");
            continue;
        }
        let mut pack = generated(pack_name);
        let mut image = generated(image_name);
        let (mut pack_top, mut image_top) = (BTreeMap::new(), BTreeMap::new());
        for (commit, snap) in &repo.snapshots {
            let files = snap.files().count();
            if files > MAX_FILES {
                tracing::warn!(repo = %shown(&repo.id), commit, files, max = MAX_FILES, "too many files for a manifest of 4 MiB: not served as OCI");
                continue;
            }
            let src = Source {
                kind: repo.kind,
                id: &repo.id,
                commit,
                architecture: architecture(snap, read),
            };
            if let Some(d) = add_modelpack(&mut pack, &src, snap) {
                pack_top.insert(commit.clone(), d);
            }
            match add_image(&mut image, &src, snap, digests) {
                Ok(Some(d)) => {
                    image_top.insert(commit.clone(), d);
                }
                Ok(None) => {}
                Err(missing) => pending.extend(missing),
            }
        }
        for (out, top) in [(&mut pack, &pack_top), (&mut image, &image_top)] {
            for (name, commit) in &repo.refs {
                if !is_tag(name) {
                    tracing::debug!(repo = %shown(&repo.id), revision = %shown(name), "revision is not an OCI tag");
                    continue;
                }
                if let Some(d) = top.get(commit) {
                    out.tags.insert(name.clone(), d.clone());
                }
            }
            // A commit names itself, whatever a ref of the same spelling says.
            for (commit, d) in top {
                out.tags.insert(commit.clone(), d.clone());
            }
        }
        oci.add_generated(pack);
        oci.add_generated(image);
    }
    pending.into_iter().collect()
}

fn generated(name: String) -> OciRepo {
    OciRepo {
        registry: None,
        name,
        ..OciRepo::default()
    }
}

/// Puts a made JSON document into `repo` (as a manifest too when
/// `manifest`), giving its digest.
fn put(repo: &mut OciRepo, bytes: Vec<u8>, media_type: &'static str, manifest: bool) -> Sha256 {
    let sha = Sha256::of(&bytes);
    let size = bytes.len() as u64;
    if manifest {
        repo.manifests.insert(
            sha.clone(),
            ManifestEntry {
                blob: Blob {
                    sha256: sha.clone(),
                    size,
                },
                media_type: media_type.to_string(),
            },
        );
    }
    repo.blobs.insert(sha.clone(), size);
    repo.made.insert(
        sha.clone(),
        Made::Json {
            bytes: bytes.into(),
            media_type,
        },
    );
    sha
}

/// The ModelPack artifact of one commit: its manifest's digest, or `None`
/// when it has no file or its manifest would pass the spec's 4 MiB.
fn add_modelpack(pack: &mut OciRepo, src: &Source<'_>, snap: &Snapshot) -> Option<Sha256> {
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
        return None;
    }
    let config = documents::modelpack_config(src, &layers);
    let manifest = documents::modelpack_manifest(src, &config, &layers);
    if manifest.len() as u64 > MAX_MANIFEST_BYTES {
        tracing::warn!(repo = %shown(src.id), commit = src.commit, files = layers.len(), "ModelPack manifest over 4 MiB: not served");
        return None;
    }
    put(pack, config, documents::MODEL_CONFIG, false);
    for l in &layers {
        pack.blobs.insert(l.digest.clone(), l.size);
    }
    Some(put(pack, manifest, documents::OCI_MANIFEST, true))
}

/// The mountable image of one commit: its index's digest; `Ok(None)` when
/// it has no file or is too large to list, `Err` with the layers whose
/// digests are not known yet.
fn add_image(
    image: &mut OciRepo,
    src: &Source<'_>,
    snap: &Snapshot,
    digests: &LayerDigests,
) -> Result<Option<Sha256>, Vec<Pending>> {
    let mut tars = Vec::new();
    let mut missing = Vec::new();
    for f in snap.files() {
        let path = format!("models/{}", f.path);
        match digests.get(&f.blob.sha256, &path) {
            Some(d) => tars.push(TarLayer {
                head_len: tar::head(&path, f.blob.size).len() as u64,
                path: path.as_str().into(),
                file: f.blob.clone(),
                tail: tar::tail(f.blob.size),
                digest: d.clone(),
            }),
            None => missing.push(Pending {
                file: f.blob.clone(),
                path,
            }),
        }
    }
    if !missing.is_empty() {
        return Err(missing);
    }
    if tars.is_empty() {
        return Ok(None);
    }
    let layers: Vec<Layer> = tars
        .iter()
        .map(|t| Layer {
            media_type: LAYER_TAR,
            digest: t.digest.clone(),
            size: t.size(),
            path: String::new(),
        })
        .collect();
    let mut manifests = Vec::new();
    for arch in documents::PLATFORMS {
        let config = documents::image_config(arch, &layers);
        let manifest = documents::image_manifest(src, &config, &layers);
        if manifest.len() as u64 > MAX_MANIFEST_BYTES {
            tracing::warn!(repo = %shown(src.id), commit = src.commit, "image manifest over 4 MiB: not served");
            return Ok(None);
        }
        put(image, config, documents::OCI_CONFIG, false);
        put(image, manifest.clone(), documents::OCI_MANIFEST, true);
        manifests.push((arch, manifest));
    }
    for t in tars {
        image.blobs.insert(t.digest.clone(), t.size());
        image.made.insert(t.digest.clone(), Made::Tar(t));
    }
    let index = documents::image_index(src, &manifests);
    Ok(Some(put(image, index, documents::OCI_INDEX, true)))
}

/// What `config.json` at the root says the architecture is
/// (`architectures[0]`, else `model_type`), when it is held and readable.
fn architecture(snap: &Snapshot, read: ReadBlob<'_>) -> Option<String> {
    let f = snap.file("config.json")?;
    if f.blob.size > MAX_CONFIG_JSON {
        return None;
    }
    let v: Value = serde_json::from_slice(&read(&f.blob.sha256, MAX_CONFIG_JSON)?).ok()?;
    let a = v["architectures"][0]
        .as_str()
        .or_else(|| v["model_type"].as_str())?;
    (!a.is_empty() && a.len() <= 128 && a.bytes().all(|b| b.is_ascii_graphic()))
        .then(|| a.to_string())
}

#[cfg(test)]
#[path = "tests.rs"]
mod tests;
