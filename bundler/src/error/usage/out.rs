//! `--out` names a place the bundle (or its volumes) cannot be written:
//! something is there already, the folder is missing, or its filesystem
//! cannot hold the files.
//!
//! Invariant: nothing is ever overwritten, so each refusal says what to
//! remove or which other `--out` to choose.

use std::path::PathBuf;

use thiserror::Error;

/// The bundle cannot be written where `--out` says.
#[derive(Debug, Error)]
pub enum OutError {
    /// A file or folder is at `--out` already.
    #[error(
        "--out {}: it exists already; remove it or choose another name (a bundle is never \
         overwritten)",
        out.display()
    )]
    Exists {
        /// `--out`.
        out: PathBuf,
    },
    /// The folder `--out` is in is not there.
    #[error("--out {}: the folder {} does not exist", out.display(), dir.display())]
    NoFolder {
        /// `--out`.
        out: PathBuf,
        /// Its folder.
        dir: PathBuf,
    },
    /// Volumes larger than the FAT folder they go to can hold.
    #[error(
        "--out {}: the folder is on a FAT filesystem, which holds no file over {max} bytes \
         (4 GiB − 1), and --volume-size is {volume_size}; use --volume-size fat32",
        out.display()
    )]
    FatVolumes {
        /// `--out`.
        out: PathBuf,
        /// FAT's largest file, in bytes.
        max: u64,
        /// `--volume-size`, in bytes.
        volume_size: u64,
    },
    /// A one-file bundle larger than the FAT folder it goes to can hold.
    #[error(
        "--out {}: the folder is on a FAT filesystem, which holds no file over {max} bytes \
         (4 GiB − 1), and this bundle ({total} bytes) needs one; write volumes that fit with \
         --out NAME.tar --volume-size fat32",
        out.display()
    )]
    FatBundle {
        /// `--out`.
        out: PathBuf,
        /// FAT's largest file, in bytes.
        max: u64,
        /// The bundle's size, in bytes.
        total: u64,
    },
    /// Volumes asked for with an `--out` that is not `NAME.tar`.
    #[error(
        "--out {}: volumes are uncompressed tars; give --out NAME.tar with --volume-size \
         (NAME.v0001-of-000N.tar … are written)",
        out.display()
    )]
    VolumesNotTar {
        /// `--out`.
        out: PathBuf,
    },
    /// A file with a volume's name that is not a volume.
    #[error(
        "--out {}: {} exists already and is not a volume (it does not start with a \
         manifest.json); remove it or choose another name (volumes are never overwritten)",
        out.display(),
        path.display()
    )]
    NotAVolume {
        /// `--out`.
        out: PathBuf,
        /// The file in the way.
        path: PathBuf,
    },
    /// Volumes of an earlier run that differ from this run's plan.
    #[error(
        "--out {}: files of an earlier run are in the way and differ from what this run \
         plans, so nothing was written:\n  {}\nRemove them (they are another request's \
         volumes, or damaged) to have them written anew, or choose another --out; a volume \
         is never overwritten",
        out.display(),
        refused.join("\n  ")
    )]
    EarlierRun {
        /// `--out`.
        out: PathBuf,
        /// Each file in the way, with why it differs.
        refused: Vec<String>,
    },
    /// The bundle's name was taken while it was written (another run's).
    #[error(
        "{} appeared while the bundle was being written; not replacing it",
        out.display()
    )]
    Appeared {
        /// `--out`.
        out: PathBuf,
    },
}
