//! What a manifest says a bundle holds, summarised for people (`bundle
//! inspect`, `mirror list`) and for machines (`--json`).
//!
//! `inspect` reads only the first entry and checks nothing against a hash
//! or signature: its output is marked UNVERIFIED, because a tampered
//! bundle can claim anything.

use std::fmt::Write as _;
use std::path::Path;

use llmgw_shared::manifest::Manifest;
use llmgw_shared::{BundleId, shown};
use serde::{Deserialize, Serialize};

use crate::bundle::verify::{self, VerifyError};

/// A bundle in brief, from its manifest alone: what `bundle inspect`,
/// `bundle import` and `mirror list` print, as text or (serialized) JSON.
/// Nothing here is verified by making it; only the caller knows whether the
/// manifest was.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Summary {
    /// The bundle's identity: the sha256 of its `manifest.json`.
    pub manifest_sha256: BundleId,
    /// When the bundle says it was made (RFC 3339); shown, never trusted.
    pub created: String,
    /// The llmgw that made it (`llmgw 0.1.0`).
    pub tool: String,
    /// The architectures it was made for.
    pub arches: Vec<String>,
    /// One line per release carried.
    pub releases: Vec<ReleaseSummary>,
    /// One line per model or dataset snapshot carried.
    pub repos: Vec<RepoSummary>,
    /// Format 2: the Python environments, each served as its own index.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub python_envs: Vec<EnvSummary>,
    /// What the bundle lacks, and why (recorded at create).
    pub gaps: Vec<GapSummary>,
    /// Distinct blobs the manifest names.
    pub blobs: usize,
    /// Their bytes.
    pub bytes: u64,
    /// Format 2: a delta or a repair bundle, and what it relies on.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub delta: Option<DeltaSummary>,
    /// Format 4: the sha256 of the CycloneDX SBOM it carries
    /// (`llmgw bundle sbom`).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub sbom: Option<llmgw_shared::Sha256>,
    /// Format 7: each publisher's signature carried, `what: by identity`,
    /// and each artifact let in unsigned, `what: unsigned (allowed by …)`.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub publisher_signatures: Vec<String>,
}

/// What a delta leaves to the store, or what a repair bundle brings.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct DeltaSummary {
    /// Blobs it names and does not carry.
    pub prerequisites: usize,
    pub prerequisite_bytes: u64,
    /// The sha256 of each have-list, base manifest or need-list it was
    /// planned against.
    pub bases: Vec<llmgw_shared::Sha256>,
    /// A repair bundle's blobs (it serves nothing by itself).
    pub repairs: usize,
}

#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct ReleaseSummary {
    pub repo: String,
    pub tag: String,
    pub engine: String,
    pub version: String,
    /// `arch/variant` of each build.
    pub builds: Vec<String>,
    pub assets: usize,
    pub bytes: u64,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub signed_by: Option<String>,
}

#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct RepoSummary {
    #[serde(rename = "type")]
    pub kind: String,
    pub id: String,
    pub revision: String,
    pub commit: String,
    pub files: usize,
    pub bytes: u64,
    /// Format 4: the card's licence, as the Hub gave it.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub license: Option<String>,
    /// Format 4: the Hub's scan verdicts on the files carried.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub scans: Option<ScanSummary>,
}

impl RepoSummary {
    /// Its lines of [`Summary::to_text`]: the snapshot, then what the Hub
    /// said of it (format 4).
    fn write_text(&self, s: &mut String) {
        let _ = writeln!(
            s,
            "  {} {}@{} ({}): {} files, {}",
            self.kind,
            shown(&self.id),
            shown(&self.revision),
            shown(&self.commit),
            self.files,
            human_bytes(self.bytes)
        );
        if let Some(l) = &self.license {
            let _ = writeln!(s, "    license: {}", shown(l));
        }
        if let Some(scans) = &self.scans {
            let _ = writeln!(s, "    {}", scans.to_text());
        }
    }
}

/// The Hub's verdicts on a repository's carried files, recorded at create.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct ScanSummary {
    /// Files the Hub scanned and found safe.
    pub safe: usize,
    /// Files it marked otherwise (`unsafe`, `caution`, `suspicious`): path, status.
    pub flagged: Vec<(String, String)>,
    /// Files it never finished scanning, or gave no verdict for.
    pub unscanned: Vec<String>,
}

impl ScanSummary {
    fn of(
        r: &llmgw_shared::manifest::HfRepo,
        e: Option<&llmgw_shared::manifest::RepoEvidence>,
    ) -> Self {
        let mut s = ScanSummary {
            safe: 0,
            flagged: Vec::new(),
            unscanned: Vec::new(),
        };
        for f in &r.files {
            match e.and_then(|e| e.files.iter().find(|v| v.path == f.path)) {
                Some(v) if v.is_clean() => s.safe += 1,
                Some(v) if !v.never_scanned() => s.flagged.push((f.path.clone(), v.status.clone())),
                _ => s.unscanned.push(f.path.clone()),
            }
        }
        s
    }

