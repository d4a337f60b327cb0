//! The check a bundle written on this side passes before it is reported
//! written (`bundle create`, `mirror export`): the mirror's own import check
//! (`bundle verify`'s, for a set of volumes), given to the bundler, which
//! does not depend on the mirror.

/// The check `bundle create` runs on what it wrote before publishing it:
/// `bundle verify`'s whole check (every manifest rule import applies, the
/// signed release, every image's closed tree, every blob's entry and size),
/// but for hashing again the blobs the writer hashed as it wrote them.
pub struct AsImportWould {
    /// The keys llmgw's release must verify with (`--trust`).
    trusted: Vec<llmgw_shared::signing::PublicKey>,
}

impl AsImportWould {
    /// With the keys in the `--trust` files `paths`.
    pub fn of(paths: &[std::path::PathBuf]) -> anyhow::Result<Self> {
        let trusted = paths
            .iter()
            .map(|p| llmgw_mirror::read_key_file(p))
            .collect::<Result<Vec<_>, _>>()?;
        Ok(Self::with_keys(trusted))
    }

    /// With these keys (a store's, for `mirror export`).
    pub fn with_keys(trusted: Vec<llmgw_shared::signing::PublicKey>) -> Self {
        Self { trusted }
    }
}

impl llmgw_bundler::CheckWritten for AsImportWould {
    fn check(
        &self,
        path: &std::path::Path,
        sha256: &llmgw_shared::BundleId,
    ) -> Result<(), Box<dyn std::error::Error + Send + Sync>> {
        let mut target = llmgw_mirror::WrittenBy;
        let quiet = llmgw_shared::progress::Quiet;
        llmgw_mirror::check_bundle(path, sha256, &self.trusted, &mut target, &quiet)?;
        Ok(())
    }

    fn check_volumes(
        &self,
        paths: &[std::path::PathBuf],
        sha256: &llmgw_shared::BundleId,
    ) -> Result<(), Box<dyn std::error::Error + Send + Sync>> {
        let quiet = llmgw_shared::progress::Quiet;
        let set = llmgw_mirror::verify_volumes(paths, sha256, &quiet)?;
        let damaged: Vec<String> = set
            .volumes
            .iter()
            .filter(|v| !matches!(&v.result, Ok(r) if r.whole()))
            .map(|v| v.path.display().to_string())
            .collect();
        if !damaged.is_empty() || !set.missing().is_empty() {
            return Err(format!(
                "bundle verify of the volumes written refuses them: damaged or unreadable: \
                 [{}]; data volumes missing: {:?}",
                damaged.join(", "),
                set.missing()
            )
            .into());
        }
        Ok(())
    }
}
