//! Supply-chain evidence across the gap (issue #33): the CycloneDX SBOM
//! every bundle carries (checked with CycloneDX's own Python library), the
//! Hub's scan verdicts the fixture answers in the real shape, and the
//! store's model-file policy at import (pickles found by content: `pickles`).

mod kit;

mod document;
mod hub_scans;
mod pickles;
mod policy;
mod referrer;
