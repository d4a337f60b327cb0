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
//! the repository (its `refs`, which [`crate::serve::index::Index::build`] decided by
//! the store's trusted order, [`crate::store::series::follow::Authority`])
//! and every held commit; no second rule decides what a name points at. A
//! commit whose tar layers' digests are not all known yet has its
//! ModelPack artifact but no image until they are hashed ([`Pending`]).

mod digests;
mod documents;
pub mod make;
pub mod tar;

use std::collections::{BTreeMap, HashMap};
use std::sync::Arc;

use llmgw_shared::manifest::RepoKind;
use llmgw_shared::{Sha256, shown};
use serde_json::Value;

use super::made::{Doc, Made, MadeFrom, TarLayer, Which};
use crate::serve::index::entries::Blob;
use crate::serve::index::hub::snapshot::{HubRepo, Snapshot};
use crate::serve::index::oci::{
    MAX_MANIFEST_BYTES, ManifestEntry, OciIndex, OciRepo, Profiles, ReadBlob,
};
pub use digests::{
    FILE, LayerDigests, hash_layer, imported_file, learn, learn_imported,
    merge_files as merge_layer_digests,
};
use documents::Source;
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
/// Every document is made here once, to learn its digest, and dropped:
/// the index keeps what makes it again ([`Made::Doc`]).
///
/// A repository whose profiles `old` (the OCI part served now) made from
/// the same version, every layer's digest known and every `config.json`
/// read, keeps them (the same `Arc`s): they are a function of the
/// repository's part, the digests (only ever added to) and its held
/// `config.json` (immutable), so a rebuild after an import makes only what
/// the import changed — 1 000 commits' documents made again took two
/// seconds of every rebuild.
pub fn add(
    oci: &mut OciIndex,
    repos: &crate::serve::index::HubRepos,
    digests: &LayerDigests,
    read: ReadBlob<'_>,
    old: Option<&OciIndex>,
) -> Vec<Pending> {
    let mut pending = std::collections::BTreeSet::new();
    let mut sorted: Vec<(&(RepoKind, String), &HubRepo)> =
        repos.iter().map(|(k, r)| (k, &**r)).collect();
    sorted.sort_by_key(|(_, r)| (r.kind == RepoKind::Dataset, r.id.to_ascii_lowercase()));
    for (at, repo) in sorted {
        let kept = old
            .and_then(|o| o.profiles.get(at))
            .filter(|p| p.complete && p.version == repo.version);
        if let Some(kept) = kept {
            oci.add_profiles(at.clone(), kept.clone());
            continue;
        }
        if let Some(profiles) = profiles_of(at, repo, digests, read, &mut pending) {
            oci.add_profiles(at.clone(), profiles);
        }
    }
    pending.into_iter().collect()
}

/// Repository `repo`'s two profiles made afresh, each commit of it a
/// manifest tagged by its refs; `None` when its id is no OCI name. The
/// tar layers whose digests are not known yet go into `pending`, and
/// leave the profiles incomplete (made again by the next build).
fn profiles_of(
    (kind, key): &(RepoKind, String),
    repo: &HubRepo,
    digests: &LayerDigests,
    read: ReadBlob<'_>,
    pending: &mut std::collections::BTreeSet<Pending>,
) -> Option<Profiles> {
    let base = match repo.kind {
        RepoKind::Model => repo.id.to_ascii_lowercase(),
        RepoKind::Dataset => format!("datasets/{}", repo.id.to_ascii_lowercase()),
        // A kernel is loaded by the `kernels` library over the Hub's API,
        // never pulled as an image.
        RepoKind::Kernel => return None,
    };
    let (pack_name, image_name) = (format!("modelpack/{base}"), format!("models/{base}"));
    if !is_name(&pack_name) || !is_name(&image_name) {
        tracing::warn!(repo = %shown(&repo.id), "repository id is not an OCI name: not served as OCI");
        return None;
    }
    let from = MadeFrom {
        kind: *kind,
        key: key.clone(),
        tars: HashMap::new(),
    };
    let mut pack = generated(pack_name, from.clone());
    let mut image = generated(image_name, from);
    let (mut pack_top, mut image_top) = (BTreeMap::new(), BTreeMap::new());
    let mut complete = true;
    for (commit, snap) in &repo.snapshots {
        let files = snap.file_count();
        if files > MAX_FILES {
            tracing::warn!(repo = %shown(&repo.id), commit, files, max = MAX_FILES, "too many files for a manifest of 4 MiB: not served as OCI");
            continue;
        }
        let src = Source {
            kind: repo.kind,
            id: &repo.id,
            commit,
            architecture: read_architecture(snap, read).unwrap_or_else(|ConfigUnread| {
                complete = false;
                None
            }),
        };
        let shared: Arc<str> = commit.as_str().into();
        if let Some(d) = add_modelpack(&mut pack, &src, snap, &shared) {
            pack_top.insert(commit.clone(), d);
        }
        match add_image(&mut image, &src, snap, digests, &shared) {
            Ok(Some(d)) => {
                image_top.insert(commit.clone(), d);
            }
            Ok(None) => {}
            Err(missing) => {
                complete = false;
                pending.extend(missing);
            }
        }
    }
    tag(&mut pack, &pack_top, repo);
    tag(&mut image, &image_top, repo);
    Some(Profiles {
        version: repo.version,
        complete,
        pack: Arc::new(pack),
        image: Arc::new(image),
    })
}

