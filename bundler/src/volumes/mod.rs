//! `bundle create --volume-size`: the bundle as self-contained volumes for
//! USB disks, discs and one-way diodes (`NAME.v0001-of-0003.tar` …, parity
//! volumes `NAME.p0001-of-0002.tar`, and one `NAME.sha256`).
//!
//! Invariant: the whole packing — which piece of which blob goes into which
//! volume, each chunk's sha256, the parity shards' sha256 — is decided and
//! recorded in the manifest before the first volume is written, and every
//! volume starts with that same manifest (and its signature), so each one
//! can be checked on its own and imported in any order. The packing is a
//! function of the manifest's content and the sizes asked for: the same
//! request gives the same volumes, byte for byte.
//!
//! Every blob is taken from the cache (it is downloaded there first, as for
//! a directory bundle), because its chunks must be hashed before the
//! manifest can be written.
//!
//! Because the volumes are reproducible, a run killed half-way is carried
//! on by running the same command again: the volumes it finished are
//! checked against the plan and kept, the rest written ([`resume`]).

pub mod parity;
pub mod plan;
pub mod resume;
pub mod size;
pub mod write;

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use llmgw_shared::Sha256;
use llmgw_shared::manifest::{MANIFEST_NAME, Manifest, Parity, Volumes};

use crate::error::{CreateError, FlagError, OutError, RequestError};
use crate::progress::Events;
use crate::writer::Blob;

/// What `--volume-size`, `--chunk-size` and `--parity` asked for.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct VolumeSpec {
    pub volume_size: u64,
    /// `None`: [`size::DEFAULT_CHUNK`], or less when a volume is smaller.
    pub chunk_size: Option<u64>,
    /// Parity volumes.
    pub parity: u32,
}

impl VolumeSpec {
    /// Parses the three flags; `None` when `--volume-size` is not given.
    pub fn parse(
        volume_size: Option<&str>,
        chunk_size: Option<&str>,
        parity: Option<u32>,
    ) -> Result<Option<Self>, CreateError> {
        let Some(vs) = volume_size else {
            if chunk_size.is_some() || parity.is_some() {
                return Err(RequestError::VolumeShapeWithoutSize.into());
            }
            return Ok(None);
        };
        let volume_size = size::parse("--volume-size", vs)?;
        let chunk_size = chunk_size
            .map(|c| size::parse("--chunk-size", c))
            .transpose()?;
        let fat32 = vs.trim().eq_ignore_ascii_case("fat32");
        if let Some(c) = chunk_size
            && fat32
            && c > size::FAT_MAX_FILE
        {
            return Err(FlagError::Fat32Chunk {
                chunk: c,
                max: size::FAT_MAX_FILE,
            }
            .into());
        }
        let parity = parity.unwrap_or(0);
        if parity > 255 {
            return Err(FlagError::Parity { parity }.into());
        }
        Ok(Some(Self {
            volume_size,
            chunk_size,
            parity,
        }))
    }

    /// The chunk size used: the one asked for, else 1 GiB, or a quarter of
    /// a volume when volumes are smaller than 4 GiB (rounded to 512).
    pub fn chunk(&self) -> u64 {
        self.chunk_size.unwrap_or_else(|| {
            size::DEFAULT_CHUNK
                .min(self.volume_size / 4 / 512 * 512)
                .max(512)
        })
    }
}

/// `site.tar` → `site`: the stem the volume names are made from.
fn stem(out: &Path) -> Result<(PathBuf, String), CreateError> {
    let name = out
        .file_name()
        .map(|n| n.to_string_lossy().into_owned())
        .unwrap_or_default();
    let lower = name.to_ascii_lowercase();
    if !lower.ends_with(".tar") || lower.ends_with(".tar.zst") || name.len() <= 4 {
        return Err(OutError::VolumesNotTar {
            out: out.to_path_buf(),
        }
        .into());
    }
    let dir = out.parent().map(Path::to_path_buf).unwrap_or_default();
    Ok((dir, name[..name.len() - 4].to_string()))
}

fn width(n: usize) -> usize {
    n.to_string().len().max(4)
}

