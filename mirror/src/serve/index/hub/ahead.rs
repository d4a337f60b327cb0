//! Answers about one Hub repository made before the index holding it is
//! served: the revision JSON of each served revision of a large repository
//! (issue 35: a request after an import must not pay a build of hundreds of
//! milliseconds for a 100 000-file listing).
//!
//! Invariant: an answer here was made from the repository part that holds
//! it ([`crate::serve::index::HubRepo::ahead`]), before any index holding that part was
//! served, so it is served only with the file list it was made from: never
//! an answer of an index gone, nor of files the store no longer holds. A
//! part kept across a rebuild (its version unchanged) keeps its answers.

use std::collections::BTreeMap;

use bytes::Bytes;

/// From this many files in a served revision its revision JSON is made
/// ahead (about 1 MB, some 20 ms in a dev build); below, a request builds
/// it in a few milliseconds.
pub const AHEAD_FROM_FILES: usize = 10_000;

/// A built JSON body and its ETag, as the route would send them.
#[derive(Debug, Clone)]
pub struct Made {
    pub body: Bytes,
    pub etag: String,
}

/// The answers made ahead for one repository, by commit.
#[derive(Debug, Clone, Default)]
pub struct Ahead {
    revisions: BTreeMap<String, Made>,
}

impl Ahead {
    /// The revision JSON (no `blobs`) of `commit`, when made ahead.
    pub fn revision(&self, commit: &str) -> Option<&Made> {
        self.revisions.get(commit)
    }

    pub fn add_revision(&mut self, commit: String, made: Made) {
        self.revisions.insert(commit, made);
    }

    /// How many answers are held.
    pub fn len(&self) -> usize {
        self.revisions.len()
    }

    pub fn is_empty(&self) -> bool {
        self.revisions.is_empty()
    }
}