/// Tags `out`'s manifests `top` (by commit) with the repository's refs
/// that are OCI tags, and each with its own commit.
fn tag(out: &mut OciRepo, top: &BTreeMap<String, Sha256>, repo: &HubRepo) {
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

fn generated(name: String, from: MadeFrom) -> OciRepo {
    OciRepo {
        registry: None,
        name,
        made_from: Some(Box::new(from)),
        ..OciRepo::default()
    }
}

/// Names a made JSON document in `repo` (as a manifest too when
/// `manifest`) by the digest of `bytes`, keeping what makes it again, not
/// the bytes; gives the digest.
fn put(repo: &mut OciRepo, bytes: &[u8], doc: Doc, manifest: bool) -> Sha256 {
    let sha = Sha256::of(bytes);
    let size = bytes.len() as u64;
    if manifest {
        repo.manifests.insert(
            sha.clone(),
            ManifestEntry {
                blob: Blob {
                    sha256: sha.clone(),
                    size,
                },
                media_type: doc.which.media_type().into(),
            },
        );
    }
    repo.blobs.insert(sha.clone(), size);
    repo.made.insert(sha.clone(), Made::Doc(doc));
    sha
}

/// The ModelPack artifact of one commit: its manifest's digest, or `None`
/// when it has no file or its manifest would pass the spec's 4 MiB.
fn add_modelpack(
    pack: &mut OciRepo,
    src: &Source<'_>,
    snap: &Snapshot,
    commit: &Arc<str>,
) -> Option<Sha256> {
    let docs = match make::pack(src, snap) {
        Ok(d) => d?,
        Err(make::TooLarge) => {
            tracing::warn!(repo = %shown(src.id), commit = src.commit, files = snap.file_count(), "ModelPack manifest over 4 MiB: not served");
            return None;
        }
    };
    let doc = |which| Doc {
        commit: commit.clone(),
        which,
    };
    put(pack, &docs.config, doc(Which::PackConfig), false);
    for f in snap.files() {
        pack.blobs.insert(f.blob.sha256.clone(), f.blob.size);
    }
    Some(put(pack, &docs.manifest, doc(Which::PackManifest), true))
}

/// The mountable image of one commit: its index's digest; `Ok(None)` when
/// it has no file or is too large to list, `Err` with the layers whose
/// digests are not known yet.
fn add_image(
    image: &mut OciRepo,
    src: &Source<'_>,
    snap: &Snapshot,
    digests: &LayerDigests,
    commit: &Arc<str>,
) -> Result<Option<Sha256>, Vec<Pending>> {
    let mut tars = Vec::new();
    let mut missing = Vec::new();
    for (n, f) in snap.numbered_files() {
        let path = format!("models/{}", f.path);
        match digests.get(&f.blob.sha256, &path) {
            Some(d) => {
                let (head_len, tail) = make::tar_lengths(&path, f.blob.size);
                tars.push((n, path, f.blob, head_len, tail, d));
            }
            None => missing.push(Pending {
                file: f.blob.clone(),
                path,
            }),
        }
    }
    if !missing.is_empty() {
        return Err(missing);
    }
    let sized: Vec<(Sha256, u64)> = tars
        .iter()
        .map(|(_, _, blob, head, tail, d)| ((*d).clone(), head + blob.size + tail))
        .collect();
    let docs = match make::image(src, &sized) {
        Ok(Some(d)) => d,
        Ok(None) => return Ok(None),
        Err(make::TooLarge) => {
            tracing::warn!(repo = %shown(src.id), commit = src.commit, "image manifest over 4 MiB: not served");
            return Ok(None);
        }
    };
    let doc = |which| Doc {
        commit: commit.clone(),
        which,
    };
    for (p, (config, manifest)) in docs.configs.iter().zip(&docs.manifests).enumerate() {
        put(image, config, doc(Which::ImageConfig(p)), false);
        put(image, manifest, doc(Which::ImageManifest(p)), true);
    }
    for (n, path, blob, head_len, tail, digest) in tars {
        if let Some(from) = image.made_from.as_mut() {
            from.tars.insert(n, digest.clone());
        }
        if image.made.contains_key(digest) {
            continue;
        }
        let t = TarLayer {
            path: path.into(),
            head_len,
            file: blob.clone(),
            tail,
            digest: digest.clone(),
        };
        image.blobs.insert(digest.clone(), t.size());
        image.made.insert(digest.clone(), Made::Tar(Box::new(t)));
    }
    Ok(Some(put(image, &docs.index, doc(Which::ImageIndex), true)))
}

/// What `config.json` at the root says the architecture is
/// (`architectures[0]`, else `model_type`), when it is held and readable.
fn architecture(snap: &Snapshot, read: ReadBlob<'_>) -> Option<String> {
    read_architecture(snap, read).ok().flatten()
}

/// A `config.json` held but not readable from the store now.
struct ConfigUnread;

/// [`architecture`], telling a `config.json` that says none (or is not
/// held, too large, not JSON: the same whenever it is read) from one the
/// store cannot give now (`Err`: a blob to repair, after which the profiles
/// must be made again, not kept).
fn read_architecture(snap: &Snapshot, read: ReadBlob<'_>) -> Result<Option<String>, ConfigUnread> {
    let Some(f) = snap.file("config.json") else {
        return Ok(None);
    };
    if f.blob.size > MAX_CONFIG_JSON {
        return Ok(None);
    }
    let bytes = read(&f.blob.sha256, MAX_CONFIG_JSON).ok_or(ConfigUnread)?;
    let Ok(v) = serde_json::from_slice::<Value>(&bytes) else {
        return Ok(None);
    };
    let a = v["architectures"][0]
        .as_str()
        .or_else(|| v["model_type"].as_str());
    Ok(
        a.filter(|a| !a.is_empty() && a.len() <= 128 && a.bytes().all(|b| b.is_ascii_graphic()))
            .map(str::to_string),
    )
}

#[cfg(test)]
#[path = "tests.rs"]
mod tests;
