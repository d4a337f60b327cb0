//! `llmgw bundle import` as one run on a store wherever it is: the store
//! opened in its session (for a bucket: under its lock object, its small
//! files pulled into the work folder), the bundle or volume set taken in
//! there, then what it added published — blobs first, manifests last.
//!
//! Invariant: nothing is published after a refused bundle (its staging
//! stays in the folder for a rerun; a store folder this run made is
//! removed again); what the volumes of a set brought is published even
//! when one of them was refused, since it was verified and a later run
//! builds on it.

use std::path::{Path, PathBuf};

use llmgw_shared::BundleId;
use thiserror::Error;

use super::volumes::import::{VolumesOutcome, import_volumes};
use super::volumes::verify::is_volume_set;
use super::{ImportError, ImportOptions, ImportOutcome, import_with};
use crate::store::StoreError;
use crate::store::new_store::NewStore;
use crate::store::remote::Pushed;
use crate::store::session::{SessionError, StoreLocation};
use llmgw_shared::progress::Progress;

/// What an import run took in.
#[derive(Debug)]
pub enum Imported {
    /// One bundle: imported, or held already.
    Bundle(ImportOutcome),
    /// A set of volumes: published, or accepted so far.
    Volumes(VolumesOutcome),
}

/// Why an import run stopped.
#[derive(Debug, Error)]
pub enum ImportRunError {
    /// The store could not be opened, or what the run added published.
    #[error(transparent)]
    Session(#[from] Box<SessionError>),
    /// Making the store's folders.
    #[error(transparent)]
    Store(#[from] Box<StoreError>),
    /// The bundle was refused; nothing was published.
    #[error("import of {} refused", bundle.display())]
    Refused {
        /// The bundle given.
        bundle: PathBuf,
        /// The store folder this run had made and removed again, if any.
        undone: Option<PathBuf>,
        /// Why.
        #[source]
        source: Box<ImportError>,
    },
    /// The volume set was refused; what its volumes brought is published.
    #[error("import of volumes refused")]
    Volumes(#[source] Box<ImportError>),
}

/// Imports `bundles` (one bundle, or volumes of one set) into the store at
/// `location`, and publishes what the import added. `published` is told
/// what went up to a bucket.
pub fn import_into(
    location: &StoreLocation,
    bundles: &[PathBuf],
    sha256: Option<&BundleId>,
    opts: &ImportOptions,
    progress: &dyn Progress,
    published: &dyn Fn(Pushed),
) -> Result<Imported, ImportRunError> {
    let mut session = location
        .open(Some("llmgw bundle import"))
        .map_err(Box::new)?;
    let store = session.store().clone();
    let mut publish = || -> Result<(), ImportRunError> {
        if let Some(pushed) = session.publish().map_err(Box::new)? {
            published(pushed);
        }
        Ok(())
    };
    if is_volume_set(bundles) {
        // A set taken in over several runs keeps its staging in the store
        // folder (for a bucket, its work folder, kept between runs).
        let taken = import_volumes(&store, bundles, sha256, opts, progress);
        publish()?;
        return taken
            .map(Imported::Volumes)
            .map_err(|e| ImportRunError::Volumes(Box::new(e)));
    }
    let bundle = first(bundles);
    let made = NewStore::create(&store).map_err(Box::new)?;
    match import_with(&store, bundle, sha256, opts, progress) {
        Ok(outcome) => {
            publish()?;
            Ok(Imported::Bundle(outcome))
        }
        Err(source) => Err(ImportRunError::Refused {
            bundle: bundle.to_path_buf(),
            undone: made.undo(),
            source: Box::new(source),
        }),
    }
}

/// The one bundle of a run that is not a volume set (clap asks for at
/// least one path).
fn first(bundles: &[PathBuf]) -> &Path {
    bundles.first().map_or(Path::new(""), PathBuf::as_path)
}