    fn to_text(&self) -> String {
        let mut t = format!("Hub scan: {} safe", self.safe);
        if !self.flagged.is_empty() {
            let f: Vec<String> = self
                .flagged
                .iter()
                .map(|(p, st)| format!("{} ({})", shown(p), shown(st)))
                .collect();
            t.push_str(&format!("; flagged: {}", f.join(", ")));
        }
        if !self.unscanned.is_empty() {
            let u: Vec<String> = self
                .unscanned
                .iter()
                .map(|p| shown(p).to_string())
                .collect();
            t.push_str(&format!("; never scanned: {}", u.join(", ")));
        }
        t
    }
}

/// A Python environment: what it is for, its size, and what a node needs
/// besides the wheels.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct EnvSummary {
    pub name: String,
    pub arch: String,
    pub python: String,
    pub platform: String,
    /// Wheels (their `.metadata` files not counted).
    pub files: usize,
    /// Wheels and `.metadata` files.
    pub bytes: u64,
    pub os_packages: Vec<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub interpreter: Option<String>,
    /// `none` when the nodes bring their own CPython by the bundle's choice.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub node_interpreter: Option<llmgw_shared::manifest::NodeInterpreter>,
    /// The operator's overrides of upstream pins.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub overrides: Vec<String>,
    /// The operator's constraints.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub constraints: Vec<String>,
}

impl EnvSummary {
    pub fn of(env: &llmgw_shared::manifest::PythonEnv) -> Self {
        Self {
            name: env.name.clone(),
            arch: env.arch.clone(),
            python: env.python.clone(),
            platform: env.platform.clone(),
            files: env.files.len(),
            bytes: env
                .files
                .iter()
                .map(|f| f.size + f.metadata.as_ref().map_or(0, |m| m.size))
                .sum(),
            os_packages: env.os_packages.clone(),
            interpreter: env.interpreter.as_ref().map(|i| i.name.clone()),
            node_interpreter: env.node_interpreter,
            overrides: env.overrides.clone(),
            constraints: env.constraints.clone(),
        }
    }
}

impl EnvSummary {
    /// Its lines of [`Summary::to_text`]: the environment, then the
    /// operator's choices (interpreter, overrides, constraints) when made.
    fn write_text(&self, s: &mut String) {
        let e = self;
        let _ = writeln!(
            s,
            "  python env {} ({}, python {}, {}): {} files, {}; nodes need OS packages: {}",
            shown(&e.name),
            shown(&e.arch),
            shown(&e.python),
            shown(&e.platform),
            e.files,
            human_bytes(e.bytes),
            if e.os_packages.is_empty() {
                "none".to_string()
            } else {
                list_shown(&e.os_packages)
            }
        );
        if let Some(n) = e.node_interpreter {
            let _ = writeln!(s, "    interpreter: {}", shown(&n.describe(&e.python)));
        }
        for (what, reqs) in [("overrides", &e.overrides), ("constraints", &e.constraints)] {
            if !reqs.is_empty() {
                let _ = writeln!(s, "    {what} (the operator's): {}", list_shown(reqs));
            }
        }
    }
}

/// Items through [`shown`], comma-separated.
fn list_shown(items: &[impl AsRef<str>]) -> String {
    items
        .iter()
        .map(|i| shown(i.as_ref()).to_string())
        .collect::<Vec<_>>()
        .join(", ")
}

#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct GapSummary {
    pub what: String,
    pub reason: String,
}

impl Summary {
    /// The summary of manifest `m`, whose sha256 is `manifest_sha256`.
    pub fn of(manifest_sha256: &BundleId, m: &Manifest) -> Self {
        Self {
            manifest_sha256: manifest_sha256.clone(),
            created: m.created.clone(),
            tool: m.tool.clone(),
            arches: m.arches.clone(),
            releases: m
                .releases
                .iter()
                .map(|r| ReleaseSummary {
                    repo: r.repo.to_string(),
                    tag: r.tag.clone(),
                    engine: r.engine.clone(),
                    version: r.version.clone(),
                    builds: r
                        .builds
                        .iter()
                        .map(|b| format!("{}/{}", b.arch, b.variant))
                        .collect(),
                    assets: r.assets.len(),
                    bytes: r.assets.iter().map(|a| a.size).sum(),
                    signed_by: r.signature.as_ref().map(|s| s.key_id.clone()),
                })
                .collect(),
            repos: m
                .repos
                .iter()
                .map(|r| {
                    let e = m
                        .evidence
                        .as_ref()
                        .and_then(|e| e.repo(r.kind, r.id.as_str(), &r.commit));
                    RepoSummary {
                        kind: format!("{:?}", r.kind).to_lowercase(),
                        id: r.id.to_string(),
                        revision: r.revision.clone(),
                        commit: r.commit.clone(),
                        files: r.files.len(),
                        bytes: r.files.iter().map(|f| f.size).sum(),
                        license: e.and_then(|e| e.license.clone()),
                        scans: m.evidence.is_some().then(|| ScanSummary::of(r, e)),
                    }
                })
                .collect(),
            python_envs: m.python_envs.iter().map(EnvSummary::of).collect(),
            gaps: m
                .gaps
                .iter()
                .map(|g| GapSummary {
                    what: g.what.clone(),
                    reason: g.reason.clone(),
                })
                .collect(),
            blobs: m.blobs().len(),
            bytes: m.total_bytes(),
            delta: m.delta.as_ref().map(|d| DeltaSummary {
                prerequisites: d.prerequisites.len(),
                prerequisite_bytes: d.prerequisites.iter().map(|p| p.size).sum(),
                bases: d.bases.clone(),
                repairs: d.repairs.len(),
            }),
            sbom: m.evidence.as_ref().map(|e| e.sbom.sha256.clone()),
            publisher_signatures: publisher_lines(m),
        }
    }