/// The data volume `v` (1-based) of `count`: `NAME.v0001-of-0003.tar`.
pub fn volume_path(out: &Path, v: usize, count: usize) -> Result<PathBuf, CreateError> {
    let (dir, stem) = stem(out)?;
    let w = width(count);
    Ok(dir.join(format!("{stem}.v{v:0w$}-of-{count:0w$}.tar")))
}

/// Parity volume `j` (1-based) of `count`: `NAME.p0001-of-0002.tar`.
pub fn parity_path(out: &Path, j: usize, count: usize) -> Result<PathBuf, CreateError> {
    let (dir, stem) = stem(out)?;
    let w = width(count);
    Ok(dir.join(format!("{stem}.p{j:0w$}-of-{count:0w$}.tar")))
}

/// `NAME.sha256`, beside the volumes.
pub fn sha256_path(out: &Path) -> Result<PathBuf, CreateError> {
    let (dir, stem) = stem(out)?;
    Ok(dir.join(format!("{stem}.sha256")))
}

/// Checks `--out` names a tar, before anything is downloaded.
pub fn check_out(out: &Path) -> Result<(), CreateError> {
    stem(out).map(|_| ())
}

/// What [`write`] made.
pub struct Written {
    pub manifest: Manifest,
    /// Data volumes, then parity volumes.
    pub files: Vec<PathBuf>,
    pub sha256_file: PathBuf,
}

/// The head entries' room, first guessed, then grown until the manifest
/// with its placements (and signature) fits.
const HEAD_ROOM_STEP: u64 = 64 << 10;

/// Packs `blobs` into volumes, hashes the chunks (and parity), records it
/// all in the manifest, signs it, and writes every volume — but those an
/// earlier run of the same request wrote already ([`resume`]).
/// `keep_created`: no `SOURCE_DATE_EPOCH` was given, so an earlier run's
/// creation time is taken over (else no volume of it could match).
#[allow(clippy::too_many_arguments)]
pub fn write(
    out: &Path,
    spec: &VolumeSpec,
    mut manifest: Manifest,
    blobs: &[Blob],
    series: &crate::series::Series,
    mtime: u64,
    keep_created: bool,
    progress: &Events,
) -> Result<Written, CreateError> {
    let earlier = resume::earlier_head(out);
    if keep_created
        && let Some(old) = earlier
            .as_ref()
            .and_then(|(m, _)| Manifest::from_json_bytes(m).ok())
    {
        manifest.created = old.created;
    }
    let paths: BTreeMap<&str, &Path> = blobs
        .iter()
        .map(|b| (b.sha256.as_str(), b.path.as_path()))
        .collect();
    let carried = carried(out, &manifest, &paths)?;
    let path_of =
        |sha: &str| -> PathBuf { paths.get(sha).map(|p| p.to_path_buf()).unwrap_or_default() };
    let chunk = spec.chunk();
    let cut = cut_with_room(&carried, &manifest, spec, series)?;
    let count = cut.volumes.len();
    progress.message(&format!(
        "{count} volumes of at most {} bytes, chunks of {chunk} bytes{}: hashing the chunks",
        spec.volume_size,
        if spec.parity > 0 {
            format!(", {} parity volumes", spec.parity)
        } else {
            String::new()
        }
    ));
    let packing = write::hash_pieces(cut, &path_of)?;
    let shards = if spec.parity > 0 {
        progress.message(&format!("computing {} parity volumes", spec.parity));
        Some(parity::compute(
            out,
            &packing,
            spec.parity as usize,
            &path_of,
        )?)
    } else {
        None
    };
    manifest.volumes = Some(Volumes {
        count: count as u32,
        volume_size: spec.volume_size,
        chunk_size: chunk,
        placements: packing.placements.clone(),
        parity: shards.as_ref().map(|s| Parity {
            shard_size: s.shard_size,
            shards: s.sha256.clone(),
        }),
    });
    let packed = Packed {
        packing: &packing,
        shards: shards.as_ref(),
        path_of: &path_of,
    };
    let result = sign_and_write(out, manifest, &packed, series, earlier, mtime, progress);
    if let Some(s) = &shards {
        for f in &s.files {
            let _ = std::fs::remove_file(f);
        }
    }
    result
}

