//! One size per sha256 across a whole manifest: every part that names a
//! blob claims its size here, so two parts that disagree are named
//! together.
//!
//! Invariant: a sha256 has exactly one size once claimed.

use std::collections::BTreeMap;

use super::ManifestError;
use crate::Sha256;

/// One size per sha256 across the whole manifest, remembering who claimed
/// it first so a contradiction names both.
#[derive(Default)]
pub(super) struct Claims(pub(super) BTreeMap<Sha256, (u64, String)>);

impl Claims {
    pub(super) fn claim(
        &mut self,
        sha: &Sha256,
        size: u64,
        who: String,
    ) -> Result<(), ManifestError> {
        match self.0.get(sha) {
            Some((other, first)) if *other != size => Err(ManifestError::Inconsistent(format!(
                "{who} and {first} have the same sha256 {sha} but sizes {size} and {other}"
            ))),
            Some(_) => Ok(()),
            None => {
                self.0.insert(sha.clone(), (size, who));
                Ok(())
            }
        }
    }
}
