//! The part of CycloneDX 1.6's JSON form a bundle's SBOM uses, as serde
//! types: written here rather than taken from the `cyclonedx-bom` crate,
//! whose newest release (0.8.1) writes specification 1.5 at most. Each type
//! follows `bom-1.6.schema.json`; the tests validate every SBOM a bundle
//! carries against that schema with CycloneDX's own Python library
//! (`cyclonedx-python-lib`, `JsonStrictValidator(SchemaVersion.V1_6)`) and
//! read it back with it.
//!
//! Invariant: the fields serialise in declaration order and every list is
//! built in a fixed order, so the same manifest gives the same bytes.

use serde::Serialize;

/// `bomFormat`, always `CycloneDX`.
pub const BOM_FORMAT: &str = "CycloneDX";
/// `specVersion`.
pub const SPEC_VERSION: &str = "1.6";

/// The document.
#[derive(Debug, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct Bom {
    pub bom_format: &'static str,
    pub spec_version: &'static str,
    /// `urn:uuid:` and a name-based UUID made from the manifest.
    pub serial_number: String,
    pub version: u32,
    pub metadata: Metadata,
    pub components: Vec<Component>,
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub dependencies: Vec<Dependency>,
}

/// Who made it. No `timestamp`: the manifest's `created` says when, and a
/// resumed run that keeps an earlier run's time must still give the same
/// SBOM bytes.
#[derive(Debug, Serialize)]
pub struct Metadata {
    pub tools: Tools,
    pub properties: Vec<Property>,
}

/// `metadata.tools` in the 1.5+ form: the tools as components.
#[derive(Debug, Serialize)]
pub struct Tools {
    pub components: Vec<Component>,
}

/// A component: a grouping (a repository at a commit, a release, an
/// environment, an image) or one blob.
#[derive(Debug, Clone, Serialize)]
pub struct Component {
    #[serde(rename = "type")]
    pub kind: &'static str,
    #[serde(rename = "bom-ref", skip_serializing_if = "Option::is_none")]
    pub bom_ref: Option<String>,
    pub name: String,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub version: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub description: Option<String>,
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub hashes: Vec<Hash>,
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub licenses: Vec<Licence>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub purl: Option<String>,
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub properties: Vec<Property>,
}

/// A hash; only `SHA-256` is written.
#[derive(Debug, Clone, Serialize)]
pub struct Hash {
    pub alg: &'static str,
    pub content: String,
}

/// A licence as its publisher stated it: an SPDX expression (a wheel's
/// `License-Expression`) or a name (anything else; the schema checks an
/// `id` against SPDX's list, a name it takes as text).
#[derive(Debug, Clone, Serialize)]
#[serde(untagged)]
pub enum Licence {
    Expression { expression: String },
    Named { license: LicenceName },
}

/// `{"name": …}` of a licence.
#[derive(Debug, Clone, Serialize)]
pub struct LicenceName {
    pub name: String,
}

/// A name/value pair; names are `llmgw:`-prefixed.
#[derive(Debug, Clone, Serialize)]
pub struct Property {
    pub name: String,
    pub value: String,
}

/// A grouping and the blobs it holds.
#[derive(Debug, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct Dependency {
    #[serde(rename = "ref")]
    pub reference: String,
    pub depends_on: Vec<String>,
}

impl Property {
    /// `llmgw:{name}` = `value`.
    pub fn new(name: &str, value: impl Into<String>) -> Self {
        Self {
            name: format!("llmgw:{name}"),
            value: value.into(),
        }
    }
}

impl Hash {
    /// The SHA-256 of a blob.
    pub fn sha256(hex: &str) -> Self {
        Self {
            alg: "SHA-256",
            content: hex.to_string(),
        }
    }
}
