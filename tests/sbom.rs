//! Supply-chain evidence across the gap (issue #33): the CycloneDX SBOM
//! every bundle carries (checked with CycloneDX's own Python library), the
//! Hub's scan verdicts the fixture answers in the real shape, and the
//! store's model-file policy at import.

#[path = "sbom/kit.rs"]
mod kit;

#[path = "sbom/document.rs"]
mod document;
#[path = "sbom/hub_scans.rs"]
mod hub_scans;
#[path = "sbom/policy.rs"]
mod policy;
#[path = "sbom/referrer.rs"]
mod referrer;
