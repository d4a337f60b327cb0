//! Reading an OCI image layout into the plan: `oci-layout` says it is one,
//! `index.json` names the image (by its `org.opencontainers.image.ref.name`,
//! or its only entry), and from there every manifest, config and layer is
//! read from `blobs/sha256/<hex>` and checked against its descriptor — size
//! and sha256 — as a registry image's are; the children for the bundle's
//! platforms are taken as from a registry ([`super::walk`]), and the
//! record passes `check_tree` before it enters the plan.
//!
//! Invariant: nothing of a layout is trusted. Each file is read bounded
//! (manifests and `index.json` at [`MAX_OCI_MANIFEST_BYTES`], a blob at
//! its descriptor's size), hashed, and put into the cache only when it is
//! what its descriptor says; a damaged file is refused naming it, with the
//! expected and actual size or digest.

use std::collections::BTreeMap;
use std::fs::{self, File};
use std::io::{self, Read, Write};
use std::path::{Path, PathBuf};

use llmgw_shared::manifest::{
    MAX_OCI_CHILDREN, MAX_OCI_MANIFEST_BYTES, OciDescriptor, OciImage, is_manifest,
};
use llmgw_shared::{HashReader, Sha256, StreamHasher};
use serde::Deserialize;

use super::client::ManifestAnswer;
use super::error::OciError;
use super::plan::finish;
use super::walk::ManifestWalk;
use crate::cache::{Cache, Expect};
use crate::error::CreateError;
use crate::plan::Plan;
use crate::spec::oci::layout::LayoutSource;

/// The annotation that names an image in `index.json`.
pub const REF_NAME: &str = "org.opencontainers.image.ref.name";

#[derive(Deserialize)]
struct LayoutFile {
    #[serde(rename = "imageLayoutVersion")]
    version: String,
}

#[derive(Deserialize)]
struct IndexJson {
    manifests: Vec<Entry>,
}

#[derive(Deserialize)]
struct Entry {
    #[serde(rename = "mediaType")]
    media_type: String,
    digest: String,
    size: u64,
    #[serde(default)]
    annotations: BTreeMap<String, String>,
}

/// One layout being read, for messages.
struct Layout<'a> {
    src: &'a LayoutSource,
    shown: String,
}

/// Plans the image `src` names into `plan` (its manifests, configs and
/// layers verified into the cache and listed in `plan.stored`) and returns
/// its record: no registry, served as `NAME:TAG`.
pub fn plan_layout(
    cache: &Cache,
    src: &LayoutSource,
    arches: &[String],
    plan: &mut Plan,
) -> Result<OciImage, CreateError> {
    let l = Layout {
        src,
        shown: src.to_string(),
    };
    l.check_marker()?;
    let top_entry = l.pick()?;
    let top = l.manifest(&top_entry)?;
    let (mut walk, carried) = ManifestWalk::start(&l.shown, top_entry, &top, arches, cache, plan)?;
    for d in carried {
        if walk.again(&d) {
            continue;
        }
        let child = l.manifest(&d)?;
        walk.child(d, &child, cache, plan)?;
    }
    let mut blobs: Vec<OciDescriptor> = Vec::new();
    for m in &walk.images {
        for c in &walk.named[m].children {
            if blobs.iter().any(|b| b.sha256 == c.sha256) {
                continue;
            }
            let path = l.blob_into_cache(cache, &c.sha256, c.size)?;
            if !plan.stored.iter().any(|s| s.sha256 == c.sha256) {
                plan.store(c.sha256.clone(), path, c.size);
            }
            blobs.push(OciDescriptor {
                sha256: c.sha256.clone(),
                size: c.size,
                media_type: c.media_type.clone(),
                platform: None,
            });
        }
    }
    let image = OciImage {
        registry: None,
        repository: src.name.clone(),
        tag: Some(src.tag.clone()),
        digest: top.sha256.clone(),
        manifests: walk.manifests,
        blobs,
        left_out: walk.left_out,
    };
    finish(&l.shown, image, &walk.named)
}

