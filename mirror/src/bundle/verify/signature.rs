//! Step 2, the signature step: every signed release (llmgw's own) has its
//! `SHA256SUMS.minisig` verified with a trusted key, and its `SHA256SUMS`
//! agrees with the manifest about every asset of that release.
//!
//! The signature files are ordinary blobs, and blobs come in hash order, so
//! they may arrive after other blobs: each release's check waits until both
//! its files are offered — from the target, when it holds them already, or
//! from the stream — and runs at once then.
//!
//! Invariant: a check that fails refuses the bundle the moment both files
//! are known; one that never ran (a file the bundle lacks) is never taken
//! as passed: [`Signatures::settle`] refuses it, or, for a file the
//! bundle leaves to the store, lists it as unchecked.

use std::collections::BTreeSet;

use llmgw_shared::manifest::Manifest;
use llmgw_shared::shown;
use llmgw_shared::signing::PublicKey;

use super::error::VerifyError;
use super::target::Target;
use crate::bundle::signed::{Pending, SignedRelease};

/// The checks of a bundle's signed releases, waiting for their files.
pub(crate) struct Signatures<'k> {
    pending: Vec<Pending>,
    trusted: &'k [PublicKey],
}

impl<'k> Signatures<'k> {
    /// Starts the check of every signed release of `manifest`, verifying
    /// at once those whose files `target` holds already.
    pub(crate) fn start<T: Target + ?Sized>(
        manifest: &Manifest,
        trusted: &'k [PublicKey],
        target: &T,
    ) -> Result<Self, T::Error> {
        let mut pending = Vec::new();
        for r in &manifest.releases {
            let Some(mut s) = Pending::of(r).map_err(VerifyError::from)? else {
                continue;
            };
            for a in &r.assets {
                if s.wants(&a.sha256) && target.have(&a.sha256, a.size) {
                    s.offer(&a.sha256, &target.read_have(&a.sha256)?);
                }
            }
            s.try_verify(trusted).map_err(VerifyError::from)?;
            pending.push(s);
        }
        Ok(Self { pending, trusted })
    }

    /// Whether a check still waits for this blob's bytes.
    pub(crate) fn wants(&self, sha256: &str) -> bool {
        self.pending.iter().any(|s| s.wants(sha256))
    }

    /// Hands over a verified blob's bytes; a check that now has both its
    /// files runs.
    pub(crate) fn offer(&mut self, sha256: &str, bytes: &[u8]) -> Result<(), VerifyError> {
        for s in &mut self.pending {
            s.offer(sha256, bytes);
            s.try_verify(self.trusted)?;
        }
        Ok(())
    }

    /// Once every blob was seen: what each verified signature proved (its
    /// release, the trusted key, what the release lists). A release whose files
    /// are among `elsewhere` (a delta's prerequisites, which `bundle verify`
    /// cannot read) is added to `unchecked`; any other release not proven
    /// refuses the bundle.
    pub(crate) fn settle(
        &self,
        elsewhere: &BTreeSet<&str>,
        unchecked: &mut Vec<String>,
    ) -> Result<Vec<SignedRelease>, VerifyError> {
        let mut out = Vec::new();
        for s in &self.pending {
            match s.proven() {
                Some(p) => out.push(p.clone()),
                None if !elsewhere.is_empty() && s.waits_on(elsewhere) => {
                    unchecked.push(format!(
                        "the signature of release {}: its signature files are prerequisites",
                        shown(&s.release)
                    ));
                }
                None => {
                    return Err(VerifyError::Missing {
                        count: 1,
                        list: format!("the signature files of release {}", s.release),
                    });
                }
            }
        }
        Ok(out)
    }
}
