//! Deltas and repair bundles on the connected side: `--have have.json`
//! and `--base OLD-MANIFEST.json` (carry only what the site lacks), and
//! `--need need.json` (carry exactly what an import found missing).
//!
//! Invariants: a delta's manifest is the whole plan — every release,
//! environment and model file asked for — and only what it carries
//! changes: a blob is left out (and becomes a `delta.prerequisites` entry)
//! only when a have-list or base manifest names it with the same sha256
//! *and* size. A repair bundle names nothing to serve (`delta.repairs`
//! only) and carries exactly the need-list's blobs, each one a blob of
//! this run's plan; a need-list naming anything else is refused, so no
//! unverified byte is carried. The lists are untrusted: they only decide
//! what is left out, never what a name means.

use std::collections::BTreeMap;
use std::io::Read;
use std::path::{Path, PathBuf};

use llmgw_shared::manifest::{BlobRef, Delta, MAX_MANIFEST_BYTES, Manifest};
use llmgw_shared::shown;
use llmgw_shared::{HaveList, HeldSeries, MAX_LIST_BYTES, NeedList, Sha256};

use crate::cache::Expect;
use crate::error::{CreateError, ListError, RequestError, SeriesError};
use crate::plan::Plan;

/// `--have`, `--base`, `--need` (flags only, like the series flags).
#[derive(Debug, Default, Clone, PartialEq, Eq)]
pub struct DeltaSpec {
    /// Have-lists (`mirror have --out`): blobs a site holds are left out.
    pub have: Vec<PathBuf>,
    /// Manifests of bundles a site holds: their blobs are left out too.
    pub base: Vec<PathBuf>,
    /// A need-list (`bundle import --need-out`): make a repair bundle of
    /// exactly its blobs; refused together with `have` or `base`.
    pub need: Option<PathBuf>,
}

/// What the lists say, read and checked.
#[derive(Debug, Clone, Default)]
pub enum Delivery {
    /// Carry everything.
    #[default]
    Full,
    /// Carry what the site lacks.
    Delta {
        /// sha256 -> size of every blob the lists name.
        held: BTreeMap<Sha256, u64>,
        /// The sha256 of each list's file, for `delta.bases`.
        bases: Vec<Sha256>,
        /// The signed series the site follows (from have-lists).
        series: Vec<HeldSeries>,
    },
    /// Carry exactly what an import found missing.
    Repair { need: NeedList, sha256: Sha256 },
}

impl DeltaSpec {
    /// Reads every list (bounded) and checks it. A wrong file is a usage
    /// error naming it.
    pub fn load(&self) -> Result<Delivery, CreateError> {
        if let Some(path) = &self.need {
            if !self.have.is_empty() || !self.base.is_empty() {
                return Err(RequestError::NeedWithDelta.into());
            }
            let bytes = read_list(path, MAX_LIST_BYTES)?;
            let need = NeedList::from_json_bytes(&bytes)
                .map_err(|e| bad_list(path, "a need-list (`bundle import --need-out`)", e))?;
            let sha256 = Sha256::of(&bytes);
            return Ok(Delivery::Repair { need, sha256 });
        }
        if self.have.is_empty() && self.base.is_empty() {
            return Ok(Delivery::Full);
        }
        let mut held = BTreeMap::new();
        let mut bases = Vec::new();
        let mut series = Vec::new();
        for path in &self.have {
            let bytes = read_list(path, MAX_LIST_BYTES)?;
            let list = HaveList::from_json_bytes(&bytes)
                .map_err(|e| bad_list(path, "a have-list (`llmgw mirror have`)", e))?;
            held.extend(list.blob_map());
            series.extend(list.series);
            bases.push(Sha256::of(&bytes));
        }
        for path in &self.base {
            let bytes = read_list(path, MAX_MANIFEST_BYTES)?;
            let m = Manifest::from_json_bytes(&bytes)
                .map_err(|e| bad_list(path, "a bundle manifest (manifest.json)", e))?;
            held.extend(m.blobs());
            bases.push(Sha256::of(&bytes));
        }
        Ok(Delivery::Delta {
            held,
            bases,
            series,
        })
    }
}

impl Delivery {
    /// Refuses, before anything is fetched, a signed delta the site would
    /// refuse as a rollback or equivocation: its have-list says the site
    /// is at this sequence (or a higher one) of the same key and channel.
    pub fn check_series(
        &self,
        key_id: &str,
        channel: &str,
        sequence: u64,
    ) -> Result<(), CreateError> {
        let Delivery::Delta { series, .. } = self else {
            return Ok(());
        };
        let held = series
            .iter()
            .filter(|s| s.key_id.eq_ignore_ascii_case(key_id) && s.channel == channel)
            .map(|s| s.sequence)
            .max();
        match held {
            Some(held) if held >= sequence => Err(SeriesError::Rollback {
                held,
                key_id: key_id.to_string(),
                channel: channel.to_string(),
                sequence,
            }
            .into()),
            _ => Ok(()),
        }
    }

    /// Whether a planned download (by what it is expected to hash to) is
    /// left out before anything is fetched. Files known only by their git
    /// blob sha1 are always fetched: their sha256 is learnt from the bytes.
    pub fn skips(&self, expect: &Expect, size: u64) -> bool {
        let Expect::Sha256(sha) = expect else {
            return false;
        };
        match self {
            Delivery::Full => false,
            Delivery::Delta { held, .. } => held.get(sha) == Some(&size),
            Delivery::Repair { need, .. } => !need.blobs.iter().any(|b| &b.sha256 == sha),
        }
    }

    /// Drops the downloads this run will not carry from `plan`.
    pub fn trim(&self, plan: &mut Plan) {
        plan.downloads.retain(|d| !self.skips(&d.expect, d.size));
        plan.stored
            .retain(|s| !self.skips(&Expect::Sha256(s.sha256.clone()), s.size));
    }

