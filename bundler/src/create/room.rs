//! Refusals about where the bundle goes, made before any network: an
//! output that exists or has no folder, a FAT folder too small for a
//! file, and (once the plan says how much) too little free space.

use std::path::{Path, PathBuf};

use crate::cache::{Cache, Expect};
use crate::error::{CreateError, OutError};
use crate::plan::Plan;
use crate::space;
use crate::spec::CreateSpec;
use crate::writer::Format;

/// Where the bundle goes.
pub(super) struct OutDir {
    /// The folder `--out` is in.
    pub dir: PathBuf,
    /// Whether that folder is on a FAT filesystem (no file over 4 GiB − 1).
    pub is_fat: bool,
}

/// Refuses an `--out` that exists, whose folder does not, or (for
/// volumes) whose names are taken or too large for a FAT folder.
pub(super) fn check_out(spec: &CreateSpec) -> Result<OutDir, CreateError> {
    if spec.out.exists() {
        return Err(OutError::Exists {
            out: spec.out.clone(),
        }
        .into());
    }
    let dir = match spec.out.parent() {
        Some(p) if !p.as_os_str().is_empty() => p.to_path_buf(),
        _ => PathBuf::from("."),
    };
    if !dir.is_dir() {
        return Err(OutError::NoFolder {
            out: spec.out.clone(),
            dir,
        }
        .into());
    }
    if spec.volumes.is_some() {
        crate::volumes::check_free_names(&spec.out)?;
    }
    let is_fat = crate::volumes::size::is_fat(&dir).unwrap_or(false);
    if let Some(v) = &spec.volumes
        && is_fat
        && v.volume_size > crate::volumes::size::FAT_MAX_FILE
    {
        return Err(OutError::FatVolumes {
            out: spec.out.clone(),
            max: crate::volumes::size::FAT_MAX_FILE,
            volume_size: v.volume_size,
        }
        .into());
    }
    Ok(OutDir { dir, is_fat })
}

/// Refuses, before the first large download, a plan the output folder or
/// the disks cannot hold.
pub(super) fn check_room(
    spec: &CreateSpec,
    format: Format,
    cache: &Cache,
    out: &OutDir,
    plan: &Plan,
) -> Result<(), CreateError> {
    if out.is_fat && spec.volumes.is_none() {
        check_fat(spec, format, plan)?;
    }
    check_space(spec, format, cache, &out.dir, plan)?;
    if let Some(v) = &spec.volumes {
        let sizes = plan.downloads.iter().map(|d| d.size);
        crate::volumes::check_fits(v, sizes.chain(plan.stored.iter().map(|s| s.size)))?;
    }
    Ok(())
}

/// Refuses, before the first large download, a bundle a FAT output folder
/// cannot hold: a `.tar` over 4 GiB − 1, or a directory with such a file.
fn check_fat(spec: &CreateSpec, format: Format, plan: &Plan) -> Result<(), CreateError> {
    let max = crate::volumes::size::FAT_MAX_FILE;
    let total = plan.total_bytes();
    let too_big = match format {
        Format::Tar => total + space::bundle_overhead(total) > max,
        Format::TarZst => false,
        Format::Dir => plan.downloads.iter().any(|d| d.size > max),
    };
    if too_big {
        return Err(OutError::FatBundle {
            out: spec.out.clone(),
            max,
            total,
        }
        .into());
    }
    Ok(())
}

/// Refuses, before the first large download, a run the disks cannot hold.
/// The cache needs room for what it will keep: everything for a directory
/// bundle (whose files are links to it) or with `--cache`, else only the
/// small files the manifest needs first; the output needs the bundle
/// (next to nothing for a directory of links on the cache's filesystem).
fn check_space(
    spec: &CreateSpec,
    format: Format,
    cache: &Cache,
    out_dir: &Path,
    plan: &Plan,
) -> Result<(), CreateError> {
    let total = plan.total_bytes();
    let keeps_all = format == Format::Dir || spec.keep_in_cache || spec.volumes.is_some();
    let cache_need: u64 = plan
        .downloads
        .iter()
        .filter(|d| keeps_all || matches!(d.expect, Expect::GitBlobSha1(_)))
        .map(|d| d.size - cache.bytes_present(&d.expect, d.size))
        .sum();
    let same_fs = space::free_space(cache.root()).map(|c| c.filesystem).ok()
        == space::free_space(out_dir).map(|o| o.filesystem).ok();
    let out_need = match (&spec.volumes, format) {
        // Every volume, and the parity shards twice (computed, then written),
        // less the volumes an earlier run left (kept when as planned).
        (Some(v), _) => (total
            + space::bundle_overhead(total)
            + 2 * u64::from(v.parity) * v.volume_size.min(total + (1 << 20)))
        .saturating_sub(crate::volumes::set_files(&spec.out).map_or(0, |files| {
            files
                .iter()
                .filter_map(|f| std::fs::metadata(f).ok())
                .map(|m| m.len())
                .sum()
        })),
        (None, Format::Dir) if same_fs => space::bundle_overhead(0),
        _ => total + space::bundle_overhead(total),
    };
    space::check(cache.root(), cache_need, out_dir, out_need)?;
    Ok(())
}
