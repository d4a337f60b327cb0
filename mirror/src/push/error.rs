//! Why `llmgw mirror push` cannot say what to push: each names what was
//! asked, what the store holds instead, and what to do.

use thiserror::Error;

use crate::store::StoreError;

/// Why no push plan can be made.
#[derive(Debug, Error)]
pub enum PushPlanError {
    /// The store could not be read.
    #[error(transparent)]
    Store(Box<StoreError>),
    /// A bucket store's blobs are not files at hand.
    #[error(
        "the store is in a bucket; push reads blobs from a folder store: run it where the \
         bucket's store is synced to a folder, or push from a replica's folder store"
    )]
    Bucket,
    /// Nothing was asked.
    #[error("nothing to push: name --image, --chart or --models, or pass --all")]
    NothingAsked,
    /// A name asked for is not held.
    #[error("the store holds no {kind} {asked}; it holds: {held}")]
    NotHeld {
        /// `image`, `chart` or `model`.
        kind: &'static str,
        /// What was asked, escaped.
        asked: String,
        /// What it holds of that kind, escaped.
        held: String,
    },
    /// An image path several registries hold.
    #[error(
        "the image {asked} is held from several registries ({held}); name it with its registry \
         (REGISTRY/PATH) — they would be pushed to the same repository"
    )]
    Ambiguous {
        /// What was asked, escaped.
        asked: String,
        /// The registries.
        held: String,
    },
    /// A model whose image profile cannot be made yet.
    #[error(
        "a model's image profile cannot be made: the tar layer of {path} (a held file) cannot \
         be hashed; run `llmgw mirror verify`"
    )]
    Layer {
        /// The file, escaped.
        path: String,
        /// Why.
        #[source]
        source: Box<StoreError>,
    },
    /// A held manifest or blob is gone or unreadable.
    #[error(
        "{what}: the store lacks {sha256} ({size} bytes), which it names; run `llmgw mirror \
         verify`, import a bundle carrying it again, then push"
    )]
    Missing {
        /// The repository, escaped.
        what: String,
        /// The digest.
        sha256: String,
        /// Its size.
        size: u64,
    },
    /// A made document could not be made again.
    #[error("{what}: the document {sha256} could not be made again ({why})")]
    Unmade {
        /// The repository, escaped.
        what: String,
        /// The digest.
        sha256: String,
        /// Why.
        why: String,
    },
    /// A held manifest that is not JSON.
    #[error("{what}: the held manifest {sha256} is not a JSON manifest; run `llmgw mirror verify`")]
    BadManifest {
        /// The repository, escaped.
        what: String,
        /// The digest.
        sha256: String,
    },
}

impl From<StoreError> for PushPlanError {
    fn from(e: StoreError) -> Self {
        Self::Store(Box::new(e))
    }
}
