//! Which format a manifest must declare: the lowest whose readers
//! understand everything it holds, so an older mirror refuses what it
//! would misread by its version, with a message to upgrade, instead of
//! by an unknown field.

use std::collections::BTreeMap;

use super::{
    FORMAT_EVIDENCE, FORMAT_KERNELS, FORMAT_OCI, FORMAT_PEP740, FORMAT_SHARED_BLOBS,
    FORMAT_SIGNATURES, FORMAT_VERSION, FORMAT_XET, Manifest, ManifestError,
};
use crate::Sha256;

impl Manifest {
    /// The format a manifest with this content must declare: format 9 when
    /// it carries a wheel's PEP 740 attestation, 8 when
    /// it carries a kernel repository, 7 when
    /// it carries publishers' signatures, 6 when
    /// it records a Xet hash, 5 when it names a blob twice, 4
    /// when it carries evidence (an SBOM) or runtime extras, else 3 when it carries images or
    /// charts, else format 2.
    pub fn needed_format(&self) -> u32 {
        if self.carries_pep740() {
            FORMAT_PEP740
        } else if self.carries_kernels() {
            FORMAT_KERNELS
        } else if self.carries_signatures() {
            FORMAT_SIGNATURES
        } else if self.records_xet_hashes() {
            FORMAT_XET
        } else if self.names_a_blob_twice() {
            FORMAT_SHARED_BLOBS
        } else if self.evidence.is_some() || !self.extras.is_empty() {
            FORMAT_EVIDENCE
        } else if self.images.is_empty() && self.charts.is_empty() {
            FORMAT_VERSION
        } else {
            FORMAT_OCI
        }
    }

    /// Refuses a manifest that declares a lower format than its content
    /// needs: a reader of that format would misread it (serve none of its
    /// images, or refuse a field without naming why).
    pub(super) fn check_declared_format(&self) -> Result<(), ManifestError> {
        let holds = [
            (
                FORMAT_OCI,
                !self.images.is_empty() || !self.charts.is_empty(),
                "carries images or charts, which need",
            ),
            (
                FORMAT_EVIDENCE,
                self.evidence.is_some(),
                "carries evidence (an SBOM), which needs",
            ),
            (
                FORMAT_XET,
                self.records_xet_hashes(),
                "records the Hub's Xet hashes, which need",
            ),
            (
                FORMAT_SIGNATURES,
                self.carries_signatures(),
                "carries publishers' signatures, which need",
            ),
            (
                FORMAT_KERNELS,
                self.carries_kernels(),
                "carries a kernel repository, which needs",
            ),
            (
                FORMAT_PEP740,
                self.carries_pep740(),
                "carries a PEP 740 attestation, which needs",
            ),
        ];
        for (needed, held, what) in holds {
            if held && self.format_version < needed {
                return Err(ManifestError::Inconsistent(format!(
                    "it says format {} but {what} format {needed}",
                    self.format_version
                )));
            }
        }
        Ok(())
    }

    /// Whether a Hub kernel repository is carried ([`FORMAT_KERNELS`]).
    pub fn carries_kernels(&self) -> bool {
        self.repos
            .iter()
            .any(|r| r.kind == super::RepoKind::Kernel || r.kernel.is_some())
    }

    /// Whether publishers' signatures are carried ([`FORMAT_SIGNATURES`]).
    pub fn carries_signatures(&self) -> bool {
        self.evidence
            .as_ref()
            .is_some_and(|e| e.signatures.is_some())
    }

    /// Whether a wheel's PEP 740 attestation is carried ([`FORMAT_PEP740`]).
    pub fn carries_pep740(&self) -> bool {
        self.evidence
            .as_ref()
            .and_then(|e| e.signatures.as_ref())
            .is_some_and(|s| s.carries_pep740())
    }

    /// Whether a Hub file's Xet hash is recorded ([`FORMAT_XET`]).
    pub fn records_xet_hashes(&self) -> bool {
        self.repos
            .iter()
            .flat_map(|r| &r.files)
            .any(|f| f.xet_hash.is_some())
    }

    /// Whether an image or chart names one blob under two media types
    /// ([`FORMAT_SHARED_BLOBS`]).
    fn names_a_blob_twice(&self) -> bool {
        let images = self
            .images
            .iter()
            .chain(self.charts.iter().map(|c| &c.artifact));
        images.into_iter().any(|image| {
            let mut seen: BTreeMap<&Sha256, &str> = BTreeMap::new();
            image
                .all_blobs()
                .any(|d| *seen.entry(&d.sha256).or_insert(&d.media_type) != d.media_type.as_str())
        })
    }
}
