//! Format 4's supply-chain evidence (issue #33): the bundle's CycloneDX SBOM
//! (a blob like any other, so the manifest's hash and signature cover it),
//! and what each Hugging Face repository's publisher and the Hub said about
//! it at create — the card's `license` tag, the Hub's security scan of each
//! carried file (`securityFileStatus`, as `huggingface_hub`'s
//! `get_paths_info(expand=True)` reads it), and which safetensors or GGUF
//! files the repository has at the same commit (so a refusal of a pickle
//! file can name the variant to carry instead).
//!
//! Invariant: evidence only describes what the manifest carries — every
//! repository entry is a carried (type, id, commit) and every verdict a
//! carried file of it — and a manifest with evidence declares format 4, so a
//! format 3 reader (which refuses fields it does not know) refuses it by its
//! version, with a message that says to upgrade.

use std::collections::BTreeSet;

use serde::{Deserialize, Serialize};

use super::ManifestError;
use super::artifacts::BlobRef;
use super::artifacts::{HfRepo, RepoKind};
use crate::{RepoId, names};

/// The most scan entries, imports or alternatives kept per item: the Hub
/// lists a handful; more is a listing nobody reads, refused.
pub const MAX_EVIDENCE_ITEMS: usize = 1000;

/// The SBOM's file name where it is shown by name (`/-/bundles/<sha>/`).
pub const SBOM_NAME: &str = "sbom.cdx.json";

/// The SBOM's media type (CycloneDX's registration), as served.
pub const SBOM_MEDIA_TYPE: &str = "application/vnd.cyclonedx+json";

/// What the bundle says about where its contents came from.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Evidence {
    /// The CycloneDX 1.6 JSON SBOM (`sbom.cdx.json`), generated from the
    /// manifest: a blob the manifest names.
    pub sbom: BlobRef,
    /// What the Hub said about each carried repository.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub repos: Vec<RepoEvidence>,
    /// Format 7: the publishers' Sigstore signatures over carried
    /// artifacts, and the trusted root they verify against.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub signatures: Option<super::Signatures>,
}

/// What the Hub said about one carried repository at its commit.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct RepoEvidence {
    /// Model or dataset.
    #[serde(rename = "type")]
    pub kind: RepoKind,
    /// `owner/name`, as in `repos`.
    pub id: RepoId,
    /// The commit, as in `repos`.
    pub commit: String,
    /// The card's licence (the `license:` tag of the revision's model
    /// info), when the publisher states one.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub license: Option<String>,
    /// Safetensors and GGUF files of the repository at this commit, carried
    /// or not: what a pickle refusal suggests instead.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub weights_variants: Vec<String>,
    /// The Hub's verdict per carried file; a carried file without one was
    /// given none (never scanned, or an endpoint that does not scan).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub files: Vec<FileScan>,
}

/// The Hub's `securityFileStatus` of one file, as it gave it.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct FileScan {
    /// The file's path in the repository.
    pub path: String,
    /// The overall status (`safe`, `unsafe`, `caution`, `suspicious`,
    /// `unscanned`, `queued`, `error`; kept as given).
    pub status: String,
    /// Each scanner's verdict (`avScan`, `pickleImportScan`, `jFrogScan`,
    /// `protectAiScan`), in that order.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub scans: Vec<ScannerVerdict>,
}

/// One scanner's verdict on a file.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ScannerVerdict {
    /// The Hub's field name for the scanner (`pickleImportScan`).
    pub scanner: String,
    /// Its status, as for [`FileScan::status`].
    pub status: String,
    /// Its message, if it gave one.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub message: Option<String>,
    /// The imports a pickle scan found, with the safety it gave each.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub pickle_imports: Vec<PickleImport>,
}

/// An import a pickle scan found (`torch._utils._rebuild_tensor_v2`).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct PickleImport {
    /// The module.
    pub module: String,
    /// The name imported from it.
    pub name: String,
    /// `innocuous`, `suspicious` or `dangerous`.
    pub safety: String,
}

impl FileScan {
    /// Whether the Hub scanned the file and found it safe: the only status
    /// `scanned-clean` accepts.
    pub fn is_clean(&self) -> bool {
        self.status == "safe"
    }

    /// Whether the Hub never finished a scan of it (as opposed to a scan
    /// that found something).
    pub fn never_scanned(&self) -> bool {
        matches!(self.status.as_str(), "unscanned" | "queued" | "error")
    }
}

impl Evidence {
    /// The evidence of repository (kind, id, commit), if any.
    pub fn repo(&self, kind: RepoKind, id: &str, commit: &str) -> Option<&RepoEvidence> {
        self.repos
            .iter()
            .find(|r| r.kind == kind && r.id.as_str() == id && r.commit == commit)
    }