impl Layout<'_> {
    fn file(&self, name: &str) -> PathBuf {
        self.src.path.join(name)
    }

    fn blob_file(&self, sha256: &Sha256) -> PathBuf {
        self.src.path.join("blobs/sha256").join(sha256.as_str())
    }

    fn bad(&self, path: PathBuf, detail: String) -> OciError {
        OciError::Layout { path, detail }
    }

    /// `oci-layout` says `{"imageLayoutVersion": "1.0.0"}`.
    fn check_marker(&self) -> Result<(), OciError> {
        let path = self.file("oci-layout");
        let what = "give the folder of an OCI image layout, as skopeo copy … oci:PATH, \
                    buildah push … oci:PATH or scripts/build-image.sh PATH write it";
        if !self.src.path.is_dir() {
            return Err(self.bad(self.src.path.clone(), format!("is not a folder; {what}")));
        }
        if !path.exists() {
            return Err(self.bad(
                path,
                format!("is missing, so this is no OCI image layout; {what}"),
            ));
        }
        let bytes = read_small(&path, 4096)?;
        match serde_json::from_slice::<LayoutFile>(&bytes) {
            Ok(f) if f.version == "1.0.0" => Ok(()),
            Ok(f) => Err(self.bad(
                path,
                format!(
                    "imageLayoutVersion is {:?}; only 1.0.0 is read",
                    f.version.escape_debug().to_string()
                ),
            )),
            Err(e) => Err(self.bad(
                path,
                format!(
                    "not an OCI layout marker ({e}); expected {{\"imageLayoutVersion\":\"1.0.0\"}}"
                ),
            )),
        }
    }

    /// The entry of `index.json` to take: the one whose ref name is the
    /// REF asked for, or the only one.
    fn pick(&self) -> Result<OciDescriptor, OciError> {
        let path = self.file("index.json");
        let bytes = read_small(&path, MAX_OCI_MANIFEST_BYTES)?;
        let index: IndexJson = serde_json::from_slice(&bytes)
            .map_err(|e| self.bad(path.clone(), format!("not an OCI image index ({e})")))?;
        if index.manifests.len() > MAX_OCI_CHILDREN {
            return Err(self.bad(
                path,
                format!(
                    "it names {} images; at most {MAX_OCI_CHILDREN} are read",
                    index.manifests.len()
                ),
            ));
        }
        let named = |e: &Entry| e.annotations.get(REF_NAME).cloned();
        let listed = || {
            index
                .manifests
                .iter()
                .map(|e| match named(e) {
                    Some(n) => format!("{:?} ({})", n, e.digest.escape_debug()),
                    None => format!("(no ref name) {}", e.digest.escape_debug()),
                })
                .collect::<Vec<_>>()
                .join(", ")
        };
        let chosen: Vec<&Entry> = match &self.src.ref_name {
            Some(r) => index
                .manifests
                .iter()
                .filter(|e| named(e).as_deref() == Some(r.as_str()))
                .collect(),
            None => index.manifests.iter().collect(),
        };
        let entry = match (chosen.as_slice(), &self.src.ref_name) {
            ([one], _) => *one,
            ([], None) => return Err(self.bad(path, "it names no image".into())),
            ([], Some(r)) => {
                return Err(self.bad(
                    path,
                    format!("no image is named {:?}; it has: {}", r, listed()),
                ));
            }
            (_, None) => {
                return Err(self.bad(
                    path,
                    format!(
                        "it holds several images: {}; name one as …=oci-layout:PATH:REF",
                        listed()
                    ),
                ));
            }
            (_, Some(r)) => {
                return Err(self.bad(
                    path,
                    format!("several images are named {r:?}: {}", listed()),
                ));
            }
        };
        let sha256 = entry
            .digest
            .strip_prefix("sha256:")
            .and_then(|h| Sha256::parse_exact("digest", h).ok())
            .ok_or_else(|| {
                self.bad(
                    path.clone(),
                    format!(
                        "digest {:?} is not sha256: and 64 lower-case hex digits",
                        entry.digest
                    ),
                )
            })?;
        if !is_manifest(&entry.media_type) {
            return Err(self.bad(
                path,
                format!(
                    "the image's mediaType {:?} is not an OCI or Docker manifest or index",
                    entry.media_type
                ),
            ));
        }
        Ok(OciDescriptor {
            sha256,
            size: entry.size,
            media_type: entry.media_type.clone(),
            platform: None,
        })
    }

    /// A manifest or index by its descriptor, read bounded and checked.
    fn manifest(&self, d: &OciDescriptor) -> Result<ManifestAnswer, OciError> {
        let file = self.blob_file(&d.sha256);
        if d.size > MAX_OCI_MANIFEST_BYTES {
            return Err(self.mismatch(
                &file,
                format!("{} bytes, more than a manifest may be", d.size),
                format!("was not read (at most {MAX_OCI_MANIFEST_BYTES} bytes are)"),
            ));
        }
        let (f, len) = open_regular(&file)?;
        if len != d.size {
            return Err(self.mismatch(
                &file,
                format!("{} bytes", d.size),
                format!("has {len} bytes"),
            ));
        }
        let mut bytes = Vec::new();
        f.take(d.size)
            .read_to_end(&mut bytes)
            .map_err(|source| OciError::LayoutIo {
                path: file.clone(),
                source,
            })?;
        let sha256 = Sha256::of(&bytes);
        if sha256 != d.sha256 {
            return Err(self.mismatch(
                &file,
                format!("sha256:{}", d.sha256),
                format!("hashes to sha256:{sha256}"),
            ));
        }
        Ok(ManifestAnswer {
            bytes,
            sha256,
            media_type: d.media_type.clone(),
        })
    }

    /// A config or layer hashed as it is copied into the cache, its size
    /// and sha256 checked against the descriptor before the cache names
    /// it (a copy the cache had is replaced by this checked one, so a cache
    /// damaged on disk never reaches the bundle).
    fn blob_into_cache(
        &self,
        cache: &Cache,
        sha256: &Sha256,
        size: u64,
    ) -> Result<PathBuf, CreateError> {
        let file = self.blob_file(sha256);
        let (f, have) = open_regular(&file)?;
        if have != size {
            return Err(self
                .mismatch(&file, format!("{size} bytes"), format!("has {have} bytes"))
                .into());
        }
        let cached = cache.blob_path(sha256);
        let tmp = cache
            .root()
            .join("partial")
            .join(format!("{sha256}.layout"));
        let copied = copy_hashed(f, &file, size, &tmp);
        let refused = match copied {
            Err(e) => Some(e),
            Ok((n, _)) if n != size => Some(
                self.mismatch(&file, format!("{size} bytes"), format!("has {n} bytes"))
                    .into(),
            ),
            Ok((_, actual)) if &actual != sha256 => Some(
                self.mismatch(
                    &file,
                    format!("sha256:{sha256}"),
                    format!("hashes to sha256:{actual}"),
                )
                .into(),
            ),
            Ok(_) => None,
        };
        if let Some(e) = refused {
            let _ = fs::remove_file(&tmp);
            return Err(e);
        }
        cache
            .commit(&tmp, sha256, &Expect::Sha256(sha256.clone()))
            .map_err(|e| CreateError::io(&cached, e))?;
        Ok(cached)
    }

    fn mismatch(&self, file: &Path, expected: String, actual: String) -> OciError {
        OciError::LayoutBlob {
            image: self.shown.clone(),
            file: file.to_path_buf(),
            expected,
            actual,
        }
    }
}