    /// A readable multi-line description. Every string from the manifest
    /// is printed through [`shown`]: escaped and cut short, since a
    /// manifest can claim anything (this text is printed before or without
    /// any check).
    pub fn to_text(&self) -> String {
        fn list(items: &[impl AsRef<str>]) -> String {
            items
                .iter()
                .map(|i| shown(i.as_ref()).to_string())
                .collect::<Vec<_>>()
                .join(", ")
        }
        let mut s = String::new();
        let _ = writeln!(s, "bundle {}", self.manifest_sha256);
        let _ = writeln!(
            s,
            "  created {} by {}",
            shown(&self.created),
            shown(&self.tool)
        );
        let _ = writeln!(s, "  arches: {}", list(&self.arches));
        let _ = writeln!(
            s,
            "  {} blobs, {} bytes ({})",
            self.blobs,
            self.bytes,
            human_bytes(self.bytes)
        );
        for r in &self.releases {
            let _ = writeln!(
                s,
                "  release {} {} ({} {}): {} assets, {}{}",
                shown(&r.repo),
                shown(&r.tag),
                shown(&r.engine),
                shown(&r.version),
                r.assets,
                human_bytes(r.bytes),
                r.signed_by
                    .as_ref()
                    .map(|k| format!(", checksums signed by key {}", shown(k)))
                    .unwrap_or_default()
            );
            if !r.builds.is_empty() {
                let _ = writeln!(s, "    builds: {}", list(&r.builds));
            }
        }
        for r in &self.repos {
            r.write_text(&mut s);
        }
        for e in &self.python_envs {
            e.write_text(&mut s);
        }
        if let Some(sbom) = &self.sbom {
            let _ = writeln!(
                s,
                "  SBOM: CycloneDX 1.6, blob {sbom} (`llmgw bundle sbom`)"
            );
        }
        for p in &self.publisher_signatures {
            let _ = writeln!(s, "  publisher signature: {}", llmgw_shared::shown(p));
        }
        for g in &self.gaps {
            // The reason is the operator's instruction: whole (escaped).
            let reason = llmgw_shared::shown_message(&g.reason);
            let _ = writeln!(s, "  gap: {} ({reason})", shown(&g.what));
        }
        if let Some(d) = &self.delta {
            let bases = if d.bases.is_empty() {
                String::new()
            } else {
                format!(", planned against {}", list(&d.bases))
            };
            if d.repairs > 0 {
                let _ = writeln!(
                    s,
                    "  repair bundle: {} blobs for another bundle; it serves nothing by itself{bases}",
                    d.repairs
                );
            } else {
                let _ = writeln!(
                    s,
                    "  delta: relies on the store holding {} more blobs ({}), not carried{bases}",
                    d.prerequisites,
                    human_bytes(d.prerequisite_bytes)
                );
            }
        }
        s
    }
}

/// `1.50 GiB`: the formatting the progress lines and the bundler's
/// messages use too.
pub use llmgw_shared::progress::human_bytes;

/// Reads a bundle's manifest without verifying anything.
pub fn inspect(bundle: &Path) -> Result<Summary, VerifyError> {
    let bytes = verify::read_manifest_unverified(bundle)?;
    let sha = BundleId::of(&bytes);
    let m = Manifest::from_json_bytes(&bytes)?;
    Ok(Summary::of(&sha, &m))
}

/// One line per publisher's signature (and unsigned artifact) `m` carries.
fn publisher_lines(m: &Manifest) -> Vec<String> {
    let Some(sigs) = m.evidence.as_ref().and_then(|e| e.signatures.as_ref()) else {
        return Vec::new();
    };
    let signed = sigs.signed.iter().map(|s| {
        let by = s
            .admitted_by
            .map(|p| format!(", admitted by {p}"))
            .unwrap_or_default();
        format!(
            "{}: by {} (issued by {}, signed {}{by})",
            s.what, s.identity, s.issuer, s.signed_at
        )
    });
    let unsigned = sigs
        .unsigned
        .iter()
        .map(|u| format!("{}: unsigned (allowed by {})", u.what, u.allowed_by));
    signed.chain(unsigned).collect()
}