    /// Sorts every list, as [`super::Manifest::sort`] does for the rest.
    pub fn sort(&mut self) {
        for r in &mut self.repos {
            r.files.sort_by(|a, b| a.path.cmp(&b.path));
            r.weights_variants.sort();
            r.weights_variants.dedup();
        }
        self.repos
            .sort_by(|a, b| (a.kind, &a.id, &a.commit).cmp(&(b.kind, &b.id, &b.commit)));
        if let Some(s) = &mut self.signatures {
            s.sort();
        }
    }

    /// Every entry names a carried repository and file; every string is a
    /// short token or a safe path; nothing is listed twice.
    pub(super) fn validate(&self, repos: &[HfRepo]) -> Result<(), ManifestError> {
        let mut seen = BTreeSet::new();
        for e in &self.repos {
            let who = format!("evidence of {} at {}", e.id, e.commit);
            // One commit may be carried under several revisions, an entry
            // each: the evidence is of the commit, whichever carries a file.
            let carriers: Vec<&HfRepo> = repos
                .iter()
                .filter(|r| r.kind == e.kind && r.id == e.id && r.commit == e.commit)
                .collect();
            if carriers.is_empty() {
                return Err(ManifestError::Inconsistent(format!(
                    "{who}: no such repository is carried"
                )));
            }
            if !seen.insert((e.kind, e.id.as_str(), e.commit.as_str())) {
                return Err(ManifestError::Inconsistent(format!(
                    "{who} is listed twice"
                )));
            }
            if let Some(l) = &e.license {
                check_text(&who, "license", l, 200)?;
            }
            too_many(&who, "weights_variants", e.weights_variants.len())?;
            for v in &e.weights_variants {
                names::check_relative_path("weights variant path", v)?;
            }
            let mut paths = BTreeSet::new();
            for f in &e.files {
                if !carriers
                    .iter()
                    .any(|r| r.files.iter().any(|c| c.path == f.path))
                {
                    return Err(ManifestError::Inconsistent(format!(
                        "{who}: a verdict for {}, which is not carried",
                        crate::shown::shown(&f.path)
                    )));
                }
                if !paths.insert(f.path.as_str()) {
                    return Err(ManifestError::Inconsistent(format!(
                        "{who}: {} has two verdicts",
                        crate::shown::shown(&f.path)
                    )));
                }
                check_token(&who, "status", &f.status)?;
                too_many(&who, "scans", f.scans.len())?;
                for s in &f.scans {
                    check_token(&who, "scanner", &s.scanner)?;
                    check_token(&who, "status", &s.status)?;
                    if let Some(m) = &s.message {
                        check_text(&who, "message", m, 2000)?;
                    }
                    too_many(&who, "pickle_imports", s.pickle_imports.len())?;
                    for i in &s.pickle_imports {
                        check_text(&who, "pickle import module", &i.module, 200)?;
                        check_text(&who, "pickle import name", &i.name, 200)?;
                        check_token(&who, "pickle import safety", &i.safety)?;
                    }
                }
            }
        }
        Ok(())
    }
}

/// A list longer than [`MAX_EVIDENCE_ITEMS`] is refused (verdicts need no
/// bound of their own: one per carried file at most).
fn too_many(who: &str, what: &str, n: usize) -> Result<(), ManifestError> {
    if n > MAX_EVIDENCE_ITEMS {
        return Err(ManifestError::Inconsistent(format!(
            "{who}: {n} {what}; at most {MAX_EVIDENCE_ITEMS} are accepted"
        )));
    }
    Ok(())
}

/// A status or scanner name: an ASCII word of at most 40 characters.
fn check_token(who: &str, what: &str, v: &str) -> Result<(), ManifestError> {
    if v.is_empty() || v.len() > 40 || !v.bytes().all(|b| b.is_ascii_alphanumeric() || b == b'_') {
        return Err(ManifestError::BadValue {
            what: format!("{what} in {who}"),
            expected: "an ASCII word of at most 40 letters, digits or `_`",
            found: v.to_string(),
        });
    }
    Ok(())
}

/// Free text from the Hub: bounded, and no control characters.
fn check_text(who: &str, what: &str, v: &str, max: usize) -> Result<(), ManifestError> {
    if v.len() > max || v.chars().any(char::is_control) {
        return Err(ManifestError::BadValue {
            what: format!("{what} in {who}"),
            expected: "text without control characters",
            found: v.chars().take(200).collect(),
        });
    }
    Ok(())
}

#[cfg(test)]
#[path = "evidence_tests.rs"]
mod tests;
