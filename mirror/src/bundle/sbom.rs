//! `llmgw bundle sbom`: the CycloneDX SBOM a bundle carries, read from the
//! bundle as it streams and checked against the sha256 its manifest names.
//!
//! Invariant: the bytes handed back hashed to the manifest's
//! `evidence.sbom` and are at most [`MAX_SBOM_BYTES`]; the manifest itself is
//! not checked against a carried hash or signature here (the caller says
//! so), as `bundle inspect` does not.

use std::io::Read;
use std::path::{Path, PathBuf};

use llmgw_shared::manifest::{Manifest, ManifestError, blob_entry_name};
use llmgw_shared::sha256_hex;
use thiserror::Error;

use crate::bundle::reader::{self, EntryKind, ReadError};
use crate::bundle::verify::{self, VerifyError};

/// An SBOM larger than this is not read: a bundle of a hundred thousand
/// files gives some tens of MiB.
pub const MAX_SBOM_BYTES: u64 = 256 << 20;

/// Why a bundle's SBOM could not be given.
#[derive(Debug, Error)]
pub enum SbomError {
    /// The manifest could not be read.
    #[error("reading the manifest of {}", .path.display())]
    Manifest {
        /// The bundle.
        path: PathBuf,
        /// Why.
        #[source]
        source: Box<VerifyError>,
    },
    /// The manifest is not one this llmgw reads.
    #[error("the manifest of {}", .path.display())]
    Parse {
        /// The bundle.
        path: PathBuf,
        /// Why.
        #[source]
        source: ManifestError,
    },
    /// A bundle made before SBOMs (format 1 to 3), or a repair bundle.
    #[error(
        "{} is bundle format {format} and carries no SBOM (bundles of format 4, made by \
         llmgw with issue #33, carry one; a repair bundle has none); make it again with a \
         current llmgw",
        .path.display()
    )]
    NoSbom {
        /// The bundle.
        path: PathBuf,
        /// Its format.
        format: u32,
    },
    /// The blob is not in this file (another volume of a set holds it).
    #[error(
        "{} does not hold the SBOM blob {sha256} its manifest names; for a bundle cut into \
         volumes, give the volume that holds it",
        .path.display()
    )]
    NotFound {
        /// The bundle.
        path: PathBuf,
        /// The SBOM's sha256.
        sha256: String,
    },
    /// Its bytes are not the ones the manifest names.
    #[error(
        "{}: the SBOM blob should hash to {expected} ({size} bytes) but its bytes hash to \
         {actual} ({found} bytes): the bundle is damaged or was altered; do not use it",
        .path.display()
    )]
    WrongBytes {
        /// The bundle.
        path: PathBuf,
        /// The sha256 the manifest names.
        expected: String,
        /// The size it names.
        size: u64,
        /// What the bytes hashed to.
        actual: String,
        /// How many bytes there were.
        found: u64,
    },
    /// The bundle could not be read.
    #[error(transparent)]
    Read(#[from] ReadError),
}

enum Flow {
    Refused(Box<SbomError>),
    Found(Vec<u8>),
}

impl From<ReadError> for Flow {
    fn from(e: ReadError) -> Self {
        Flow::Refused(Box::new(SbomError::Read(e)))
    }
}

/// The SBOM of the bundle at `path` (and the manifest's sha256).
pub fn read_sbom(path: &Path) -> Result<(String, Vec<u8>), SbomError> {
    let bytes = verify::read_manifest_unverified(path).map_err(|source| SbomError::Manifest {
        path: path.to_path_buf(),
        source: Box::new(source),
    })?;
    let manifest_sha = sha256_hex(&bytes);
    let m = Manifest::from_json_bytes(&bytes).map_err(|source| SbomError::Parse {
        path: path.to_path_buf(),
        source,
    })?;
    let Some(sbom) = m.evidence.map(|e| e.sbom) else {
        return Err(SbomError::NoSbom {
            path: path.to_path_buf(),
            format: m.format_version,
        });
    };
    let entry = blob_entry_name(sbom.sha256.as_str());
    let r = reader::for_each_entry(path, |head, data: &mut dyn Read| {
        if head.path != entry || head.kind != EntryKind::File {
            return Ok(());
        }
        let mut buf = Vec::new();
        data.take(sbom.size.min(MAX_SBOM_BYTES) + 1)
            .read_to_end(&mut buf)
            .map_err(|source| {
                Flow::Refused(Box::new(SbomError::Read(ReadError::Stream {
                    path: path.to_path_buf(),
                    place: format!("in entry {entry}"),
                    source,
                })))
            })?;
        Err(Flow::Found(buf))
    });
    let buf = match r {
        Err(Flow::Found(b)) => b,
        Err(Flow::Refused(e)) => return Err(*e),
        Ok(_) => {
            return Err(SbomError::NotFound {
                path: path.to_path_buf(),
                sha256: sbom.sha256.to_string(),
            });
        }
    };
    let actual = sha256_hex(&buf);
    if actual != sbom.sha256.as_str() || buf.len() as u64 != sbom.size {
        return Err(SbomError::WrongBytes {
            path: path.to_path_buf(),
            expected: sbom.sha256.to_string(),
            size: sbom.size,
            actual,
            found: buf.len() as u64,
        });
    }
    Ok((manifest_sha, buf))
}