    /// The manifest this run writes, from the whole plan's manifest: the
    /// same with `delta` for a delta; for a repair, one that names the
    /// needed blobs only.
    pub fn apply(&self, m: Manifest) -> Result<Manifest, CreateError> {
        match self {
            Delivery::Full => Ok(m),
            Delivery::Delta { held, bases, .. } => {
                let mut m = m;
                let prerequisites = m
                    .blobs()
                    .into_iter()
                    .filter(|(sha, size)| held.get(sha) == Some(size))
                    .map(|(sha256, size)| BlobRef { sha256, size })
                    .collect();
                let mut delta = Delta {
                    prerequisites,
                    bases: bases.clone(),
                    repairs: Vec::new(),
                };
                // The manifest is sorted (create builds it so): only what
                // is added here is.
                delta.sort();
                m.delta = Some(delta);
                m.validate()?;
                Ok(m)
            }
            Delivery::Repair { need, sha256 } => {
                let planned = m.blobs();
                let absent: Vec<String> = need
                    .blobs
                    .iter()
                    .filter(|b| planned.get(&b.sha256) != Some(&b.size))
                    .map(|b| {
                        let uses: Vec<String> =
                            b.uses.iter().map(|u| shown(u).to_string()).collect();
                        format!("{} ({} bytes; {})", b.sha256, b.size, uses.join(", "))
                    })
                    .collect();
                if !absent.is_empty() {
                    return Err(ListError::NeedNotRequested {
                        absent,
                        bundle: need.bundle.to_string(),
                    }
                    .into());
                }
                let mut r = Manifest::new(m.arches.clone(), 0);
                r.created = m.created.clone();
                r.channel = m.channel.clone();
                r.sequence = m.sequence;
                r.expires = m.expires.clone();
                let mut delta = Delta {
                    prerequisites: Vec::new(),
                    bases: vec![sha256.clone()],
                    repairs: need.blobs.clone(),
                };
                delta.sort();
                r.delta = Some(delta);
                r.validate()?;
                Ok(r)
            }
        }
    }
}

fn bad_list(
    path: &Path,
    what: &'static str,
    e: impl std::error::Error + Send + Sync + 'static,
) -> CreateError {
    CreateError::NotAList {
        path: path.to_path_buf(),
        what,
        error: Box::new(e),
    }
}

/// Reads at most `max` bytes of `path`; a longer file is refused.
fn read_list(path: &Path, max: u64) -> Result<Vec<u8>, CreateError> {
    let f = std::fs::File::open(path).map_err(|error| CreateError::ListUnreadable {
        path: path.to_path_buf(),
        error,
    })?;
    let mut bytes = Vec::new();
    f.take(max + 1)
        .read_to_end(&mut bytes)
        .map_err(|e| CreateError::io(path, e))?;
    if bytes.len() as u64 > max {
        return Err(ListError::TooLarge {
            path: path.to_path_buf(),
            max,
        }
        .into());
    }
    Ok(bytes)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_delta_the_site_would_refuse_as_a_rollback_is_refused_first() {
        let d = Delivery::Delta {
            held: BTreeMap::new(),
            bases: vec![],
            series: vec![HeldSeries {
                key_id: "ABCDEF0123456789".into(),
                channel: "stable".into(),
                sequence: 7,
                manifest_sha256: "a".repeat(64).parse().unwrap(),
            }],
        };
        let err = d
            .check_series("abcdef0123456789", "stable", 7)
            .unwrap_err()
            .to_string();
        assert!(
            err.contains("sequence 7") && err.contains("--sequence 8"),
            "{err}"
        );
        assert!(d.check_series("ABCDEF0123456789", "stable", 8).is_ok());
        assert!(d.check_series("ABCDEF0123456789", "beta", 1).is_ok());
        assert!(Delivery::Full.check_series("X", "stable", 1).is_ok());
    }

    #[test]
    fn lists_decide_what_is_skipped_by_sha256_and_size() {
        let sha: Sha256 = "b".repeat(64).parse().unwrap();
        let d = Delivery::Delta {
            held: BTreeMap::from([(sha.clone(), 5)]),
            bases: vec![],
            series: vec![],
        };
        assert!(d.skips(&Expect::Sha256(sha.clone()), 5));
        assert!(
            !d.skips(&Expect::Sha256(sha.clone()), 6),
            "another size is other content"
        );
        assert!(!d.skips(&Expect::GitBlobSha1("c".repeat(40).parse().unwrap()), 5));
        assert!(!Delivery::Full.skips(&Expect::Sha256(sha), 5));
    }

    /// A list that cannot be read, or is not a list, is a usage error
    /// (exit code 2) naming the file, with the cause after it, once.
    #[test]
    fn a_wrong_list_is_a_usage_error_naming_it() {
        let dir = tempfile::tempdir().unwrap();
        let missing = dir.path().join("none.json");
        let load = |p: &Path| {
            DeltaSpec {
                have: vec![p.to_path_buf()],
                ..DeltaSpec::default()
            }
            .load()
            .unwrap_err()
        };
        let e = load(&missing);
        assert!(e.is_usage());
        let text = llmgw_shared::chain(&e);
        let want = format!("{}: cannot read it: ", missing.display());
        assert!(text.starts_with(&want), "{text}");
        let junk = dir.path().join("junk.json");
        std::fs::write(&junk, b"{}").unwrap();
        let e = load(&junk);
        assert!(e.is_usage());
        let text = llmgw_shared::chain(&e);
        let want = format!(
            "{}: expected a have-list (`llmgw mirror have`): ",
            junk.display()
        );
        assert!(text.starts_with(&want), "{text}");
    }
}
