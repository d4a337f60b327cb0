//! The small files a serving replica writes itself into a store in a
//! bucket: its miss log (`state/misses-<instance>.json`) and the models'
//! tar layer digests (`state/model-layers.json`). A replica works in a
//! fresh folder of its own, so what it writes there is lost with the pod
//! unless it goes up into the bucket, where another replica, or the same
//! one after a restart, reads it back.
//!
//! Invariant: an own file is never removed or replaced by [`Remote::pull`]
//! (that would lose what was written and not yet sent), and it goes up only
//! when its bytes changed since it last did. A file one replica alone
//! writes goes up as it is; a file every replica writes (the layer
//! digests) is merged with the bucket's copy first, so a replica never
//! drops from the bucket what another one learned. Two replicas sending
//! within one round trip of each other may still drop one's newest
//! entries from the bucket (S3 has no compare-and-swap every server
//! honours); each keeps them in memory and sends them with its next
//! change, and what a restart does not find is hashed again, never
//! served wrong.

use llmgw_shared::Sha256;

use super::{MAX_SMALL, Remote};
use crate::store::StoreError;
use crate::store::fsutil;

/// How an own file's bytes meet the bucket's copy when it goes up:
/// `merge(ours, theirs)` gives what to send.
pub type Merge = fn(&[u8], &[u8]) -> Vec<u8>;

/// One small file this process writes itself.
#[derive(Debug, Clone)]
pub struct OwnFile {
    /// Its key, as [`super::small_key`] shapes them (`state/NAME`).
    pub key: String,
    /// `None` when this process alone writes it: ours replaces theirs.
    pub merge: Option<Merge>,
}

impl OwnFile {
    /// The state file `name` (`state/NAME`), merged with the bucket's
    /// copy by `merge` if it has one.
    pub fn state(name: &str, merge: Option<Merge>) -> Self {
        Self {
            key: format!("{}/{name}", crate::store::layout::STATE),
            merge,
        }
    }
}

impl Remote {
    /// From now on, `files` are this process's own: pulls leave them be,
    /// [`Remote::push_own`] sends them up.
    pub fn keep_own(&mut self, files: Vec<OwnFile>) {
        self.own = files;
    }

    /// Whether `key` is one of this process's own files.
    pub(super) fn is_own(&self, key: &str) -> bool {
        self.own.iter().any(|f| f.key == key)
    }

    /// Sends up each own file whose bytes changed since it last went up
    /// (merged with the bucket's copy where it has a merge); answers how
    /// many went. A file not written yet is skipped.
    pub fn push_own(&mut self) -> Result<usize, StoreError> {
        let mut sent = 0;
        for f in self.own.clone() {
            let path = self.work.join(&f.key);
            let ours = match fsutil::read_bounded(&path, MAX_SMALL) {
                Ok(b) => b,
                Err(StoreError::Io { source, .. })
                    if source.kind() == std::io::ErrorKind::NotFound =>
                {
                    continue;
                }
                Err(e) => return Err(e),
            };
            let sha = Sha256::of(&ours);
            if self.own_sent.get(&f.key) == Some(&sha) {
                continue;
            }
            let up = match (f.merge, self.s3.get_small(&f.key, MAX_SMALL)?) {
                (Some(merge), Some(theirs)) => merge(&ours, &theirs),
                _ => ours,
            };
            self.s3.put_small(&f.key, up)?;
            self.own_sent.insert(f.key, sha);
            sent += 1;
        }
        Ok(sent)
    }
}