/// The blobs the volumes carry (the manifest's, but a delta's
/// prerequisites), each of them in `blobs` to be written.
fn carried(
    out: &Path,
    manifest: &Manifest,
    paths: &BTreeMap<&str, &Path>,
) -> Result<Vec<(Sha256, u64)>, CreateError> {
    let mut carried: Vec<(Sha256, u64)> = manifest.blobs().into_iter().collect();
    if let Some(d) = &manifest.delta {
        carried.retain(|(sha, _)| !d.prerequisites.iter().any(|p| &p.sha256 == sha));
    }
    for (sha, _) in &carried {
        if !paths.contains_key(sha.as_str()) {
            return Err(CreateError::io(
                out,
                std::io::Error::other(format!("blob {sha} is not in the cache to be written")),
            ));
        }
    }
    Ok(carried)
}

/// The volumes planned with room for the head: the room grows until the
/// manifest fits.
fn cut_with_room(
    carried: &[(Sha256, u64)],
    manifest: &Manifest,
    spec: &VolumeSpec,
    series: &crate::series::Series,
) -> Result<plan::Cut, CreateError> {
    let chunk = spec.chunk();
    let mut room = HEAD_ROOM_STEP;
    loop {
        let cut = plan::pack(carried, spec.volume_size, chunk, room)?;
        let need = head_len(manifest, &cut, spec, chunk, series)?;
        if need <= room {
            return Ok(cut);
        }
        room = need.div_ceil(HEAD_ROOM_STEP) * HEAD_ROOM_STEP;
    }
}

/// The chunks hashed and the parity computed: what the volumes hold.
struct Packed<'a> {
    packing: &'a plan::Packing,
    shards: Option<&'a parity::Shards>,
    path_of: &'a dyn Fn(&str) -> PathBuf,
}

/// Checks and signs the manifest, plans every volume (the data volumes,
/// then the parity volumes), keeps what an earlier run left as planned,
/// and writes the rest, with the manifest's sha256 file last.
fn sign_and_write(
    out: &Path,
    manifest: Manifest,
    packed: &Packed<'_>,
    series: &crate::series::Series,
    earlier: Option<(Vec<u8>, Option<Vec<u8>>)>,
    mtime: u64,
    progress: &Events,
) -> Result<Written, CreateError> {
    let Packed {
        packing,
        shards,
        path_of,
    } = *packed;
    manifest.validate()?;
    let bytes = manifest.to_canonical_json();
    let sig = resume::signature(series, &manifest, &bytes, earlier.as_ref())?;
    let count = packing.volumes.len();
    let mut bodies = Vec::new();
    for (v, list) in packing.volumes.iter().enumerate() {
        bodies.push((volume_path(out, v + 1, count)?, write::Body::Data(list)));
    }
    if let Some(s) = shards {
        for (j, shard) in s.files.iter().enumerate() {
            let body = write::Body::Parity {
                index: j,
                shard,
                size: s.shard_size,
                sha256: &s.sha256[j],
            };
            let path = parity_path(out, j + 1, s.files.len())?;
            bodies.push((path, body));
        }
    }
    let mut planned = Vec::new();
    for (path, body) in &bodies {
        let segs = write::segments(&bytes, sig.as_deref(), mtime, packing, body, path_of)
            .map_err(|e| CreateError::io(out, e))?;
        planned.push((path.clone(), segs));
    }
    let sha = llmgw_shared::sha256_hex(&bytes);
    let sha256_file = sha256_path(out)?;
    let sha256_text = format!("{sha}  {MANIFEST_NAME}\n");
    // What an earlier run left: kept when as planned, else refused
    // before anything is written.
    let todo = resume::check_earlier(
        out,
        &planned,
        &bytes,
        sig.as_deref(),
        &sha256_file,
        &sha256_text,
        progress,
    )?;
    let mut files = Vec::new();
    for (dest, segs) in &planned {
        if let Some(replace) = todo.get(dest) {
            progress.message(&format!("writing {}", dest.display()));
            let (temp, tmp) = crate::writer::temp::open_locked(dest)?;
            write::write_volume(dest, temp, &tmp, segs, *replace)?;
        }
        files.push(dest.clone());
    }
    // One there already names this manifest (check_earlier saw to it).
    if !sha256_file.exists() {
        let tmp = crate::writer::temp_name(&sha256_file);
        std::fs::write(&tmp, &sha256_text).map_err(|e| CreateError::io(&tmp, e))?;
        std::fs::rename(&tmp, &sha256_file).map_err(|e| CreateError::io(&sha256_file, e))?;
    }
    Ok(Written {
        manifest,
        files,
        sha256_file,
    })
}

