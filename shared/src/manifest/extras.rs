//! A manifest's runtime extras (format 4, issue #32): the files an engine
//! fetches when it runs (gpt-oss's BPE encodings), each named by its
//! upstream's host and path so the mirror serves it under
//! `/extras/<host>/<path>` with the upstream's layout kept.
//!
//! Invariant: an extra is a blob like any other — named by its sha256,
//! claimed with one size across the manifest, and carrying the publisher's
//! digest the bundler checked (the one its client pins) — and its host and
//! path are checked names, so neither can become a path outside its place.

use std::collections::BTreeSet;

use serde::{Deserialize, Serialize};

use super::artifacts::PublisherDigest;
use super::claims::Claims;
use super::digests::check_digests;
use super::{FORMAT_EVIDENCE, ManifestError};
use crate::{Sha256, names};

/// One file an engine fetches at run time, carried.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Extra {
    /// The host it is published on, lower case:
    /// `openaipublic.blob.core.windows.net`.
    pub host: String,
    /// Its path on that host, no leading `/`.
    pub path: String,
    /// Its length in bytes, checked when it is fetched and imported.
    pub size: u64,
    /// sha256 of the bytes: the blob's name.
    pub sha256: Sha256,
    /// The digest its client pins, checked against the bytes.
    pub publisher_digests: Vec<PublisherDigest>,
    /// The engines that fetch it (`vllm`, `sglang`), sorted.
    pub engines: Vec<String>,
}

/// How a gap for one runtime extra left out begins its `what`:
/// `runtime extra HOST/PATH`, as the bundler labels its download and its gap.
pub const EXTRA_GAP_PREFIX: &str = "runtime extra ";

/// How a gap for FlashInfer's CuTe DSL FMHA kernels ends its `what`
/// (`NAME: FlashInfer V CuTe DSL FMHA kernels`): runtime extras whose files
/// are known only from a checksum file that was not fetched.
pub const DSL_GAP_SUFFIX: &str = " CuTe DSL FMHA kernels";

/// For a gap's `what` naming one runtime extra file, its `(host, path)`.
pub fn extra_gap_file(what: &str) -> Option<(&str, &str)> {
    what.strip_prefix(EXTRA_GAP_PREFIX)?.split_once('/')
}

impl super::Gap {
    /// Whether this gap is a runtime extra left out: one file
    /// ([`EXTRA_GAP_PREFIX`]) or the DSL kernels of a FlashInfer release
    /// ([`DSL_GAP_SUFFIX`]).
    pub fn is_runtime_extra(&self) -> bool {
        self.what.starts_with(EXTRA_GAP_PREFIX) || self.what.ends_with(DSL_GAP_SUFFIX)
    }
}

/// Whether `host` is a DNS name as URLs spell it: lower-case letters,
/// digits, `-` and `.`, at most 253 characters, no empty label.
pub fn is_extra_host(host: &str) -> bool {
    !host.is_empty()
        && host.len() <= 253
        && host.split('.').all(|l| {
            !l.is_empty()
                && l.len() <= 63
                && l.bytes()
                    .all(|b| b.is_ascii_lowercase() || b.is_ascii_digit() || b == b'-')
        })
}

/// Checks every extra's names, digests and sizes; extras need format 4
/// (a format 3 reader refuses the field unnamed).
pub(super) fn validate_extras(
    format: u32,
    extras: &[Extra],
    claims: &mut Claims,
) -> Result<(), ManifestError> {
    if !extras.is_empty() && format < FORMAT_EVIDENCE {
        return Err(ManifestError::Inconsistent(format!(
            "it says format {format} but carries runtime extras, which need format \
             {FORMAT_EVIDENCE}"
        )));
    }
    let mut seen = BTreeSet::new();
    for e in extras {
        if !is_extra_host(&e.host) {
            return Err(ManifestError::BadValue {
                what: "host of a runtime extra".to_string(),
                expected: "a lower-case DNS name",
                found: e.host.clone(),
            });
        }
        names::check_relative_path("runtime extra path", &e.path)?;
        for engine in &e.engines {
            names::check_file_name("engine", engine)?;
        }
        let who = format!("runtime extra {}/{}", e.host, e.path);
        if !seen.insert((&e.host, &e.path)) {
            return Err(ManifestError::Inconsistent(format!(
                "{who} is listed twice"
            )));
        }
        check_digests(&who, &e.publisher_digests, &e.sha256, None)?;
        claims.claim(&e.sha256, e.size, who)?;
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::manifest::DigestSource;

    fn extra(host: &str, path: &str, bytes: &[u8]) -> Extra {
        let sha256 = Sha256::of(bytes);
        Extra {
            host: host.into(),
            path: path.into(),
            size: bytes.len() as u64,
            publisher_digests: vec![PublisherDigest {
                source: DigestSource::ClientPinnedSha256,
                value: sha256.to_string(),
            }],
            sha256,
            engines: vec!["vllm".into()],
        }
    }

    #[test]
    fn names_digests_and_format_are_checked() {
        let ok = extra("example.org", "encodings/a.tiktoken", b"a");
        assert!(validate_extras(4, std::slice::from_ref(&ok), &mut Claims::default()).is_ok());
        let err = |e: Extra, format| {
            validate_extras(format, &[e], &mut Claims::default())
                .unwrap_err()
                .to_string()
        };
        assert!(err(ok.clone(), 3).contains("need format 4"));
        assert!(err(extra("Ex ample", "a", b"a"), 4).contains("lower-case DNS name"));
        assert!(err(extra("example.org", "../a", b"a"), 4).contains("manifest.json"));
        let mut lying = ok.clone();
        lying.publisher_digests[0].value = Sha256::of(b"b").to_string();
        assert!(err(lying, 4).contains("runtime extra example.org/encodings/a.tiktoken"));
        let twice = validate_extras(4, &[ok.clone(), ok], &mut Claims::default());
        assert!(twice.unwrap_err().to_string().contains("listed twice"));
    }

    #[test]
    fn a_gap_names_its_runtime_extra_file() {
        let host = "openaipublic.blob.core.windows.net";
        assert_eq!(
            extra_gap_file(&format!("{EXTRA_GAP_PREFIX}{host}/encodings/a.tiktoken")),
            Some((host, "encodings/a.tiktoken"))
        );
        assert_eq!(
            extra_gap_file("vllm-amd64: FlashInfer 0.6.13 CuTe DSL FMHA kernels"),
            None
        );
        assert_eq!(
            extra_gap_file("ggml-org/llama.cpp b6123 llama.tar.gz"),
            None
        );
    }
}
