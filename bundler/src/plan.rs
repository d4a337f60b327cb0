//! What a run will carry, worked out before any large download: the
//! manifest's entries (with every digest the publishers gave), the
//! downloads that fill them, and the gaps.

use std::collections::BTreeMap;
use std::path::PathBuf;

use llmgw_shared::manifest::{Gap, HfRepo, PythonEnv, Release};

use crate::cache::Expect;
use crate::fetch::Download;

#[derive(Debug, Default)]
pub struct Plan {
    pub releases: Vec<Release>,
    /// Files known only by their git blob sha1 have an empty `sha256`
    /// until they are fetched.
    pub repos: Vec<HfRepo>,
    pub gaps: Vec<Gap>,
    /// Python environments, resolved and checked (their files are among
    /// `downloads`, their locks and `.metadata` files among `stored`).
    pub python_envs: Vec<PythonEnv>,
    /// Each distinct content once.
    pub downloads: Vec<Download>,
    index: BTreeMap<Expect, usize>,
    /// Small verified files already put in the cache (llmgw's signed
    /// SHA256SUMS and its signature): sha256 and path.
    pub stored: Vec<(String, PathBuf, u64)>,
}

impl Plan {
    /// Adds a download unless the same content is already planned.
    pub fn download(&mut self, d: Download) {
        if self.index.contains_key(&d.expect) {
            return;
        }
        self.index.insert(d.expect.clone(), self.downloads.len());
        self.downloads.push(d);
    }

    /// Total bytes of the distinct contents planned.
    pub fn total_bytes(&self) -> u64 {
        self.downloads.iter().map(|d| d.size).sum::<u64>()
            + self.stored.iter().map(|s| s.2).sum::<u64>()
    }

    /// Records something not carried.
    pub fn gap(&mut self, what: String, reason: String) {
        self.gaps.push(Gap { what, reason });
    }
}