/// Refuses, before anything is downloaded, a chunk size no volume can
/// hold (the largest file's first piece must fit beside the manifest).
/// The bytes the head entries (the manifest and its signature, with their
/// tar headers) take once `cut` is in the manifest. Measured on a copy that
/// is never written: the pieces' and parity shards' digests are not known
/// before the chunks are hashed, so each stands in as the blob's own
/// sha256 (for a shard, that of nothing) — every sha256 is written as 64
/// hex digits, so the copy is as long as the manifest will be, and its
/// signature (made only to be measured) as long as the real one.
fn head_len(
    manifest: &Manifest,
    cut: &plan::Cut,
    spec: &VolumeSpec,
    chunk: u64,
    series: &crate::series::Series,
) -> Result<u64, CreateError> {
    let mut measured = manifest.clone();
    measured.volumes = Some(Volumes {
        count: cut.volumes.len() as u32,
        volume_size: spec.volume_size,
        chunk_size: chunk,
        placements: cut.placements(|_, b, _| b.sha256.clone()),
        parity: (spec.parity > 0).then(|| Parity {
            shard_size: u64::MAX,
            shards: vec![Sha256::of(b""); spec.parity as usize],
        }),
    });
    let bytes = measured.to_canonical_json();
    let sig = series.sign(&measured, &bytes)?;
    Ok(plan::entry_cost(bytes.len() as u64)
        + sig
            .as_ref()
            .map_or(0, |s| plan::entry_cost(s.len() as u64 + 512)))
}

pub fn check_fits(spec: &VolumeSpec, sizes: impl Iterator<Item = u64>) -> Result<(), CreateError> {
    let Some(max) = sizes.max() else {
        return Ok(());
    };
    let what = format!("blob (the largest file, {max} bytes)");
    Ok(plan::check_fits(
        &what,
        max,
        spec.volume_size,
        spec.chunk(),
        HEAD_ROOM_STEP,
    )?)
}

/// The files beside `out` named as volumes of its set
/// (`NAME.v*-of-*.tar`, `NAME.p*-of-*.tar`), whatever their count.
pub fn set_files(out: &Path) -> Result<Vec<PathBuf>, CreateError> {
    let (dir, stem) = stem(out)?;
    let dir = if dir.as_os_str().is_empty() {
        PathBuf::from(".")
    } else {
        dir
    };
    let mut found = Vec::new();
    let rd = match std::fs::read_dir(&dir) {
        Ok(rd) => rd,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(found),
        Err(e) => return Err(CreateError::io(&dir, e)),
    };
    for e in rd.flatten() {
        let n = e.file_name().to_string_lossy().into_owned();
        let of_set = (n.starts_with(&format!("{stem}.v")) || n.starts_with(&format!("{stem}.p")))
            && n.ends_with(".tar")
            && n[stem.len() + 2..].contains("-of-");
        if of_set {
            found.push(dir.join(n));
        }
    }
    found.sort();
    Ok(found)
}

/// Refuses, before anything is downloaded, a file under a volume's name
/// that is no volume at all. Volumes an earlier run wrote are checked
/// against the plan once it is known ([`resume::check_earlier`]).
pub fn check_free_names(out: &Path) -> Result<(), CreateError> {
    for p in set_files(out)? {
        if resume::read_head(&p).is_none() {
            return Err(OutError::NotAVolume {
                out: out.to_path_buf(),
                path: p,
            }
            .into());
        }
    }
    Ok(())
}