/// Copies at most `size + 1` bytes of `f` (the layout's `file`) to `tmp`,
/// hashing them: how many there were and their sha256. A read error names
/// the layout's file, a write error the cache's.
fn copy_hashed(f: File, file: &Path, size: u64, tmp: &Path) -> Result<(u64, Sha256), CreateError> {
    let mut r = HashReader::new(f.take(size.saturating_add(1)), StreamHasher::sha256());
    let mut out = File::create(tmp).map_err(|e| CreateError::io(tmp, e))?;
    let mut buf = vec![0u8; 1 << 20];
    loop {
        let k = match r.read(&mut buf) {
            Ok(0) => break,
            Ok(k) => k,
            Err(e) if e.kind() == io::ErrorKind::Interrupted => continue,
            Err(e) => {
                return Err(OciError::LayoutIo {
                    path: file.to_path_buf(),
                    source: e,
                }
                .into());
            }
        };
        out.write_all(&buf[..k])
            .map_err(|e| CreateError::io(tmp, e))?;
    }
    out.flush().map_err(|e| CreateError::io(tmp, e))?;
    let n = r.len();
    Ok((n, r.into_parts().1.finalize().sha256))
}

/// Opens a layout's file, refusing what is not a regular file (a FIFO or
/// a device would block or never end).
fn open_regular(path: &Path) -> Result<(File, u64), OciError> {
    let io_err = |source| OciError::LayoutIo {
        path: path.to_path_buf(),
        source,
    };
    let f = File::open(path).map_err(io_err)?;
    let meta = f.metadata().map_err(io_err)?;
    if !meta.is_file() {
        return Err(OciError::Layout {
            path: path.to_path_buf(),
            detail: "is not a regular file".into(),
        });
    }
    Ok((f, meta.len()))
}

/// A small file whole; one longer than `max` bytes is refused unread.
fn read_small(path: &Path, max: u64) -> Result<Vec<u8>, OciError> {
    let (f, len) = open_regular(path)?;
    if len > max {
        return Err(OciError::Layout {
            path: path.to_path_buf(),
            detail: format!("it is {len} bytes; at most {max} are read"),
        });
    }
    let mut bytes = Vec::new();
    f.take(max.saturating_add(1))
        .read_to_end(&mut bytes)
        .map_err(|source| OciError::LayoutIo {
            path: path.to_path_buf(),
            source,
        })?;
    Ok(bytes)
}
